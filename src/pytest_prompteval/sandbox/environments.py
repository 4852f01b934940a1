"""Repository environments: one virtual environment per distinct spec, built on the host
before any model call, reused by every item, sample, xdist worker and later run.

An environment is keyed by what decides it (the interpreter's path and version, the
requirements, the ``pythonpath`` folders) and lives under the cache folder (ini
``prompteval_environments_cache``; default the user's cache folder), never in the project.
It is built once under a file lock (two xdist workers never build the same one), from
wheels only (``--only-binary :all:``: no package's build script runs on the host), with
the wheelhouse folders as ``--find-links`` and pip's own configuration for the index; once
built it needs no network. The sandbox shows it read-only at its own path; its ``python``
sees the standard library and the environment's packages, never the plugin's.

A spec that does not list ``pytest`` gets the plugin's own pytest and its dependencies,
copied from the installed distributions (no network): a case with no ``environment`` at
all runs that way, so its tests see pytest and nothing else of the plugin's packages.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_prompteval.core.errors import PromptevalError, display
from pytest_prompteval.core.filelock import lock_exclusive
from pytest_prompteval.sandbox.isolation import SITE_VARIABLE, within

if TYPE_CHECKING:
    from importlib.metadata import Distribution

    from pytest_prompteval.core.envspec import EnvironmentSpec

#: Bumped when the layout of a built environment changes: older ones are not reused.
FORMAT = 2
MANIFEST = "prompteval-environment.json"
#: The cache's folder of the repositories' collected test ids (scoring/repoids.py).
COLLECTED = "collected"
#: How long pip may take for one environment.
BUILD_TIMEOUT = 1800.0
_PROBE = (
    "import json, sys, sysconfig; print(json.dumps([sys.version, "
    "'%d.%d' % sys.version_info[:2], [sys.base_prefix, sys.base_exec_prefix, "
    "sysconfig.get_paths()['stdlib']], sys.executable]))"
)


class EnvironmentBuildError(PromptevalError):
    """An environment that cannot be built: names the case's file and line of
    ``environment`` and quotes pip's own message."""


@dataclass(frozen=True)
class Interpreter:
    executable: str
    version: str
    #: ``X.Y``
    tag: str
    #: host folders its standard library needs (shown in the sandbox)
    prefixes: tuple[str, ...]


@dataclass(frozen=True)
class Environment:
    """A built environment: ``path`` the venv, shown read-only at that path."""

    path: Path
    key: str
    python: Interpreter
    #: a case's own (its pytest plugins load); False: the plugin's pytest alone
    declared: bool = True

    @property
    def bin(self) -> Path:
        return self.path / "bin"

    def shown(self) -> tuple[str, ...]:
        """What the sandbox must show besides the environment: its interpreter's prefixes."""
        return tuple(os.path.realpath(p) for p in self.python.prefixes if os.path.isdir(p))


def default_cache() -> Path:
    """The user's cache folder (``$XDG_CACHE_HOME`` or ``~/.cache``); for a user without a
    home of their own (``nobody``), a folder of the temporary folder only they can write."""
    home = os.path.expanduser("~")
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(home, ".cache")
    if os.environ.get("XDG_CACHE_HOME") or os.access(home, os.W_OK):
        return Path(base) / "prompteval" / "environments"
    private = Path(tempfile.gettempdir()) / f"prompteval-environments-{os.geteuid()}"
    try:
        private.mkdir(mode=0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        raise EnvironmentBuildError(f"no cache folder for environments: {exc}") from None
    found = private.lstat()
    if not stat.S_ISDIR(found.st_mode) or found.st_uid != os.geteuid() or found.st_mode & 0o077:
        raise EnvironmentBuildError(
            f"{private}: not a private folder of this user, so not used as the environments' "
            "cache; set ini prompteval_environments_cache"
        )
    return private


def _host_environment() -> dict[str, str]:
    """What a build's programs see of ours: everything but the API's key and address."""
    return {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC")}


@functools.cache
def interpreter(python: str | None, project: Path | None = None) -> Interpreter:
    """The interpreter ``python`` names on PATH (default: the one running pytest), asked
    for its version and prefixes; one inside ``project`` is refused (the pull request's
    own program would run on the host)."""
    if python is None:  # the running one: nothing to start
        paths = (sys.base_prefix, sys.base_exec_prefix, sysconfig.get_paths()["stdlib"])
        tag = f"{sys.version_info[0]}.{sys.version_info[1]}"
        return Interpreter(os.path.realpath(sys.executable), sys.version, tag, paths)
    found = shutil.which(python)
    if not found:
        raise EnvironmentBuildError(f"python {python!r}: no such interpreter on PATH")
    real = os.path.realpath(found)
    if project is not None and within(real, os.path.realpath(project)):
        raise EnvironmentBuildError(
            f"python {python!r} is {real}, inside the project: name an interpreter installed "
            "on the machine"
        )
    try:
        done = subprocess.run(
            [found, "-I", "-c", _PROBE],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            env=_host_environment(),
        )
        version, tag, prefixes, executable = json.loads(done.stdout)
    except (OSError, ValueError, subprocess.TimeoutExpired):
        why = f"python {python or found!r}: does not run as Python 3"
        raise EnvironmentBuildError(why) from None
    return Interpreter(os.path.realpath(executable), version, tag, tuple(prefixes))


def _requirement_name(requirement: str) -> str:
    return re.split(r"[\s\[(<>=!~;]", requirement, maxsplit=1)[0].lower().replace("_", "-")


@functools.cache  # a walk through every installed distribution's metadata: once a process
def _host_pytest() -> tuple[Distribution, ...]:
    """The plugin's pytest and every distribution it needs here, by name."""
    import importlib.metadata  # only where environments are built

    found: dict[str, Distribution] = {}
    todo = ["pytest"]
    while todo:
        name = todo.pop()
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue  # a dependency this interpreter does not need (markers)
        key = dist.metadata["Name"].lower().replace("_", "-")
        if key in found:
            continue
        found[key] = dist
        for requirement in dist.requires or ():
            head, _, marker = requirement.partition(";")
            if "extra" in marker:
                continue
            todo.append(_requirement_name(head))
    return tuple(found[k] for k in sorted(found))


@functools.cache  # each name and version is a read and parse of the distribution's metadata
def _host_pytest_versions() -> tuple[str, ...]:
    return tuple(f"{d.metadata['Name']}=={d.version}" for d in _host_pytest())


def _copies_pytest(spec: EnvironmentSpec | None) -> bool:
    return spec is None or "pytest" not in map(_requirement_name, spec.requirements)


def _fields(spec: EnvironmentSpec | None) -> dict[str, Any]:
    return (
        spec.key_fields()
        if spec is not None
        else {"python": None, "requirements": [], "pythonpath": []}
    )


def key_of(spec: EnvironmentSpec | None, project: Path | None = None) -> tuple[str, Interpreter]:
    """The environment's key: its spec, the interpreter's path and version, the copied
    pytest's distributions."""
    try:
        python = interpreter(spec.python if spec is not None else None, project)
    except EnvironmentBuildError as exc:
        raise _fail(spec, exc.message) from None
    copied = list(_host_pytest_versions()) if _copies_pytest(spec) else []
    data = {
        "format": FORMAT,
        **_fields(spec),
        "python": [python.executable, python.version],
        "copied": copied,
    }
    digest = hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()
    return digest[:32], python


def _where(spec: EnvironmentSpec | None) -> tuple[Path | None, int | None]:
    return (spec.path, spec.line) if spec is not None else (None, None)


def _fail(spec: EnvironmentSpec | None, message: str) -> EnvironmentBuildError:
    if spec is None:
        return EnvironmentBuildError(f"the plugin's own environment: {message}")
    where = f"{spec.owner}: environment: "
    return EnvironmentBuildError(where + message, spec.path, spec.line)


def site_packages(folder: Path, python: Interpreter) -> Path:
    return folder / "lib" / f"python{python.tag}" / "site-packages"


def _run(argv: Sequence[str], spec: EnvironmentSpec | None, what: str) -> None:
    try:
        done = subprocess.run(
            list(argv),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=BUILD_TIMEOUT,
            check=False,
            env=_host_environment(),
        )
    except subprocess.TimeoutExpired:
        raise _fail(spec, f"{what} took more than {BUILD_TIMEOUT:g} s") from None
    if done.returncode != 0:
        said = [line for line in (done.stderr or done.stdout).splitlines() if line.strip()]
        errors = [line for line in said if "ERROR" in line] or said[-3:]
        raise _fail(spec, f"{what} failed: " + " | ".join(e.strip() for e in errors[-4:]))


def _copy_host_pytest(site: Path) -> None:
    for dist in _host_pytest():
        for name in dist.files or ():
            parts = Path(name).parts
            if ".." in parts or "__pycache__" in parts or Path(name).is_absolute():
                continue  # scripts outside the site folder; bytecode is made again
            source = Path(str(dist.locate_file(name)))
            if source.is_file():
                target = site / name
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, target)


def _build(
    spec: EnvironmentSpec | None, python: Interpreter, folder: Path, wheelhouse: Sequence[Path]
) -> None:
    _run([python.executable, "-m", "venv", "--without-pip", str(folder)], spec, "python -m venv")
    site = site_packages(folder, python)
    requirements = spec.requirements if spec is not None else ()
    if requirements:
        pip = [
            sys.executable, "-m", "pip", "--python", str(folder / "bin" / "python"), "install",
            "--only-binary", ":all:", "--no-input", "--disable-pip-version-check",
            "--no-warn-script-location",
        ]  # fmt: skip
        for house in wheelhouse:
            pip += ["--find-links", str(house)]
        _run([*pip, *requirements], spec, "pip install")
    if _copies_pytest(spec):
        _copy_host_pytest(site)
    folders = [f"/repo/{p}" for p in (spec.pythonpath if spec is not None else ())]
    # first on the path, as an editable install of the repository would be: the
    # repository's own package wins over one of the same name pytest brought in
    lines = [f"import sys; sys.path[:0] = {folders!r}"] if folders else []
    lines.append(
        f"import os, site; _ = os.environ.get({SITE_VARIABLE!r}); _ and site.addsitedir(_)"
    )
    (site / "_prompteval.pth").write_text("\n".join(lines) + "\n")
    # the sandbox shows it read-only and writes no bytecode: compiled once here, or every
    # pytest there compiles its modules again (without site: no package's .pth runs here)
    compile_all = [python.executable, "-I", "-S", "-m", "compileall", "-q", "-j", "0"]
    _run([*compile_all, str(site)], spec, "compiling the environment")


def _packages(site: Path) -> list[str]:
    names = []
    for info in sorted(site.glob("*.dist-info")):
        name, _, version = info.name[: -len(".dist-info")].partition("-")
        names.append(f"{name}=={version}")
    return names


def _manifest(folder: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((folder / MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("format") == FORMAT else None


def ensure(
    spec: EnvironmentSpec | None,
    cache: Path,
    wheelhouse: Sequence[Path] = (),
    progress: Callable[[str], None] | None = None,
    project: Path | None = None,
) -> Environment:
    """The environment of ``spec`` (None: the plugin's interpreter with its pytest),
    built now unless the cache holds it; its interpreter never one inside ``project``.
    Raises EnvironmentBuildError naming the case."""
    key, python = key_of(spec, project)
    folder = cache / key
    found = Environment(folder, key, python, spec is not None)
    if _manifest(folder) is not None:
        return found
    try:
        cache.mkdir(parents=True, exist_ok=True)
        with open(cache / f"{key}.lock", "a+") as lock:
            lock_exclusive(lock, "building repository environments")
            if _manifest(folder) is not None:  # another process built it meanwhile
                return found
            if folder.exists():  # a build that ended part-way
                shutil.rmtree(folder)
            if progress is not None:
                path, line = _where(spec)
                what = f" for {display(path, line)}" if path is not None else ""
                listed = ", ".join(spec.requirements) if spec and spec.requirements else "pytest"
                progress(
                    f"prompteval: building environment {key[:12]}{what} "
                    f"(python {python.tag}; {listed}) in {cache}"
                )
            try:
                _build(spec, python, folder, wheelhouse)
            except BaseException:
                shutil.rmtree(folder, ignore_errors=True)
                raise
            manifest = {
                "format": FORMAT,
                "key": key,
                "spec": _fields(spec),
                "python": python.version.split()[0],
                "executable": python.executable,
                "packages": _packages(site_packages(folder, python)),
                "built": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            }
            written = folder / f"{MANIFEST}.tmp"
            written.write_text(json.dumps(manifest, indent=1))
            written.replace(folder / MANIFEST)
    except OSError as exc:
        where = "ini prompteval_environments_cache or PROMPTEVAL_ENVIRONMENTS_CACHE"
        raise _fail(spec, f"cannot build in {cache} (the cache's folder: {where}): {exc}") from None
    return found


@dataclass(frozen=True)
class Built:
    """A cached environment as ``prompteval envs list`` shows it."""

    key: str
    path: Path
    python: str
    packages: tuple[str, ...]
    built: str
    size: int


def _size(folder: Path) -> int:
    total = 0
    for top, _, names in os.walk(folder):
        for name in names:
            try:
                total += os.lstat(os.path.join(top, name)).st_size
            except OSError:
                continue
    return total


def cached(cache: Path) -> list[Built]:
    """The environments the cache holds, by key."""
    found = []
    folders = sorted(p for p in cache.iterdir() if p.is_dir()) if cache.is_dir() else []
    for folder in folders:
        data = _manifest(folder)
        if data is not None:
            found.append(
                Built(
                    folder.name,
                    folder,
                    str(data.get("python")),
                    tuple(map(str, data.get("packages", ()))),
                    str(data.get("built")),
                    _size(folder),
                )
            )
    return found


def prune(cache: Path, keep: Iterable[str]) -> list[Path]:
    """Remove every environment of the cache (and any part-built one) not in ``keep``, and
    the repositories' collected test ids (collected again when next needed)."""
    kept = set(keep)
    removed = []
    collected = cache / COLLECTED
    if collected.is_dir() and not collected.is_symlink():
        shutil.rmtree(collected)
        removed.append(collected)
    for path in sorted(cache.iterdir()) if cache.is_dir() else []:
        name = path.name.split(".", 1)[0]
        if name in kept or not re.fullmatch(r"[0-9a-f]{32}", name):
            continue
        with open(cache / f"{name}.lock", "a+") as lock:
            lock_exclusive(lock, "pruning repository environments")
            if path.is_dir():
                shutil.rmtree(path)
                removed.append(path)
        if path.suffix == ".lock":
            path.unlink(missing_ok=True)
    return removed
