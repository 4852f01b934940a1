"""A repository task's file-state assertions, checked on the copy as the agent left it
(``/repo``), in the verdict's sandbox, before the test files are restored:

- ``file_exists`` / ``file_not_exists``: a glob (``*``, ``?``, ``[...]`` within a name,
  ``**`` across folders) matches a file or link of the copy, or none;
- ``file_matches``: a file's content matches a regular expression (RE2: linear time);
- ``file_unchanged``: a file (or link) is as the snapshot (``/base``) has it: kind, bytes,
  executable bit, link target.

The copy is the agent's: no link it left is followed at any level (each folder of a path
is opened with ``O_NOFOLLOW`` below the last), a file is read to at most ``READ_MAX``
bytes, and the glob's walk is ``treediff.walk``'s (bounded, ``.git`` not entered). Each
check answers ``{"passed": bool, "reason": str}``, the reason naming the path and why.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator, Mapping
from typing import Any

from pytest_prompteval.core.patterns import escape, pattern
from pytest_prompteval.sandbox.restore import BASE, CHUNK, MAX_ENTRIES, REPO
from pytest_prompteval.sandbox.treediff import clip, walk

#: Bytes of a file ``file_matches`` reads: a larger one fails, unread.
READ_MAX = 8 << 20
#: How many of the paths found ``file_not_exists`` names.
NAMED = 5
_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def glob_pattern(glob: str) -> str:
    """RE2 source matching the relative paths ``glob`` names, whole."""
    out, i = [], 0
    while i < len(glob):
        char = glob[i]
        if glob.startswith("**/", i):
            out.append("(?:[^/]*/)*")
            i += 3
            continue
        if glob.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[" and (end := glob.find("]", i + 2)) > 0:
            inner = glob[i + 1 : end]
            negated = inner.startswith("!")
            body = inner[1:] if negated else inner
            out.append(("[^/" if negated else "[") + body.replace("\\", "\\\\") + "]")
            i = end + 1
            continue
        else:
            out.append(escape(char))
        i += 1
    return "(?s)^" + "".join(out) + "$"


def _parts(rel: str) -> list[str]:
    parts = rel.split("/")
    if rel.startswith("/") or {"", ".", ".."} & {*parts}:
        raise ValueError(f"{rel!r} is no path within the repository")
    return parts


def _folder_of(top: str, parts: list[str]) -> int:
    """The folder holding ``parts``' last name, opened without following any link."""
    fd = os.open(top, _FOLDER)
    try:
        for part in parts[:-1]:
            below = os.open(part, _FOLDER, dir_fd=fd)
            os.close(fd)
            fd = below
    except BaseException:
        os.close(fd)
        raise
    return fd


def _lstat(top: str, rel: str) -> tuple[int, os.stat_result] | None:
    """(the folder's fd, the entry's lstat); None when the path is not there (or passes
    through a link or a file)."""
    parts = _parts(rel)
    try:
        folder = _folder_of(top, parts)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # a link where a folder should be
            return None
        raise
    try:
        return folder, os.lstat(parts[-1], dir_fd=folder)
    except BaseException as exc:
        os.close(folder)
        if isinstance(exc, FileNotFoundError | NotADirectoryError):
            return None
        raise


def _chunks(folder: int, name: str) -> Iterator[bytes]:
    with open(os.open(name, _FILE, dir_fd=folder), "rb") as file:
        while chunk := file.read(CHUNK):
            yield chunk


def _kind(info: os.stat_result) -> str:
    mode = info.st_mode
    if stat.S_ISLNK(mode):
        return "link"
    return "file" if stat.S_ISREG(mode) else "folder" if stat.S_ISDIR(mode) else "special file"


def _exists(glob: str, wanted: bool) -> tuple[bool, str]:
    # folders made readable first; what stays unreadable cannot hold a match it shows
    found, stopped, unread = walk(REPO, MAX_ENTRIES, open_up=True)
    stopped = stopped or bool(unread)
    match = pattern(glob_pattern(glob))
    hits = sorted(rel for rel in found if match.search(rel))
    if not hits:
        if stopped:  # what was not looked at may hold one: neither check can pass
            return False, f"none in the first {MAX_ENTRIES:,} entries, the rest not looked at"
        return not wanted, "no such file"
    shown = ", ".join(clip(h) for h in hits[:NAMED]) + (
        f" and {len(hits) - NAMED} more" if len(hits) > NAMED else ""
    )
    return wanted, f"found {shown}"


def _matches(rel: str, regex: str) -> tuple[bool, str]:
    found = _lstat(REPO, rel)
    if found is None:
        return False, "no such file"
    folder, info = found
    try:
        if _kind(info) != "file":
            return False, f"a {_kind(info)}"
        if info.st_size > READ_MAX:
            return False, f"{info.st_size:,} bytes, past the {READ_MAX:,} read"
        with open(os.open(os.path.basename(rel), _FILE, dir_fd=folder), "rb") as file:
            data = file.read(READ_MAX)
    finally:
        os.close(folder)
    if pattern(regex).search(data.decode(errors="replace")) is None:
        return False, f"no match for /{regex}/"
    return True, f"matches /{regex}/"


def _signature(top: str, rel: str) -> tuple[Any, ...] | None:
    found = _lstat(top, rel)
    if found is None:
        return None
    folder, info = found
    name = os.path.basename(rel)
    try:
        kind = _kind(info)
        if kind == "link":
            return (kind, os.readlink(name, dir_fd=folder))
        if kind != "file":
            return (kind,)
        return (kind, info.st_size, info.st_mode & stat.S_IXUSR)
    finally:
        os.close(folder)


def _same_bytes(rel: str) -> bool:
    old, new = _lstat(BASE, rel), _lstat(REPO, rel)
    assert old is not None and new is not None
    name = os.path.basename(rel)
    try:
        return all(
            a == b for a, b in zip(_chunks(old[0], name), _chunks(new[0], name), strict=True)
        )
    except ValueError:  # one ended first
        return False
    finally:
        os.close(old[0])
        os.close(new[0])


def _unchanged(rel: str) -> tuple[bool, str]:
    before, after = _signature(BASE, rel), _signature(REPO, rel)
    if before is None:
        return False, "not in the snapshot"
    if after is None:
        return False, "removed"
    if before[0] in ("folder", "special file"):
        return False, f"a {before[0]} in the snapshot: name a file"
    if before[0] != after[0]:
        return False, f"a {before[0]} in the snapshot, a {after[0]} now"
    if before == after and (before[0] == "link" or _same_bytes(rel)):
        return True, "unchanged"
    return False, "changed"


def check(checks: list[Mapping[str, Any]]) -> dict[str, Any]:
    """Each check's ``{"passed", "reason"}``, in order."""
    answers = []
    for job in checks:
        kind, path = str(job["type"]), str(job["path"])
        try:
            if kind in ("file_exists", "file_not_exists"):
                passed, why = _exists(path, kind == "file_exists")
            elif kind == "file_matches":
                passed, why = _matches(path, str(job["regex"]))
            else:
                passed, why = _unchanged(path)
        except (OSError, ValueError) as exc:
            passed, why = False, f"unreadable: {exc}"
        answers.append({"passed": passed, "reason": f"{kind} {path}: {why}"})
    return {"checks": answers}
