"""A snapshot's copy written on the host, one folder at a time and never through a link,
and a copy removed whatever the agent left in it.

The copy is written by pytest's user from entries a hostile clone or pull request chose. A
git tree can list ``x -> /`` and then ``x/etc/...`` (a name twice, or a name holding ``/``),
hide ``..`` or ``.git`` in a name, hold a blob of 512 MiB of zeros that packs into half a
megabyte, or reuse one small tree a thousand times a thousand times. So each path is checked
against the ones before it (``Names``: each folder listed before what it holds, no path
through a file or link, none twice), every entry is made with ``openat`` below folder
descriptors opened ``O_NOFOLLOW`` (``Writer``: never a link, ours or planted), contents
stream in chunks, and entries, depth, names and sizes are bounded. Folders are walked with
an explicit stack, never recursion, and a copy that fails half-way is removed.
"""

from __future__ import annotations

import contextlib
import os
import stat
import subprocess
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, NoReturn

from pytest_prompteval.core.errors import PromptevalError
from pytest_prompteval.core.gitversions import GitRefError, Repository

#: One snapshot's bounds: well above a project an agent is asked to fix (the Linux kernel,
#: some 90,000 files and over 1 GiB, passes MAX_TOTAL).
MAX_ENTRIES = 100_000  # files, links, folders and submodules
MAX_DEPTH = 128  # names in one path
MAX_PATH = 2048  # bytes of one path: the copy's own folder fits before PATH_MAX (4,096)
MAX_NAME = 255  # bytes of one name (NAME_MAX)
MAX_FILE = 100 * 2**20  # bytes of one file
MAX_TOTAL = 2**30  # bytes of all files
MAX_LINK = 4095  # bytes of a link's target
CHUNK = 2**20

_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
#: ``ls-tree``'s kinds as ``Names`` records them (a blob of mode 120000 is a link)
_KINDS = {"tree": "folder", "blob": "file", "commit": "submodule"}
_TREE, _LINK = "040000", "120000"


class SnapshotError(PromptevalError):
    """A snapshot the copy refuses: a hostile or oversized entry, named with its path."""


class Folder:
    """A folder of the snapshot as listed: the one above it, its name, and its own names
    (a ``Folder``, or the kind of a file, link or submodule). An entry points at its folder,
    so a path is held once however many entries lie below it."""

    __slots__ = ("above", "depth", "name", "names")

    def __init__(self, above: Folder | None = None, name: str = "") -> None:
        self.above = above
        self.name = name
        self.depth: int = 0 if above is None else above.depth + 1
        self.names: dict[str, Folder | str] = {}

    def chain(self) -> list[Folder]:
        """The folders from the top down to this one."""
        found, folder = [self], self
        while folder.above is not None:
            folder = folder.above
            found.append(folder)
        return found[::-1]

    def path(self, name: str) -> str:
        return "/".join([*(f.name for f in self.chain()[1:]), name])


class Names:
    """The paths of one snapshot as they come, kept as a tree of ``Folder``s; ``refuse`` is
    the one error, naming the snapshot and the path. ``reserved``: names refused in any
    case (``.git`` in a git tree)."""

    def __init__(self, what: str, reserved: Iterable[str] = ()) -> None:
        self.what = what
        self.reserved = {name.lower() for name in reserved}
        self.top = Folder()
        self._count = 0

    def refuse(self, path: str, reason: str) -> NoReturn:
        raise SnapshotError(f"repository snapshot {self.what}: {path!r} {reason}; refused")

    def add(self, path: str, kind: str) -> tuple[Folder, str]:
        """``path``'s folder and name, once the path is known to be new and below folders
        listed before it."""
        parts = path.split("/")
        self._count += 1
        if self._count > MAX_ENTRIES:
            self.refuse(path, f"is past the {MAX_ENTRIES:,} entries a snapshot may hold")
        if len(parts) > MAX_DEPTH:
            self.refuse(path, f"is more than {MAX_DEPTH} folders deep")
        if len(os.fsencode(path)) > MAX_PATH:
            self.refuse(path, f"is longer than {MAX_PATH:,} bytes")
        for part in parts:
            if part in ("", ".", "..") or "\0" in part or part.lower() in self.reserved:
                self.refuse(path, f"holds the name {part!r}")
            if len(os.fsencode(part)) > MAX_NAME:
                self.refuse(path, f"holds a name longer than {MAX_NAME} bytes")
        folder = self.top
        for depth, part in enumerate(parts[:-1]):
            below = folder.names.get(part)
            if isinstance(below, str):
                self.refuse(path, f"passes through {'/'.join(parts[: depth + 1])!r}, a {below}")
            if below is None:  # a folder is listed before its entries
                self.refuse(path, "is below a folder not listed (a name holding '/')")
            folder = below
        name = parts[-1]
        if name in folder.names:
            self.refuse(path, "is listed twice (a folder and a file, or the same name again)")
        folder.names[name] = Folder(folder, name) if kind == "folder" else kind
        return folder, name


class ByteBudget:
    """Bytes of one snapshot counted against ``MAX_FILE`` (``MAX_LINK`` for a link's target)
    and ``MAX_TOTAL``."""

    def __init__(self, names: Names) -> None:
        self.names = names
        self.total = 0

    def take(self, folder: Folder, name: str, size: int, link: bool = False) -> None:
        limit = MAX_LINK if link else MAX_FILE
        if size > limit:
            what = "a link's target" if link else "a file"
            self.names.refuse(folder.path(name), f"is {size:,} bytes, past {limit:,} for {what}")
        self.total += size
        if self.total > MAX_TOTAL:
            self.names.refuse(
                folder.path(name), f"takes the snapshot past {MAX_TOTAL:,} bytes in all"
            )


class Writer:
    """Entries made below the empty folder ``top``, each in its ``Folder``: each folder on
    the way opened ``O_NOFOLLOW|O_DIRECTORY`` from the one above, each file created
    ``O_EXCL|O_NOFOLLOW``, each link made by ``symlinkat``, so nothing is written through a
    link; file contents counted by a ``ByteBudget`` as they stream."""

    def __init__(self, top: Path, names: Names) -> None:
        self.budget = ByteBudget(names)
        self._open: list[tuple[Folder, int]] = [(names.top, os.open(top, _FOLDER))]

    def _fd(self, folder: Folder) -> int:
        """``folder``'s descriptor. The folders open are a path from the top (one at each
        depth): those not on the way to ``folder`` are closed, the rest opened one name at
        a time."""
        if self._open[-1][0] is folder:
            return self._open[-1][1]
        chain = folder.chain()
        while (last := self._open[-1][0]).depth >= len(chain) or chain[last.depth] is not last:
            os.close(self._open.pop()[1])
        for below in chain[len(self._open) :]:
            self._open.append((below, os.open(below.name, _FOLDER, dir_fd=self._open[-1][1])))
        return self._open[-1][1]

    def folder(self, folder: Folder, name: str) -> None:
        os.mkdir(name, dir_fd=self._fd(folder))

    def link(self, folder: Folder, name: str, target: str) -> None:
        if not target or "\0" in target:
            self.budget.names.refuse(folder.path(name), "is a link to an empty or NUL name")
        self.budget.take(folder, name, len(os.fsencode(target)), link=True)
        os.symlink(target, name, dir_fd=self._fd(folder))

    def file(
        self, folder: Folder, name: str, executable: bool, size: int, chunks: Iterable[bytes]
    ) -> None:
        """A new file of ``size`` bytes (a source that grows past it is refused)."""
        self.budget.take(folder, name, size)
        fd = os.open(name, _NEW_FILE, 0o600, dir_fd=self._fd(folder))
        try:
            written = 0
            for chunk in chunks:
                written += len(chunk)
                if written > size:
                    self.budget.names.refuse(folder.path(name), "grew while it was copied")
                view = memoryview(chunk)
                while view:
                    view = view[os.write(fd, view) :]
            os.fchmod(fd, 0o755 if executable else 0o644)
        finally:
            os.close(fd)

    def close(self) -> None:
        for _, fd in self._open:
            os.close(fd)
        self._open.clear()

    def __enter__(self) -> Writer:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def copy_folder(source: Path, into: Path, what: str) -> None:
    """``source``'s tree below the empty folder ``into``: links copied as links (never
    followed), devices, FIFOs and sockets left out."""
    names = Names(what)
    with Writer(into, names) as writer:
        top = os.open(source, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        walking: list[tuple[str, int]] = [("", top)]  # each folder's path, its descriptor
        pending = [sorted(os.listdir(top), reverse=True)]
        try:
            while walking:
                where, fd = walking[-1]
                if not pending[-1]:
                    os.close(fd)
                    walking.pop()
                    pending.pop()
                    continue
                name = pending[-1].pop()
                path = where + name
                mode = os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode
                if stat.S_ISDIR(mode):
                    writer.folder(*names.add(path, "folder"))
                    walking.append((path + "/", os.open(name, _FOLDER, dir_fd=fd)))
                    pending.append(sorted(os.listdir(walking[-1][1]), reverse=True))
                elif stat.S_ISLNK(mode):
                    writer.link(*names.add(path, "link"), os.readlink(name, dir_fd=fd))
                elif stat.S_ISREG(mode):
                    _copy_file(writer, *names.add(path, "file"), fd)
        finally:
            for _, fd in walking:
                os.close(fd)


def _copy_file(writer: Writer, folder: Folder, name: str, source: int) -> None:
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    fd = os.open(name, flags, dir_fd=source)
    try:
        info = os.fstat(fd)
        if stat.S_ISREG(info.st_mode):  # not swapped for a FIFO since it was listed
            chunks = iter(lambda: os.read(fd, CHUNK), b"")
            writer.file(folder, name, bool(info.st_mode & 0o100), info.st_size, chunks)
    finally:
        os.close(fd)


@contextlib.contextmanager
def _git(
    repo: Repository, *args: str, stdin: IO[bytes] | int = subprocess.DEVNULL
) -> Iterator[IO[bytes]]:
    """git's output as it comes; git is ended when the block leaves early, and a git that
    fails is a ``GitRefError`` with its message."""
    with tempfile.TemporaryFile() as errors:
        process = repo.stream(*args, stdin=stdin, stderr=errors)
        assert process.stdout is not None
        try:
            yield process.stdout
            if process.wait() != 0:
                errors.seek(0)
                message = errors.read(2000).decode(errors="replace").strip()
                raise GitRefError(f"git {args[0]} failed in {repo.top}: {message}")
        finally:
            if process.poll() is None:
                process.kill()
            process.wait()
            process.stdout.close()


def _records(stream: IO[bytes], names: Names) -> Iterator[bytes]:
    """The NUL-ended records of ``ls-tree -z`` as they come, each of bounded length."""
    pending = b""
    while chunk := stream.read(CHUNK):
        *records, pending = (pending + chunk).split(b"\0")
        yield from records
        if len(pending) > MAX_PATH + 100:  # the mode, kind and object name before the path
            start = pending.partition(b"\t")[2][:100].decode(errors="surrogateescape")
            names.refuse(start + "...", f"is longer than {MAX_PATH:,} bytes")


def git_tree(repo: Repository, commit: str, into: Path, what: str) -> None:
    """The tree of ``commit`` below the empty folder ``into``, from git objects only:
    listed (``ls-tree -r -t``, each folder before its entries) and checked whole, the blobs'
    sizes checked (``cat-file --batch-check``), then written as ``cat-file --batch`` streams
    them. Submodules are left out."""
    names = Names(what, reserved=(".git",))
    entries: list[tuple[str, str, Folder, str]] = []  # mode, object, folder, name in order
    with _git(repo, "ls-tree", "-r", "-t", "-z", "--full-tree", commit) as listing:
        for record in _records(listing, names):
            info, _, path = record.partition(b"\t")
            mode, kind, sha = info.decode().split()
            kind = "link" if mode == _LINK else _KINDS.get(kind, kind)
            folder, name = names.add(path.decode(errors="surrogateescape"), kind)
            if kind != "submodule":
                entries.append((mode, sha, folder, name))
    blobs = [entry for entry in entries if entry[0] != _TREE]
    wanted = "".join(f"{sha}\n" for _, sha, _, _ in blobs).encode()
    _check_sizes(repo, blobs, wanted, ByteBudget(names))
    with tempfile.TemporaryFile() as stdin:
        stdin.write(wanted)
        stdin.seek(0)
        with (
            _git(repo, "cat-file", "--batch", stdin=stdin) as objects,
            Writer(into, names) as writer,
        ):
            for mode, sha, folder, name in entries:
                if mode == _TREE:
                    writer.folder(folder, name)
                    continue
                header = objects.readline(200).split()
                if len(header) != 3 or header[:2] != [sha.encode(), b"blob"]:
                    raise GitRefError(f"git cat-file gave {header!r} for {sha} in {repo.top}")
                size = int(header[2])
                if mode == _LINK:
                    target = objects.read(size).decode(errors="surrogateescape")
                    writer.link(folder, name, target)
                else:
                    executable = bool(int(mode, 8) & 0o100)
                    writer.file(folder, name, executable, size, _read(objects, size))
                objects.read(1)  # the newline after each object


def _check_sizes(
    repo: Repository, blobs: list[tuple[str, str, Folder, str]], wanted: bytes, budget: ByteBudget
) -> None:
    """Every blob there, a blob, and within the budget, before anything is written."""
    checked = repo.git("cat-file", "--batch-check", data=wanted)
    lines = checked.stdout.split(b"\n")
    if checked.returncode != 0 or len(lines) != len(blobs) + 1:
        raise GitRefError(f"cannot read the objects of {repo.top}")
    for (mode, _, folder, name), line in zip(blobs, lines, strict=False):
        fields = line.decode().split()
        if fields[1:2] != ["blob"]:
            found = "missing from the clone" if fields[1:2] == ["missing"] else "not a blob"
            budget.names.refuse(folder.path(name), f"is {found}")
        budget.take(folder, name, int(fields[2]), link=mode == _LINK)


def _read(stream: IO[bytes], size: int) -> Iterator[bytes]:
    while size:
        chunk = stream.read(min(size, CHUNK))
        if not chunk:
            raise GitRefError("git cat-file ended before its object did")
        size -= len(chunk)
        yield chunk


def _climb(
    top: str,
    visit: Callable[[int], list[str]],
    open_below: Callable[[int, str], int] = lambda above, name: os.open(
        name, _FOLDER, dir_fd=above
    ),
    leave: Callable[[int, str], None] | None = None,
) -> None:
    """Each folder of the tree at ``top`` (a copy an agent left: any depth), depth first,
    one descriptor open at a time: ``visit(fd)`` gives the names of a folder's folders,
    ``open_below(fd, name)`` opens one, ``leave(fd, name)`` runs in its parent once it is
    done. It climbs back by ``..``: no recursion, no stack of descriptors, no path longer
    than PATH_MAX. Each folder's identity is kept: a folder the agent moved while it was
    walked (a process of its still running) would lead ``..`` elsewhere, up to the copy's
    parent and past it, so a ``..`` that is not the folder it came down from stops the walk
    (``OSError``) before anything is done there."""
    fd = os.open(top, _FOLDER)
    climbing = [("", _identity(fd), visit(fd))]
    try:
        while climbing:
            name, _, folders = climbing[-1]
            if folders:
                below = folders.pop()
                opened = open_below(fd, below)
                os.close(fd)
                fd = opened
                climbing.append((below, _identity(fd), visit(fd)))
                continue
            climbing.pop()
            if climbing:
                above = os.open("..", _FOLDER, dir_fd=fd)
                os.close(fd)
                fd = above
                if _identity(fd) != climbing[-1][1]:
                    raise OSError(f"{top}: a folder was moved while it was walked; stopped")
                if leave is not None:
                    leave(fd, name)
    finally:
        os.close(fd)


def _identity(fd: int) -> tuple[int, int]:
    info = os.fstat(fd)
    return info.st_dev, info.st_ino


def remove_tree(top: str) -> None:
    """``top`` and all below it, whatever the agent left: any depth, folders of any mode
    (made ours to empty), links removed, never followed."""
    os.chmod(top, 0o700)
    _climb(top, _empty, _open_to_empty, lambda folder, name: os.rmdir(name, dir_fd=folder))
    os.rmdir(top)


def give_tree(top: str, uid: int, gid: int) -> None:
    """Everything at and below ``top`` owned by ``uid``:``gid`` (links themselves, never
    what they point at), at any depth."""

    def visit(folder: int) -> list[str]:
        os.fchown(folder, uid, gid)
        return _folders(
            folder, lambda name: os.chown(name, uid, gid, dir_fd=folder, follow_symlinks=False)
        )

    _climb(top, visit)


def _open_to_empty(folder: int, name: str) -> int:
    try:
        fd = os.open(name, _FOLDER, dir_fd=folder)
    except PermissionError:  # a folder the agent made unreadable: it is ours to open
        os.chmod(name, 0o700, dir_fd=folder)
        fd = os.open(name, _FOLDER, dir_fd=folder)
    os.fchmod(fd, 0o700)
    return fd


def _empty(folder: int) -> list[str]:
    """The names of ``folder``'s folders, once everything else in it is removed."""
    return _folders(folder, lambda name: os.unlink(name, dir_fd=folder))


def _folders(folder: int, other: Callable[[str], None]) -> list[str]:
    """The names of ``folder``'s folders; ``other(name)`` for the rest (files, links,
    anything else) as they are read, never held: the agent may leave millions."""
    folders: list[str] = []
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                folders.append(entry.name)
            else:
                other(entry.name)
    return folders
