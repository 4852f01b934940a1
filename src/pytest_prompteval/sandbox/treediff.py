"""The verdict's diff: the snapshot (``/base``) against the copy the agent left (``/repo``),
bounded wherever the agent could make it large.

The copy is the agent's, so every size here is its choice: the diff is built under a byte
budget (``DIFF_BUDGET`` in all, ``FILE_BUDGET`` per file). A binary file is one line with
its sizes; so is a file too large to diff line by line (``TEXT_MAX``), which is compared in
chunks and never read whole; a file whose diff is over its share is summarised the same
way. Line-by-line diffs take at most ``DIFF_SECONDS`` of CPU in all (difflib is quadratic
on some inputs): the file at hand when they are spent is summarised. Past the budget, what
is left out is named (at most ``LISTED`` names, then a count).
Names are quoted as git quotes them (``"a/new\\nline"``): a name cannot forge a header.
The walk lists at most ``MAX_ENTRIES`` entries a tree (folders count; restore's bound, past
which the verdict runs no test), without recursion, in sorted order. Lines end at newlines
only, as git's do.
"""

from __future__ import annotations

import difflib
import heapq
import os
import signal
import stat
from collections.abc import Callable, Iterator

from pytest_prompteval.core.bounds import MAX_DIFF
from pytest_prompteval.sandbox.restore import MAX_ENTRIES, read_only, same_bytes, writable

DIFF_BUDGET = MAX_DIFF
#: What one file's diff may take of the budget.
FILE_BUDGET = DIFF_BUDGET // 4
#: Larger files are compared, never diffed line by line.
TEXT_MAX = FILE_BUDGET
#: Room kept in the budget for the closing notes naming what was left out or unread.
NOTE_ROOM = 64 << 10
#: How many names of files left out the note lists.
LISTED = 100
#: How much of a name the note shows, in bytes.
NAME_SHOWN = 200
#: CPU seconds the line-by-line diffs may take in all.
DIFF_SECONDS = 10.0
#: Where a NUL makes a file binary, as git decides.
SNIFF = 8000


def quote(name: str) -> str:
    """``name`` as git writes it in a header: in double quotes, C-escaped, when it holds a
    quote, a backslash or anything not printable (a newline would forge a header)."""
    if name.isprintable() and '"' not in name and "\\" not in name:
        return name
    escapes = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t"}
    shown = []
    for char in name:
        if char in escapes:
            shown.append(escapes[char])
        elif char.isprintable():
            shown.append(char)
        else:
            raw = char.encode(errors="surrogateescape")
            shown.append("".join(f"\\{byte:03o}" for byte in raw))
    return '"' + "".join(shown) + '"'


def walk(
    top: str, limit: int = MAX_ENTRIES, open_up: bool = False
) -> tuple[dict[str, os.stat_result], bool, list[str]]:
    """Relative path -> lstat of every entry but folders (a link to one included) below
    ``top``, never following links nor entering ``.git`` (the verdict's tests get the
    snapshot's: ``restore``); whether it stopped at ``limit`` entries, folders counted;
    and the entries it could not read (a path past ``PATH_MAX``), so that the diff names
    them. A stack, not recursion: a tree of any depth. With ``open_up`` each folder is made
    its owner's to list first (an agent that closed one does not hide its change)."""
    found: dict[str, os.stat_result] = {}
    unread: list[str] = []
    seen = 0  # folders
    todo = [""]
    while todo:
        folder = todo.pop()
        try:
            if open_up:
                writable(os.path.join(top, folder))
            with os.scandir(os.path.join(top, folder)) as entries:
                # the first names in order, no more than the limit leaves held at once: a
                # folder may hold millions
                room = limit - len(found) - seen + 1
                listed = heapq.nsmallest(room, entries, key=lambda entry: entry.name)
        except OSError:
            unread.append(folder or ".")
            continue
        inner = []
        for entry in listed:
            name = os.path.join(folder, entry.name)
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                unread.append(name)
                continue
            if len(found) + seen >= limit:  # folders count: a million empty ones take long
                return found, True, unread
            if stat.S_ISDIR(info.st_mode):
                seen += 1
                if entry.name != ".git":
                    inner.append(name)
                continue
            found[name] = info
        todo.extend(reversed(inner))  # the first popped first
    return found, False, unread


def _head(path: str, size: int) -> bytes:
    with open(read_only(path), "rb") as file:
        return file.read(size)


class _Side:
    """One side of a changed name: its kind and size, and its text when it has one."""

    def __init__(self, top: str, name: str, info: os.stat_result | None) -> None:
        self.path = os.path.join(top, name)
        self.size = 0 if info is None else info.st_size
        self.mode = 0 if info is None else stat.S_IFMT(info.st_mode)
        self.kind = "absent"
        if info is None:
            return
        if stat.S_ISLNK(info.st_mode):
            self.kind = "link"
        elif stat.S_ISREG(info.st_mode):
            self.kind = "file"
        else:
            self.kind = "special"

    def differs(self, other: _Side) -> bool:
        if self.kind != other.kind or self.kind == "absent":
            return True
        if self.kind == "link":
            return os.readlink(self.path) != os.readlink(other.path)
        if self.kind == "special":
            return self.mode != other.mode
        return self.size != other.size or not same_bytes(self.path, other.path)

    def lines(self) -> list[str] | None:
        """The text's lines (a link's target as one line); None when binary or too large."""
        if self.kind == "absent":
            return []
        if self.kind == "link":
            return [f"-> {quote(os.readlink(self.path))}\n"]
        if self.kind != "file" or self.size > TEXT_MAX:
            return None
        data = _head(self.path, TEXT_MAX + 1)
        if b"\0" in data[:SNIFF] or len(data) > TEXT_MAX:
            return None
        lines = data.decode(errors="replace").split("\n")  # at newlines only, as git
        last = lines.pop()
        return [line + "\n" for line in lines] + ([last] if last else [])

    def binary(self) -> bool:
        return self.kind == "special" or (self.kind == "file" and b"\0" in _head(self.path, SNIFF))


def _sizes(old: _Side, new: _Side) -> str:
    if old.kind == "absent":
        return f"added ({new.size:,} bytes)"
    if new.kind == "absent":
        return f"deleted ({old.size:,} bytes)"
    return f"changed ({old.size:,} -> {new.size:,} bytes)"


def _file_diff(name: str, old: _Side, new: _Side) -> str:
    """One file's part of the diff: its unified diff when it fits in ``FILE_BUDGET``, else
    a line saying how it changed."""
    if old.binary() or new.binary():
        return f"Binary file {quote(name)} {_sizes(old, new)}\n"
    before, after = old.lines(), new.lines()
    if before is None or after is None:
        return f"Large file {quote(name)} {_sizes(old, new)}, diff not shown\n"
    parts, used = [], 0
    lines = difflib.unified_diff(
        before,
        after,
        quote(f"a/{name}") if old.kind != "absent" else "/dev/null",
        quote(f"b/{name}") if new.kind != "absent" else "/dev/null",
    )
    for line in lines:
        if not line.endswith("\n"):
            line += "\n\\ No newline at end of file\n"
        used += len(line.encode(errors="surrogateescape"))
        if used > FILE_BUDGET:
            return (
                f"Large diff of {quote(name)}: file {_sizes(old, new)}, "
                f"its diff over {FILE_BUDGET:,} bytes not shown\n"
            )
        parts.append(line)
    return "".join(parts)


def clip(name: str) -> str:
    shown = quote(name).encode()
    if len(shown) <= NAME_SHOWN:
        return shown.decode()
    return shown[:NAME_SHOWN].decode(errors="ignore") + "..."


def _changed(
    base: str, top: str, exclude: frozenset[str]
) -> tuple[Iterator[tuple[str, _Side, _Side]], bool, list[str]]:
    before, stopped_before, unread_before = walk(base)
    after, stopped_after, unread_after = walk(top, open_up=True)

    def changes() -> Iterator[tuple[str, _Side, _Side]]:
        for name in sorted((before.keys() | after.keys()) - exclude):
            old, new = _Side(base, name, before.get(name)), _Side(top, name, after.get(name))
            try:
                if old.differs(new):
                    yield name, old, new
            except OSError:
                yield name, old, new

    unread = sorted(set(unread_before) | set(unread_after))
    return changes(), stopped_before or stopped_after, unread


class _OutOfTime(Exception):
    """The diff's CPU time is spent."""


def _expire(*_: object) -> None:
    raise _OutOfTime


def _timed(work: Callable[[], str], seconds: float) -> tuple[str | None, float]:
    """``work()`` within ``seconds`` of this process's CPU time (None past them), and the
    seconds left. From the main thread only (a signal)."""
    if seconds <= 0:
        return None, 0.0
    previous = signal.signal(signal.SIGVTALRM, _expire)
    signal.setitimer(signal.ITIMER_VIRTUAL, seconds)
    done: str | None = None
    try:
        done = work()
    except _OutOfTime:
        pass
    finally:
        left = signal.setitimer(signal.ITIMER_VIRTUAL, 0)[0]
        signal.signal(signal.SIGVTALRM, previous)
    return done, left if done is not None else 0.0


def diff(
    base: str,
    top: str,
    budget: int = DIFF_BUDGET,
    seconds: float = DIFF_SECONDS,
    exclude: frozenset[str] = frozenset(),
) -> str:
    """The unified diff of ``base`` against ``top`` (``a/``, ``b/`` prefixes, files in
    order), at most ``budget`` bytes of UTF-8 and ``seconds`` of CPU."""
    changes, stopped, unread = _changed(base, top, exclude)
    room, allowed = budget - NOTE_ROOM, seconds
    parts: list[str] = []
    left_out: list[str] = []
    more = 0
    for name, old, new in changes:
        if left_out or room <= 0 or seconds <= 0:
            if len(left_out) < LISTED:
                left_out.append(clip(name))
            else:
                more += 1
            continue
        try:
            done, seconds = _timed(lambda: _file_diff(name, old, new), seconds)  # noqa: B023
        except OSError as exc:
            done = f"File {quote(name)} {_sizes(old, new)}, unreadable: {exc.strerror}\n"
        part = done or (
            f"Slow diff of {quote(name)}: file {_sizes(old, new)}, not shown (the diff's "
            "CPU time is spent)\n"
        )
        size = len(part.encode(errors="surrogateescape"))
        if size > room:
            left_out.append(clip(name))
            continue
        parts.append(part)
        room -= size
    if left_out:
        count = len(left_out) + more
        parts.append(
            f"[diff stopped at its budget ({budget:,} bytes, {allowed:g} s of CPU): "
            f"{count:,} more changed "
            f"file{'s' if count != 1 else ''} not shown: {', '.join(left_out)}"
            + (f" and {more:,} more" if more else "")
            + "]\n"
        )
    for name in unread[:LISTED]:
        parts.append(f"[not compared: {clip(name)} (unreadable)]\n")
    if len(unread) > LISTED:
        parts.append(f"[not compared: {len(unread) - LISTED:,} more (unreadable)]\n")
    if stopped:
        parts.append(
            f"[only the first {MAX_ENTRIES:,} entries (files and folders) of each tree "
            "were compared]\n"
        )
    return "".join(parts)
