"""An agent's diff as the pages show it: files, hunks, lines added and removed.

The diff is the verdict's (``sandbox/treediff``: ``---``/``+++`` pairs, ``@@`` hunks, and
lines of its own for binary, large or left-out files) as a result keeps it, so hostile: the
agent chose every line. Hunks are read by their header's counts, so a removed line that
starts with ``-- `` is never taken for a file header; whatever is not understood is shown
as a note, never dropped, and nothing here fails on any text. One pass, linear in the size.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pytest_prompteval.core.patches import hunk_header, name_of


@dataclass(frozen=True)
class Line:
    #: add | del | ctx | note (``\ No newline at end of file``)
    kind: str
    text: str
    old: int | None = None
    new: int | None = None


@dataclass
class Hunk:
    header: str
    lines: list[Line] = field(default_factory=list)


@dataclass
class FileDiff:
    """One file's change; a line of the diff that is no file's (a binary file, the note
    of what the budget left out) is a ``FileDiff`` with ``note`` set and no hunks."""

    name: str
    #: added | deleted | changed | note
    status: str = "changed"
    hunks: list[Hunk] = field(default_factory=list)
    added: int = 0
    removed: int = 0


def _strip(name: str) -> str:
    """A/b prefixes off (git's -p1)."""
    return name[2:] if name.startswith(("a/", "b/")) else name


def parse(diff: str) -> list[FileDiff]:
    files: list[FileDiff] = []
    lines = diff.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    at = 0
    current: FileDiff | None = None
    while at < len(lines):
        line = lines[at]
        after = lines[at + 1] if at + 1 < len(lines) else ""
        counts = hunk_header(line) if current is not None else None
        if line.startswith("--- ") and after.startswith("+++ "):
            old, new = name_of(line[4:]), name_of(after[4:])
            status = "added" if old == "/dev/null" else "deleted" if new == "/dev/null" else ""
            current = FileDiff(_strip(old if new == "/dev/null" else new), status or "changed")
            files.append(current)
            at += 2
        elif current is not None and counts is not None:
            at = _hunk(lines, at, counts, current)
        else:
            files.append(FileDiff(line, "note"))
            current = None
            at += 1
    return files


def _hunk(lines: list[str], at: int, counts: tuple[int, int, int, int], into: FileDiff) -> int:
    """The hunk at ``lines[at]`` into ``into``, by its header's counts: the index after it."""
    old_at, old, new_at, new = counts
    hunk = Hunk(lines[at])
    into.hunks.append(hunk)
    at += 1
    while at < len(lines) and (old > 0 or new > 0 or lines[at].startswith("\\")):
        line = lines[at]
        kind = line[:1]
        if kind == "-":
            hunk.lines.append(Line("del", line[1:], old=old_at))
            old, old_at, into.removed = old - 1, old_at + 1, into.removed + 1
        elif kind == "+":
            hunk.lines.append(Line("add", line[1:], new=new_at))
            new, new_at, into.added = new - 1, new_at + 1, into.added + 1
        elif kind == "\\":
            hunk.lines.append(Line("note", line))
        else:  # context (an empty line too, as some tools write it)
            hunk.lines.append(Line("ctx", line[1:], old=old_at, new=new_at))
            old, new, old_at, new_at = old - 1, new - 1, old_at + 1, new_at + 1
        at += 1
    return at
