"""The files a patch names, read strictly: the verdict restores each of them from the
snapshot before it applies a case's ``test_patch``.

What ``git apply`` reads: ``diff --git`` headers (quoted or not; the only names of a mode
change, an empty new file or a binary patch), ``rename``/``copy`` ``from``/``to`` lines, and
``---``/``+++`` pairs; hunks are skipped by their line counts, so a removed line that
starts with ``-- `` is never taken for a header. Each name loses its first component
(``a/``, ``b/``: git's ``-p1``) and must then be a plain relative path inside the
repository: no ``..``, no absolute path, nothing in ``.git``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import PurePosixPath

_HUNK = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


class PatchError(ValueError):
    """A patch that cannot be read, or names a path outside the repository."""


def _unquote(text: str) -> tuple[str, str]:
    """A C-quoted name at the start of ``text`` (git's quoting), and what follows it."""
    out, at = bytearray(), 1
    while at < len(text):
        char = text[at]
        if char == '"':
            return out.decode("utf-8", errors="surrogateescape"), text[at + 1 :]
        if char == "\\":
            code = text[at + 1 : at + 2]
            if code in _ESCAPES:
                out.append(_ESCAPES[code])
                at += 2
                continue
            digits = text[at + 1 : at + 4]
            if re.fullmatch(r"[0-3][0-7]{2}", digits):
                out.append(int(digits, 8))
                at += 4
                continue
            raise PatchError(f"bad escape in quoted name {text!r:.80}")
        out += char.encode("utf-8", errors="surrogateescape")
        at += 1
    raise PatchError(f"unterminated quoted name {text!r:.80}")


def _name(text: str) -> str:
    """The name of a ``---``/``+++``/``rename`` line: quoted, or up to a tab."""
    if text.startswith('"'):
        name, rest = _unquote(text)
        if rest.strip():
            raise PatchError(f"text after the quoted name {text!r:.80}")
        return name
    return text.split("\t", 1)[0].rstrip("\r")


def _git_names(text: str) -> tuple[str, str] | None:
    """Both names of a ``diff --git`` header; None when unquoted names with spaces make it
    ambiguous (the ``---``/``+++`` or ``rename`` lines then name the files)."""
    text = text.rstrip("\r")
    if text.startswith('"'):
        old, rest = _unquote(text)
        rest = rest.lstrip(" ")
        if rest.startswith('"'):
            new, tail = _unquote(rest)
            if tail.strip():
                raise PatchError(f"text after the names of {text!r:.80}")
            return old, new
        return old, rest
    if '"' in text:  # an unquoted first name and a quoted second one
        old, _, rest = text.partition(' "')
        return old, _unquote('"' + rest)[0]
    half = (len(text) - 1) // 2
    if len(text) % 2 == 1 and text[half] == " ":
        old, new = text[:half], text[half + 1 :]
        if old.split("/", 1)[-1] == new.split("/", 1)[-1]:
            return old, new
    parts = text.split(" ")
    return (parts[0], parts[1]) if len(parts) == 2 else None


def _inside(name: str, strip: bool) -> str:
    """``name`` without its first component (``strip``), checked to stay in the repository."""
    if "\0" in name or name.startswith("/"):
        raise PatchError(f"names a path outside the repository: {name!r:.120}")
    parts = PurePosixPath(name).parts
    if strip:
        if len(parts) < 2:
            raise PatchError(f"names {name!r:.120} without a prefix to strip (a/, b/)")
        parts = parts[1:]
    if not parts or any(p in ("..", ".git") for p in parts):
        raise PatchError(f"names a path outside the repository: {name!r:.120}")
    return "/".join(parts)


def hunk_header(line: str) -> tuple[int, int, int, int] | None:
    """A hunk header's old start and count, new start and count; None if it is none."""
    found = _HUNK.match(line)
    if found is None:
        return None
    start, count, new_start, new_count = found.groups()
    one = "1"  # a count left out is one line
    return int(start), int(count or one), int(new_start), int(new_count or one)


def name_of(text: str) -> str:
    """The name of a ``---``/``+++`` line, unquoted; as written when its quoting is bad."""
    try:
        return _name(text)
    except PatchError:
        return text


def _hunk(lines: Iterator[str], header: str) -> None:
    """Skip a hunk's lines, by the counts of its header."""
    counts = hunk_header(header)
    if counts is None:
        raise PatchError(f"bad hunk header {header!r:.80}")
    _, old, _, new = counts
    while old > 0 or new > 0:
        line = next(lines, None)
        if line is None:
            raise PatchError(f"the hunk {header!r:.80} ends early")
        kind = line[:1]
        if kind in (" ", "") or line in ("\r",):
            old, new = old - 1, new - 1
        elif kind == "-":
            old -= 1
        elif kind == "+":
            new -= 1
        elif kind != "\\":
            raise PatchError(f"the hunk {header!r:.80} ends early, at {line!r:.80}")
    if old < 0 or new < 0:
        raise PatchError(f"the hunk {header!r:.80} has more lines than it says")


def patch_paths(text: str) -> tuple[str, ...]:
    """Every repository path ``text`` names (old and new names), in order, once each."""
    names: dict[str, None] = {}
    lines = iter(text.split("\n"))
    previous: str | None = None
    binary = False
    files = 0
    for line in lines:
        if binary and not line.startswith("diff "):
            continue
        binary = False
        if line.startswith("diff --git "):
            files += 1
            both = _git_names(line[len("diff --git ") :])
            for name in both or ():
                names[_inside(name, True)] = None
        elif line.startswith(("rename from ", "rename to ", "copy from ", "copy to ")):
            names[_inside(_name(line.split(" ", 2)[2]), False)] = None
        elif line.startswith("+++ ") and previous is not None and previous.startswith("--- "):
            files += 1
            for side in (previous[4:], line[4:]):
                name = _name(side)
                if name != "/dev/null":
                    names[_inside(name, True)] = None
        elif line.startswith("@@ "):
            _hunk(lines, line)
        elif line.startswith("GIT binary patch"):
            binary = True
        previous = line
    if not files:
        raise PatchError("no file in it: expected a unified diff (diff --git, ---/+++)")
    return tuple(names)
