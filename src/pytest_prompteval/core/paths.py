"""Paths that files and options name stay inside the project, and what we read is bounded.

Cases, prompts, recordings and results arrive in pull requests from people a team may not
trust: a name in one of them must not reach ``/proc/self/environ``, ``../../.ssh`` or
``/dev/zero``, and an output name built from one must not write outside its folder.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from pytest_prompteval.core.errors import PromptevalError

#: Case files, prompt versions, tables and the files they name.
MAX_FILE_BYTES = 16 * 1024 * 1024
#: One recorded response: the longest answer is a few hundred kilobytes.
MAX_RECORDING_BYTES = 8 * 1024 * 1024

# Case ids, version names and marker values end up in node ids, `-m` expressions and file
# names: letters, digits and _ . + -, never starting with a dot (no `..`, no separators).
NAME = re.compile(r"^[A-Za-z0-9_][\w.+-]*$")


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


def read_bounded(path: Path, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes; devices, FIFOs, directories
    and larger files are errors naming the path."""
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise PromptevalError(f"cannot read file: {exc.strerror}", path) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise PromptevalError("not a regular file", path)
        if info.st_size > limit:
            raise PromptevalError(f"file too large: {info.st_size} bytes (limit {limit})", path)
        chunks, size = [], 0
        while chunk := os.read(fd, min(1 << 20, limit + 1 - size)):
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:  # it grew while we read it
                raise PromptevalError(f"file too large: more than {limit} bytes", path)
        return b"".join(chunks)
    finally:
        os.close(fd)


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
