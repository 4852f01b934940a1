"""The verdict's test files and test infrastructure, as the case author left them: restored
in ``/repo`` from the snapshot at ``/base`` (removed where the snapshot lacks them), in the
verdict's sandbox, after the agent's diff was taken and before its test patch applies.

- ``named``: the files the test patch and the listed tests name (with the ``__init__.py``
  of their folders) and the test folders that hold them (``tests/``: its helpers and data
  decide too), restored whatever the agent did to them.
- Test infrastructure, found anywhere in either tree: ``conftest.py``, pytest's own ini
  files (``pytest.ini``, ``.pytest.ini``, ``pytest.toml``, ``.pytest.toml``),
  ``sitecustomize.py``/``usercustomize.py``, ``*.pth``, and sourceless ``*.pyc``. Files
  that hold more than pytest's settings (``tox.ini``, ``setup.cfg``, ``pyproject.toml``)
  are restored whole only when pytest's section differs, read by pytest's own parsers
  (an honest fix elsewhere in ``pyproject.toml`` stays), or does not parse.
- The repository's modules the snapshot's conftest.py files or listed tests load as
  plugins (``pytest_plugins = ["pkg.testing.plugin"]``) and its settings with ``-p`` in
  ``addopts``, at the top or under ``src/``.
- Modules that would shadow the test runner: at the top of ``/repo`` and in the folders of
  the listed tests (both come first on ``sys.path``), ``pytest``, ``_pytest``, ``pluggy``
  and ``py`` whenever changed, and any other module the agent added whose name the
  standard library or an installed package already has (``inspect.py``, ``pluggy/``).

Each infrastructure path the agent changed is returned unless the case allows it
(``agent_may_change``): the first few, cut short, and a count. Caches are restored without
a word: ``__pycache__`` (a forged entry would stand for a restored source) and
``.pytest_cache`` (``--lf``, ``--sw``); so is every ``.git`` folder (the verdict's diff
never shows one: what the tests could import from it would be seen nowhere).
Nothing runs concurrently here (the agent's processes are gone), so paths are checked with
``lstat`` and never followed. The agent chose the copy's size: a walk stops past
``MAX_ENTRIES`` or at a path past ``PATH_MAX`` (the copy is refused, the agent fails), files
are compared in chunks, and the paths the case lets it change are moved aside, not copied.
``entries`` and ``remove`` are iterative: an agent's tree may be deeper than the recursion
limit.
"""

from __future__ import annotations

import ast
import importlib
import importlib.machinery
import itertools
import os
import shlex
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterable, Iterator
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
#: Entries (files, links and folders) a walk of a tree lists; the diff compares as many
#: (``treediff``). The snapshot holds no more (``trees``): past them the copy is the
#: agent's doing, and is refused (the tests are not run, the agent fails), never walked
#: past the time the verdict waits (which would make its failure an error).
MAX_ENTRIES = 100_000
#: How many of the restored paths the answer names, and how much of each (the agent chose
#: how many there are and how long: past the sandbox's answer bound the verdict would err).
NAMED, NAME_SHOWN = 20, 200
CHUNK = 1 << 16
#: A mixed settings file larger than this is compared whole, never parsed.
MAX_SETTINGS = 1 << 20


#: Bytes of a path the system takes (its NUL included): past them no call reaches a file.
PATH_MAX = 4096


class CopyRefused(Exception):
    """A tree past a walk's bounds (entries, a path's length): the copy is refused, why in
    the message."""


def _kind(path: str) -> str | None:
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    return "link" if stat.S_ISLNK(mode) else "dir" if stat.S_ISDIR(mode) else "file"


def read_only(path: str) -> int:
    """``path`` opened to read, never through a link, never waiting (a FIFO)."""
    return os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)


def _read(path: str) -> bytes | None:
    try:
        with open(read_only(path), "rb") as file:
            return file.read()
    except OSError:
        return None


def same_bytes(old: str, new: str) -> bool:
    """Whether two files hold the same bytes, read in chunks (never whole: the agent
    chose their size)."""
    with open(read_only(old), "rb") as a, open(read_only(new), "rb") as b:
        while True:
            left, right = a.read(CHUNK), b.read(CHUNK)
            if left != right:
                return False
            if not left:
                return True


def entries(
    top: str, skip: str = "", open_up: bool = False, limit: int = MAX_ENTRIES
) -> Iterator[tuple[str, str | None]]:
    """(path relative to ``top``, kind) of everything below it, a folder before what it
    holds; links are not followed, folders named ``skip`` not entered. Iterative (an
    agent's tree may be deeper than Python's recursion limit) and, with ``open_up``, each
    folder made its owner's to list and change first (an agent may close its folders).
    Past ``limit`` entries, CopyRefused: no more names are held at once (a folder may
    hold millions); so is a path past ``PATH_MAX``, which no call could reach."""
    stack = [""]
    count = 0
    while stack:
        rel = stack.pop()
        folder = os.path.join(top, rel) if rel else top
        if open_up:
            writable(folder)
        try:
            with os.scandir(folder) as found:
                names = list(itertools.islice((e.name for e in found), limit - count + 1))
        except OSError:
            continue
        count += len(names)
        if count > limit:
            raise CopyRefused(
                f"{top} holds more than {limit:,} entries (files and folders): no more are "
                "walked to restore the test files"
            )
        for name in sorted(names, reverse=True):
            path = f"{rel}/{name}" if rel else name
            if len(os.fsencode(os.path.join(top, path))) >= PATH_MAX:
                raise CopyRefused(
                    f"{top} holds a path longer than {PATH_MAX - 1:,} bytes "
                    f"({named_briefly([path])[0]}): the test files cannot be restored past it"
                )
            kind = _kind(os.path.join(top, path))
            yield path, kind
            if kind == "dir" and name != skip:
                stack.append(path)


def _signature(path: str, kind: str | None) -> object:
    """All of an entry but a file's bytes: its kind, a link's target, a file's type,
    executable bit and size."""
    if kind == "link":
        return kind, os.readlink(path)
    if kind == "file":
        info = os.lstat(path)
        return kind, stat.S_IFMT(info.st_mode), info.st_mode & stat.S_IXUSR, info.st_size
    return kind


def _same_files(old: str, new: str) -> bool:
    try:
        return same_bytes(old, new)
    except OSError:  # one the agent made unreadable: restored
        return False


def _same(old: str, new: str) -> bool:
    """Whether ``new`` is ``old``: kind, link target, bytes and executable bit, and for a
    folder every entry. Bytes are compared in chunks, and only once all else matches: the
    files of a folder the agent changed may be many, and large."""
    kinds = _kind(old), _kind(new)
    if kinds[0] != kinds[1] or _signature(old, kinds[0]) != _signature(new, kinds[1]):
        return False
    if kinds[0] != "dir":
        return kinds[0] != "file" or _same_files(old, new)
    trees = [
        {rel: _signature(os.path.join(top, rel), kind) for rel, kind in entries(top, "", up)}
        for top, up in ((old, False), (new, True))
    ]
    return trees[0] == trees[1] and all(
        _same_files(os.path.join(old, rel), os.path.join(new, rel))
        for rel, signature in trees[0].items()
        if isinstance(signature, tuple) and signature[0] == "file"
    )


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


#: The TOML parser: tomli, pytest's own dependency before 3.11.
TOML = "tomllib" if sys.version_info >= (3, 11) else "tomli"
#: The settings files' parsers, which the verdict's server loads before it isolates itself.
PARSERS = ("iniconfig", TOML)


def _toml(text: str) -> dict[str, Any]:
    parser = importlib.import_module(TOML)
    data = parser.loads(text)
    return data if isinstance(data, dict) else {}


def _differs(rel: str) -> bool:
    old, new = os.path.join(BASE, rel), os.path.join(REPO, rel)
    name = os.path.basename(rel)
    # parsed only when small files: the agent chose the size (compared whole past it)
    small = all(_kind(p) is None or _size(p) <= MAX_SETTINGS for p in (old, new))
    if (name in SECTIONS or name == PYPROJECT) and small:
        return _section(old, name) != _section(new, name)
    return not _same(old, new)


def _size(path: str) -> int:
    """A file's size; a folder or link counts as too large to parse."""
    info = os.lstat(path)
    return info.st_size if stat.S_ISREG(info.st_mode) else MAX_SETTINGS + 1


def writable(folder: str) -> None:
    mode = os.lstat(folder).st_mode
    if stat.S_ISDIR(mode) and mode & stat.S_IRWXU != stat.S_IRWXU:
        os.chmod(folder, mode | stat.S_IRWXU)


def remove(path: str) -> None:
    """Remove ``path``, a folder with all it holds (opened up first), never through a link."""
    kind = _kind(path)
    if kind == "dir":
        inside = list(entries(path, open_up=True))
        for rel, inner in reversed(inside):  # what a folder holds goes before it
            (os.rmdir if inner == "dir" else os.unlink)(os.path.join(path, rel))
        os.rmdir(path)
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
                remove(new)  # nothing to restore below: whatever the agent put there goes
                return
            remove(new)
            os.mkdir(new, 0o755)
        writable(new)
    remove(os.path.join(REPO, rel))
    _copy(os.path.join(BASE, rel), os.path.join(REPO, rel))


def _walk(top: str, limit: int) -> list[str]:
    """Every path below ``top`` but folders (links to them included), ``.git`` aside; in
    /repo each ``.git`` folder becomes the snapshot's (gone where it has none): the
    verdict's diff never shows one, so nothing in it may reach the tests."""
    found = []
    for rel, kind in list(entries(top, ".git", top == REPO, limit)):
        if kind != "dir":
            found.append(rel)
        elif top == REPO and rel.rpartition("/")[2] == ".git":
            _put(rel)
    return found


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
        suffixes = importlib.machinery.all_suffixes()  # an extension module's too
        found = any(os.path.exists(os.path.join(path, f"__init__{s}")) for s in suffixes)
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


def _plugin_names(rel: str) -> list[str]:
    """The modules a snapshot's Python file names in ``pytest_plugins`` (a string, or a
    list or tuple of them, assigned at its top)."""
    data = _read(os.path.join(BASE, rel))
    try:
        body = ast.parse(data or b"").body
    except (SyntaxError, ValueError):
        return []
    names: list[str] = []
    for node in body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "pytest_plugins" for t in node.targets
        ):
            values = node.value.elts if isinstance(node.value, ast.List | ast.Tuple) else []
            for value in values or [node.value]:
                if isinstance(value, ast.Constant) and isinstance(value.value, str):
                    names.append(value.value)
    return names


def _option_names(rel: str) -> list[str]:
    """The modules a snapshot's settings file loads with ``-p`` in pytest's ``addopts``."""
    try:
        text = (_read(os.path.join(BASE, rel)) or b"").decode()
        found = _addopts(rel, text)
        values = [v for f in found for v in (f if isinstance(f, list) else [f])]
        words = [w for v in values if isinstance(v, str) for w in shlex.split(v)]
    except Exception:  # a file that does not parse loads nothing (and is restored whole)
        return []
    return _plugin_options(words)


def _plugin_options(words: list[str]) -> list[str]:
    """The modules ``-p NAME`` and ``-pNAME`` load (not ``-p no:NAME``)."""
    names = [b for a, b in itertools.pairwise(words) if a == "-p"]
    names += [w[2:] for w in words if w.startswith("-p") and len(w) > 2]
    return [n for n in names if not n.startswith("no:")]


def _addopts(rel: str, text: str) -> list[Any]:
    """The ``addopts`` values of a settings file's pytest sections, as they stand."""
    name = rel.rpartition("/")[2]
    if name.endswith(".toml"):
        table = _toml(text)
        tool = (table.get("tool", {}) if name == PYPROJECT else table).get("pytest", {})
        return [tool.get("addopts"), tool.get("ini_options", {}).get("addopts")]
    import iniconfig

    parsed = iniconfig.IniConfig(rel, text)
    return [parsed[s].get("addopts") for s in ("pytest", "tool:pytest") if s in parsed]


def _plugins(files: Iterable[str]) -> list[str]:
    """The repository's modules that the snapshot's ``files`` load as pytest plugins (its
    conftest.py files and listed tests by ``pytest_plugins``, its settings files by ``-p``
    in ``addopts``): test infrastructure as much as a conftest.py. Found at the top or
    under ``src/``."""
    names = set()
    for rel in files:
        names.update(_plugin_names(rel) if rel.endswith(".py") else _option_names(rel))
    found = []
    for name in names:
        module = name.replace(".", "/")
        for rel in (f"{module}.py", f"{module}/__init__.py"):
            for path in (rel, f"src/{rel}"):
                if _kind(os.path.join(BASE, path)) == "file":
                    found.append(path)
    return sorted(found)


def _real_folders(rel: str) -> bool:
    """Whether every folder on the way to ``/repo/rel`` is one, not a link."""
    parts = rel.split("/")[:-1]
    return all(
        _kind(os.path.join(REPO, *parts[:depth])) == "dir" for depth in range(1, len(parts) + 1)
    )


def _copy(source: str, target: str) -> None:
    """``target`` (not there) becomes a copy of ``source``: link, file or folder."""
    kind = _kind(source)
    if kind == "link":
        os.symlink(os.readlink(source), target)
    elif kind == "dir":
        shutil.copytree(source, target, symlinks=True)
    elif kind == "file":
        executable = os.lstat(source).st_mode & stat.S_IXUSR
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o755 if executable else 0o644)
        with open(fd, "wb") as file, open(read_only(source), "rb") as data:
            shutil.copyfileobj(data, file)


def restore(
    named: list[str], folders: list[str], allowed: list[str], limit: int = MAX_ENTRIES
) -> dict[str, Any]:
    """Restore ``named`` and the test infrastructure (``folders``: where a module would
    shadow the runner); the infrastructure paths the agent changed, bar ``allowed`` (kept
    as the agent left them, even inside a restored test folder). A tree of more than
    ``limit`` entries, or with a path past ``PATH_MAX``, is ``refused``, why in a
    sentence: the verdict runs no test."""
    for rel in (*named, *folders, *allowed):  # checked by the case's parser already
        parts = rel.split("/")
        if rel.startswith("/") or {"", ".", "..", ".git"} & {*parts}:
            raise ValueError(f"not a path inside the repository: {rel!r}")
    try:
        return _restore(named, folders, allowed, limit)
    except CopyRefused as exc:
        return {"refused": str(exc)}


def _restore(
    named: list[str], folders: list[str], allowed: list[str], limit: int
) -> dict[str, Any]:
    found = [p for top in (BASE, REPO) for p in _walk(top, limit)]  # /repo's opened up
    changed = _changed(found, named, folders, allowed)
    # moved aside within the copy, never copied: the agent chose their size (the sandbox's
    # /tmp is 64 MiB); a folder before what it holds, which moves with it
    kept = tempfile.mkdtemp(prefix=".agent-may-change-", dir=REPO)
    moved = _move_aside(allowed, kept)
    for rel in named:
        if not _same(os.path.join(BASE, rel), os.path.join(REPO, rel)):
            _put(rel)
    for rel in sorted({c for c in map(_cache, found) if c is not None}):
        if _differs(rel):
            _put(rel)
    for rel in changed:
        if _differs(rel):  # not restored with a test folder already
            _put(rel)
    _move_back(moved, kept)
    return {"restored": named_briefly(changed)}


def _changed(
    found: list[str], named: list[str], folders: list[str], allowed: list[str]
) -> list[str]:
    """The test infrastructure, shadowing modules and plugins the agent changed (not those
    it may change)."""
    infrastructure = {p for p in found if _cache(p) is None and _infrastructure(p)}
    loading = [p for p in infrastructure if not p.endswith((*SUFFIXES, "customize.py"))]
    plugins = _plugins([*loading, *named])
    candidates = sorted(infrastructure) + _shadowing(["", *folders]) + plugins
    return [p for p in dict.fromkeys(candidates) if p not in allowed and _differs(p)]


def _move_aside(allowed: list[str], kept: str) -> list[str]:
    """The paths the agent may change that are there, moved into ``kept`` (numbered)."""
    moved: list[str] = []
    for rel in sorted(allowed):
        if _real_folders(rel) and _kind(os.path.join(REPO, rel)) is not None:
            os.rename(os.path.join(REPO, rel), os.path.join(kept, str(len(moved))))
            moved.append(rel)
    return moved


def _move_back(moved: list[str], kept: str) -> None:
    for at, rel in enumerate(moved):
        _put(rel)  # its folders as the snapshot has them, then the agent's version
        remove(os.path.join(REPO, rel))
        os.rename(os.path.join(kept, str(at)), os.path.join(REPO, rel))
    os.rmdir(kept)


def named_briefly(paths: list[str]) -> list[str]:
    """The first ``NAMED`` of ``paths``, each cut at ``NAME_SHOWN``, and how many more."""
    shown = [p if len(p) <= NAME_SHOWN else p[:NAME_SHOWN] + "..." for p in paths[:NAMED]]
    more = len(paths) - NAMED
    return shown + ([f"and {more:,} more"] if more > 0 else [])
