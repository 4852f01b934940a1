"""Text from files and model answers made safe for a terminal and a CI log.

A hostile answer or case file must not clear the screen (``ESC[2J``), retitle the window, or
print a line that GitHub Actions runs as a workflow command (``::error file=...::``, or the
older ``##[error]``). Control characters (C0 but tab and newline, DEL, C1, the Unicode line
separators and bidirectional overrides) are shown as escapes; continuation lines are
indented; a line that would still start a command gets a backslash in front.
"""

from __future__ import annotations

import re

_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_COMMAND = re.compile(r"^(\s*)(::|##\[)")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _defuse(line: str) -> str:
    return _COMMAND.sub(r"\1\\\2", line)


def safe_text(text: str, indent: str = "  ") -> str:
    """``text`` with control characters escaped and every line after the first indented by
    ``indent``; no line starts a workflow command."""
    lines = _CONTROL.sub(_escape, text).split("\n")
    return ("\n" + indent).join(_defuse(line) for line in lines)


def safe_line(text: str) -> str:
    """``text`` on one line: newlines escaped too (table cells, one-line messages)."""
    return _defuse(_CONTROL.sub(_escape, text).replace("\n", "\\n"))
