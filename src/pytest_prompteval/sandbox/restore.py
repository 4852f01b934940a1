"""The verdict's test files and test infrastructure, as the case author left them: restored
in ``/repo`` from the snapshot at ``/base`` (removed where the snapshot lacks them), in the
verdict's sandbox, after the agent's diff was taken and before its test patch applies.

- ``named``: the files the test patch and the listed tests name (with the ``__init__.py``
  of their folders), restored whatever the agent did to them.
- Test infrastructure, found anywhere in either tree: ``conftest.py``, pytest's own ini
  files (``pytest.ini``, ``.pytest.ini``, ``pytest.toml``, ``.pytest.toml``),
  ``sitecustomize.py``/``usercustomize.py``, ``*.pth``, and sourceless ``*.pyc``. Files
  that hold more than pytest's settings (``tox.ini``, ``setup.cfg``, ``pyproject.toml``)
  are restored whole only when pytest's section differs, read by pytest's own parsers
  (an honest fix elsewhere in ``pyproject.toml`` stays), or does not parse.
- Modules that would shadow the test runner: at the top of ``/repo`` and in the folders of
  the listed tests (both come first on ``sys.path``), ``pytest``, ``_pytest``, ``pluggy``
  and ``py`` whenever changed, and any other module the agent added whose name the
  standard library or an installed package already has (``inspect.py``, ``pluggy/``).

Each infrastructure path the agent changed is returned unless the case allows it
(``agent_may_change``). Caches are restored without a word: ``__pycache__`` (a forged
entry would stand for a restored source) and ``.pytest_cache`` (``--lf``, ``--sw``).
Nothing runs concurrently here (the agent's processes are gone), so paths are checked with
``lstat`` and never followed.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import os
import shutil
import stat
import sys
from collections.abc import Iterable
from typing import Any

BASE, REPO = "/base", "/repo"
#: Files that are pytest's settings or start-up, wherever they are.
INFRASTRUCTURE = frozenset(
    {
        "conftest.py",
        "pytest.ini",
        ".pytest.ini",
        "pytest.toml",
        ".pytest.toml",
        "sitecustomize.py",
        "usercustomize.py",
    }
)
#: Files that hold pytest's settings among others, with the sections pytest reads.
SECTIONS = {"tox.ini": ("pytest",), "setup.cfg": ("tool:pytest", "pytest")}
PYPROJECT = "pyproject.toml"
SUFFIXES = (".pth", ".pyc", ".pyo")
CACHES = ("__pycache__", ".pytest_cache")
#: The test runner's own modules: restored whenever changed.
RUNNER = frozenset({"pytest", "_pytest", "pluggy", "py"})


def _kind(path: str) -> str | None:
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    return "link" if stat.S_ISLNK(mode) else "dir" if stat.S_ISDIR(mode) else "file"


def _read(path: str) -> bytes | None:
    try:
        with open(os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK), "rb") as file:
            return file.read()
    except OSError:
        return None


def _same(old: str, new: str) -> bool:
    """Whether ``new`` is ``old`` (kind, link target, bytes, executable bit, and for a
    folder every entry)."""
    kind = _kind(old)
    if kind != _kind(new):
        return False
    if kind == "link":
        return os.readlink(old) == os.readlink(new)
    if kind == "file":
        executable = (os.lstat(old).st_mode ^ os.lstat(new).st_mode) & stat.S_IXUSR
        return not executable and _read(old) == _read(new)
    if kind == "dir":
        try:
            names = sorted(os.listdir(old)), sorted(os.listdir(new))
        except OSError:
            return False
        return names[0] == names[1] and all(
            _same(os.path.join(old, n), os.path.join(new, n)) for n in names[0]
        )
    return True


def _section(path: str, name: str) -> object:
    """What pytest reads of a mixed settings file: its section(s), or a marker when the
    file does not parse (then it is restored)."""
    data = _read(path)
    if data is None:
        return None
    try:
        if name == PYPROJECT:
            return _toml(data.decode()).get("tool", {}).get("pytest")
        import iniconfig

        parsed = iniconfig.IniConfig(path, data.decode())
        return [(s, dict(parsed[s].items())) for s in SECTIONS[name] if s in parsed]
    except Exception:  # any way the file fails to parse: pytest would fail on it too
        return ("unparsable", data)


def _toml(text: str) -> dict[str, Any]:
    # tomli: pytest's own dependency before 3.11
    parser = importlib.import_module("tomllib" if sys.version_info >= (3, 11) else "tomli")
    data = parser.loads(text)
    return data if isinstance(data, dict) else {}


def _differs(rel: str) -> bool:
    old, new = os.path.join(BASE, rel), os.path.join(REPO, rel)
    name = os.path.basename(rel)
    mixed = name in SECTIONS or name == PYPROJECT
    if mixed and _kind(old) in ("file", None) and _kind(new) in ("file", None):
        return _section(old, name) != _section(new, name)
    return not _same(old, new)


def _writable(folder: str) -> None:
    mode = os.lstat(folder).st_mode
    if mode & stat.S_IRWXU != stat.S_IRWXU:
        os.chmod(folder, mode | stat.S_IRWXU)


def _remove(path: str) -> None:
    kind = _kind(path)
    if kind == "dir":
        for folder, dirs, _ in os.walk(path):  # top-down: a folder opens before it is listed
            _writable(folder)
            for name in dirs:
                inner = os.path.join(folder, name)
                if _kind(inner) == "dir":
                    _writable(inner)
        shutil.rmtree(path)
    elif kind is not None:
        os.unlink(path)


def _put(rel: str) -> None:
    """``/repo/rel`` becomes the snapshot's ``rel`` (gone where the snapshot lacks it); the
    folders on the way become real folders (a link or a file the agent put there goes)."""
    parts = rel.split("/")
    for depth in range(1, len(parts)):
        sub = "/".join(parts[:depth])
        old, new = os.path.join(BASE, sub), os.path.join(REPO, sub)
        if _kind(old) == "link":  # the snapshot's own link: restored, and no further
            _put(sub)
            return
        if _kind(new) != "dir":
            if _kind(old) is None and _kind(os.path.join(BASE, rel)) is None:
                _remove(new)  # nothing to restore below: whatever the agent put there goes
                return
            _remove(new)
            os.mkdir(new, 0o755)
        _writable(new)
    old, new = os.path.join(BASE, rel), os.path.join(REPO, rel)
    _remove(new)
    kind = _kind(old)
    if kind == "link":
        os.symlink(os.readlink(old), new)
    elif kind == "dir":
        shutil.copytree(old, new, symlinks=True)
    elif kind == "file":
        data = _read(old) or b""
        executable = os.lstat(old).st_mode & stat.S_IXUSR
        fd = os.open(new, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o755 if executable else 0o644)
        with open(fd, "wb") as file:
            file.write(data)


def _walk(top: str) -> Iterable[str]:
    """Every path below ``top`` (links and files; folders not followed), ``.git`` aside."""
    for folder, dirs, names in os.walk(top):
        dirs[:] = [d for d in dirs if d != ".git"]
        rel = os.path.relpath(folder, top)
        for name in (*names, *(d for d in dirs if _kind(os.path.join(folder, d)) == "link")):
            yield name if rel == "." else f"{rel}/{name}"


def _cache(rel: str) -> str | None:
    """The cache folder ``rel`` is in, if any."""
    parts = rel.split("/")
    for at, part in enumerate(parts):
        if part in CACHES:
            return "/".join(parts[: at + 1])
    return None


def _infrastructure(rel: str) -> bool:
    name = rel.rpartition("/")[2]
    return (
        name in INFRASTRUCTURE or name in SECTIONS or name == PYPROJECT or name.endswith(SUFFIXES)
    )


def _module(name: str, folder: str) -> str | None:
    """The module a folder entry would be imported as, if any."""
    path = os.path.join(folder, name)
    if _kind(path) == "dir" or (_kind(path) == "link" and os.path.isdir(path)):
        found = any(os.path.exists(os.path.join(path, f"__init__{s}")) for s in (".py", ".pyc"))
        return name if found else None
    for suffix in importlib.machinery.all_suffixes():
        if name.endswith(suffix) and name[: -len(suffix)].isidentifier():
            return name[: -len(suffix)]
    return None


def _importable(module: str) -> bool:
    """Whether ``module`` is the standard library's or an installed package's."""
    if module in sys.stdlib_module_names or module in sys.builtin_module_names:
        return True
    outside = [p for p in sys.path if p and not p.startswith((REPO, BASE))]
    return importlib.machinery.PathFinder.find_spec(module, outside) is not None


def _shadowing(folders: Iterable[str]) -> list[str]:
    """Entries of ``folders`` (relative, "" the top) that would shadow the test runner."""
    found = []
    for rel in folders:
        names: set[str] = set()
        for top in (BASE, REPO):
            folder = os.path.join(top, rel)
            if _kind(folder) == "dir":
                names.update(os.listdir(folder))
        for name in sorted(names):
            path = f"{rel}/{name}" if rel else name
            module = _module(name, os.path.join(REPO, rel)) or _module(
                name, os.path.join(BASE, rel)
            )
            if module is None:
                continue
            added = _kind(os.path.join(BASE, path)) is None
            if module in RUNNER or (added and _importable(module)):
                found.append(path)
    return found


def restore(named: list[str], folders: list[str], allowed: list[str]) -> dict[str, Any]:
    """Restore ``named`` and the test infrastructure (``folders``: where a module would
    shadow the runner); the infrastructure paths the agent changed, bar ``allowed``."""
    for rel in named:
        _put(rel)
    found = [p for top in (BASE, REPO) for p in _walk(top)]
    for rel in sorted({c for c in map(_cache, found) if c is not None}):
        if _differs(rel):
            _put(rel)
    done, changed = set(named), []
    infrastructure = {p for p in found if _cache(p) is None and _infrastructure(p)}
    for rel in sorted(infrastructure) + _shadowing(["", *folders]):
        if rel in done or rel in allowed or not _differs(rel):
            continue
        done.add(rel)
        _put(rel)
        changed.append(rel)
    return {"restored": changed}
