"""Text from files and model answers made safe for a terminal, a CI log, Markdown and HTML.

A hostile answer or case file must not clear the screen (``ESC[2J``), retitle the window,
reorder what a reader sees (bidirectional overrides), print a line that GitHub Actions runs
as a workflow command (``::error file=...::`` at a line's start, or the older ``##[error]``,
which the runner finds anywhere in a line), or, in a step summary, open an HTML comment that
hides the rest of it or close the code fence it stands in. Control characters (C0 but tab and
newline, DEL, C1, the Unicode line separators, bidirectional overrides and marks) are shown as
escapes; continuation lines are indented; a line that would start a command, and every
``##[``, gets a backslash. Every output goes through here: ``safe_text``/``safe_line`` for the
terminal and logs, ``md_text``/``md_code``/``md_fence`` for Markdown, ``html_text`` for HTML,
``safe_json`` for JSON printed to a log; ``SafeStream`` holds a whole command's output to the
same rules, whatever printed it.
"""

from __future__ import annotations

import html
import json
import re
from typing import IO, Any

_CONTROL = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]"
)
_COMMAND = re.compile(r"^(\s*)::")
#: a line's first colon, passed on alone (a flush): the next part may bring the second
_HALF_COMMAND = re.compile(r"^(\s*):\Z")
_BACKTICKS = re.compile("`+")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _defuse(line: str) -> str:
    return _COMMAND.sub(r"\1\\::", line.replace("##[", "##\\["))


def safe_text(text: str, indent: str = "  ") -> str:
    """``text`` with control characters escaped and every line after the first indented by
    ``indent``; no line starts a workflow command."""
    lines = _CONTROL.sub(_escape, text).split("\n")
    return ("\n" + indent).join(_defuse(line) for line in lines)


def safe_line(text: str) -> str:
    """``text`` on one line: newlines escaped too (table cells, one-line messages)."""
    return _defuse(_CONTROL.sub(_escape, text).replace("\n", "\\n"))


#: Markdown's own syntax in text: ``[...](...)`` a link, ``![...](...)`` an image fetched
#: and drawn in the page (a forged badge or verdict); a backslash, so none escapes these
_MD_ESCAPES = str.maketrans({"\\": "\\\\", "[": "\\[", "]": "\\]", "|": "\\|"})


def md_text(text: object) -> str:
    """One line of Markdown text (a table cell, a list item): safe, no HTML (``<!--`` would
    hide the rest of the page), no link or image, no ``|`` ending a table cell."""
    return html.escape(safe_line(str(text)), quote=False).translate(_MD_ESCAPES)


def _fence_for(text: str, shortest: int) -> str:
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    return "`" * max(shortest, longest + 1)


def md_code(text: object) -> str:
    """An inline code span no backtick in ``text`` can close (and safe in a table cell)."""
    shown = safe_line(str(text)).replace("|", "\\|")
    fence = _fence_for(shown, 1)
    pad = " " if shown.startswith("`") or shown.endswith("`") else ""
    return f"{fence}{pad}{shown}{pad}{fence}"


def md_fence(lines: list[str], info: str = "") -> str:
    """A fenced code block: its fence is longer than any backtick run in ``lines``, so no
    line closes it (and a ``~~~`` line never closes a backtick fence)."""
    body = "\n".join(safe_line(line) for line in lines)
    fence = _fence_for(body, 3)
    return f"{fence}{info}\n{body}\n{fence}"


def html_text(text: object) -> str:
    """Text for an HTML page (a ``<pre>`` keeps its lines)."""
    return html.escape(safe_text(str(text), indent=""))


def safe_json(data: Any) -> str:
    """``data`` as indented JSON for a terminal or log: control characters are escaped by
    JSON itself (ASCII only), and ``##[``, inside a string wherever it is, becomes
    ``##\\u005b`` (the same text to a JSON reader)."""
    return json.dumps(data, indent=2, default=str).replace("##[", "##\\u005b")


class SafeStream:
    """A text stream that writes to ``stream`` under ``safe_text``'s rules: a command's whole
    output (stdout, stderr) goes through one, so no answer or file text it prints, through
    whatever code, controls the terminal or the CI log. Newlines and tabs pass; a line is
    passed on when it ends, or by ``flush`` (a prompt that waits for input), and a workflow
    command or ``##[`` split across two parts is still found (a line's first colon passed
    on alone gets its backslash: the next part may bring the second)."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream
        self._line = ""  # written, not passed on yet
        self._blank = True  # what was passed on of the current line is blank
        self._end = ""  # its last two characters

    def write(self, text: str) -> int:
        self._line += text
        *whole, self._line = self._line.split("\n")
        for line in whole:
            self._pass(line + "\n")
        return len(text)

    def _pass(self, part: str) -> None:
        escaped = _CONTROL.sub(_escape, part)
        if self._blank:  # a command may still start the line, or its first colon end a part
            escaped = _HALF_COMMAND.sub(r"\1\\:", _COMMAND.sub(r"\1\\::", escaped))
        # the two characters before are written already: a ``##[`` across parts gets its
        # backslash in this part
        escaped = (self._end + escaped).replace("##[", "##\\[")[len(self._end) :]
        self.stream.write(escaped)
        ended = escaped.endswith("\n")
        self._blank = ended or (self._blank and not escaped.strip())
        self._end = "" if ended else (self._end + escaped)[-2:]

    def flush(self) -> None:
        if self._line:
            self._pass(self._line)
            self._line = ""
        self.stream.flush()

    def __getattr__(self, name: str) -> Any:  # encoding, isatty, fileno: the stream's
        return getattr(self.stream, name)
