"""Paths that files and options name stay inside the project, and what we read is bounded.

Cases, prompts, recordings and results arrive in pull requests from people a team may not
trust: a name in one of them must not reach ``/proc/self/environ``, ``../../.ssh`` or
``/dev/zero``, and an output name built from one must not write outside its folder. Every
project file the plugin reads goes through ``read_bounded`` and every file it writes through
``write_atomically`` or ``create_new``, which never write through a symlink planted where
the file goes.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import secrets
import stat
import tempfile
from pathlib import Path
from typing import IO, BinaryIO

from pytest_prompteval.core.errors import PromptevalError, display

#: Case files, prompt versions, tables and the files they name.
MAX_FILE_BYTES = 16 * 1024 * 1024
#: One recorded response: the longest answer is a few hundred kilobytes.
MAX_RECORDING_BYTES = 8 * 1024 * 1024
#: One run's results: thousands of items, each with its answer.
MAX_RESULTS_BYTES = 256 * 1024 * 1024

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)

# Case ids, version names and marker values end up in node ids, `-m` expressions and file
# names: letters, digits and _ . + -, never starting with a dot (no `..`, no separators).
NAME = re.compile(r"^[A-Za-z0-9_][\w.+-]*\Z")


def check_name(value: str, what: str) -> str:
    if not NAME.match(value):
        raise PromptevalError(
            f"{what} {value!r}: expected a name of letters, digits and _ . + - "
            "(it becomes an id and a file name)"
        )
    return value


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def resolve_inside(root: Path, name: str, base: Path | None = None) -> Path:
    """``name`` (relative to ``base``, default ``root``), resolved through any symlinks; an
    absolute name, a ``..`` escape or a link that ends outside ``root`` is an error."""
    if not isinstance(name, str) or not name or "\0" in name:
        raise PromptevalError(f"path {name!r}: expected a relative file name")
    if os.path.isabs(name):
        raise PromptevalError(f"path {name!r}: absolute paths are not allowed, name it relative")
    resolved = Path(os.path.realpath((base or root) / name))
    if not _inside(resolved, Path(os.path.realpath(root))):
        raise PromptevalError(f"path {name!r} leads outside the project ({root})")
    return resolved


def check_inside(root: Path, path: Path) -> Path:
    """``path`` itself (a file we were pointed at, such as a collected case file), when its
    symlinks do not lead outside ``root``."""
    real = Path(os.path.realpath(path))
    if not _inside(real, Path(os.path.realpath(root))):
        raise PromptevalError(f"is a link to {real}, outside the project", path)
    return path


def open_bounded(path: Path, limit: int = MAX_FILE_BYTES, root: Path | None = None) -> BinaryIO:
    """A regular file of at most ``limit`` bytes, open for reading (to stream it); devices,
    FIFOs, directories and larger files are errors naming the path. ``root``: the folder the
    file must lie in, after its symlinks (a link leading out of it is an error, not followed)."""
    # O_NONBLOCK: opening a FIFO must not wait for a writer
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | (_NOFOLLOW if root is not None else 0)
    try:
        fd = _open_inside(path, root, flags)
    except OSError as exc:
        raise PromptevalError(f"cannot read file: {exc.strerror}", path) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise PromptevalError("not a regular file", path)
        if info.st_size > limit:
            raise PromptevalError(f"file too large: {info.st_size} bytes (limit {limit})", path)
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


def read_bounded(path: Path, limit: int = MAX_FILE_BYTES, root: Path | None = None) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes (``open_bounded``'s checks)."""
    with open_bounded(path, limit, root) as file:
        chunks, size = [], 0
        while chunk := file.read(min(1 << 20, limit + 1 - size)):
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:  # it grew while we read it
                raise PromptevalError(f"file too large: more than {limit} bytes", path)
        return b"".join(chunks)


def _open_inside(path: Path, root: Path | None, flags: int) -> int:
    if root is None:
        return os.open(path, flags)
    if path.parent == root:
        # a file of the folder itself (a recording, every item): not a link, it is inside
        with contextlib.suppress(OSError):
            return os.open(path, flags)
    # the resolved name, opened without following a link swapped in since the check
    where = Path(os.path.realpath(path))
    if not _inside(where, Path(os.path.realpath(root))):
        raise PromptevalError(f"is a link to {where}, outside {display(root)}", path)
    return os.open(where, flags)


def read_inside(
    root: Path, name: str, base: Path | None = None, limit: int = MAX_FILE_BYTES
) -> str:
    """The text of the file ``name`` names, checked by ``resolve_inside`` and ``read_bounded``."""
    path = resolve_inside(root, name, base)
    try:
        return read_bounded(path, limit).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PromptevalError(f"cannot read file: not UTF-8 ({exc.reason})", path) from None


def output_inside(folder: Path, name: str) -> Path:
    """``folder/name`` for writing: ``name`` a plain file name (no separators), the folder
    not a symlink, the target not an existing symlink."""
    if os.sep in name or (os.altsep and os.altsep in name) or name in ("", ".", ".."):
        raise PromptevalError(f"output name {name!r}: expected a file name without a folder")
    check_dir(folder)
    target = folder / name
    if target.is_symlink():
        raise PromptevalError("is a symlink; not written through", target)
    return target


def check_dir(folder: Path, root: Path | None = None) -> Path:
    """A folder we write into: not a symlink that leads outside ``root`` (any symlink when
    no root is given), and not a file."""
    if folder.is_symlink():
        target = Path(os.path.realpath(folder))
        if root is None or not _inside(target, Path(os.path.realpath(root))):
            raise PromptevalError(f"is a symlink to {target}, outside the project", folder)
    if folder.exists() and not folder.is_dir():
        raise PromptevalError("is not a folder", folder)
    return folder


def make_dir(folder: Path, root: Path | None = None) -> Path:
    """``folder`` made if missing, then checked by ``check_dir`` (a folder we write into)."""
    folder.mkdir(parents=True, exist_ok=True)
    return check_dir(folder, root)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


UMASK = _umask()  # read once: os.umask can only be read by setting it


def write_atomically(target: Path, data: str | bytes) -> None:
    """Write ``target`` whole: a new file in its folder (``mkstemp``: ``O_EXCL``, so never
    an existing file or a planted link) renamed over it, so readers see the old file or the
    new one, and a symlink planted at ``target`` is replaced, never written through."""
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-", suffix=target.suffix)
    try:
        # mkstemp makes the file 0600; results and recordings are shared with teammates and
        # CI steps as any file the user makes is
        os.chmod(tmp, 0o666 & ~UMASK)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data.encode() if isinstance(data, str) else data)
        os.replace(tmp, target)
    except BaseException:
        os.unlink(tmp)
        raise


def create_new(path: Path) -> IO[str]:
    """``path`` opened for writing as a new file: an existing one, or a symlink planted
    there (even one leading nowhere), is an error, never written through."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o666)
    return os.fdopen(fd, "w", encoding="utf-8")


def user_cache_dir() -> Path:
    """This user's cache folder for the plugin (``$XDG_CACHE_HOME``, else ``~/.cache``),
    outside every project: nothing a pull request commits lands there."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base, "pytest-prompteval")


@functools.cache
def _machine_key(folder: Path) -> bytes | None:
    path = folder / "cache-key"
    for _ in range(2):
        try:
            key = read_bounded(path, 64)
            if len(key) == 32:
                return key
            return None  # not ours: no key, no trusted cache
        except PromptevalError:
            pass  # missing: made below
        try:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=folder)  # 0600
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(secrets.token_bytes(32))
                os.link(tmp, path)  # fails when another process made it first: read theirs
            except FileExistsError:
                pass
            finally:
                os.unlink(tmp)
        except OSError:
            return None
    return None


def machine_key() -> bytes | None:
    """A secret of this user on this machine (32 random bytes in ``cache-key`` under
    ``user_cache_dir``, made 0600 on first use), to sign what the plugin caches inside a
    project; None when it cannot be kept (then nothing is cached)."""
    return _machine_key(user_cache_dir())
