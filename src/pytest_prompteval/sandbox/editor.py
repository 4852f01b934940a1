"""Anthropic's text editor tool (``text_editor_20250728``), run inside a repository task's
sandbox by a process without privileges: ``view``, ``create``, ``str_replace``, ``insert``.

Paths are the model's: absolute under ``/repo`` or relative to it. A path that leaves the
copy, by its name or through a symlink, is refused in the result (the sandbox would stop a
write anyway; refusing says so instead of editing a file the task never meant). Results
carry the API's documented error texts, so a model reacts as it was trained to.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from typing import Any

#: Where the copy is shown in the sandbox.
REPO = "/repo"
#: What one result may hold, like bash's output.
MAX_TEXT = 100_000
#: Files bigger than this are not read into the editor (a model's edits are to source files).
MAX_FILE = 16 * 1024 * 1024
COMMANDS = ("view", "create", "str_replace", "insert")


class EditError(Exception):
    """A tool error: its text goes back to the model as the result, ``is_error`` set."""


def _inside(path: str, top: str) -> bool:
    return path == top or path.startswith(top + "/")


def resolve(path: Any, top: str = REPO) -> str:
    """The real path of ``path`` below ``top``; a path out of it is an EditError."""
    if not isinstance(path, str) or not path or "\0" in path:
        raise EditError("Error: path must be a non-empty string")
    named = os.path.normpath(os.path.join(top, path))
    real = os.path.realpath(named)
    if not _inside(named, top) or not _inside(real, os.path.realpath(top)):
        raise EditError(f"Error: {path} is outside {top}; only files under {top} can be used")
    return real


def _read(path: str) -> str:
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise EditError(f"Error: File not found: {path}") from None
    if not stat.S_ISREG(info.st_mode):
        raise EditError(f"Error: {path} is not a regular file")
    if info.st_size > MAX_FILE:
        raise EditError(f"Error: {path} is larger than {MAX_FILE} bytes")
    try:
        with open(path, encoding="utf-8", errors="surrogateescape", newline="") as file:
            return file.read()
    except PermissionError:
        raise EditError(f"Error: Permission denied. Cannot read {path}") from None


def _write(path: str, text: str) -> None:
    try:
        with open(path, "w", encoding="utf-8", errors="surrogateescape", newline="") as file:
            file.write(text)
    except PermissionError:
        raise EditError("Error: Permission denied. Cannot write to file.") from None
    except FileNotFoundError:
        raise EditError(f"Error: the folder of {path} does not exist") from None
    except OSError as exc:
        raise EditError(f"Error: cannot write {path}: {exc.strerror}") from None


def _bounded(text: str, limit: int = MAX_TEXT) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[output truncated: {len(text):,} characters, {limit:,} shown]"


def _numbered(text: str, first: int) -> str:
    lines = text.split("\n")
    if len(lines) > 1 and not lines[-1]:
        lines.pop()  # the end of the last line, not a line
    return "\n".join(f"{number:6}\t{line}" for number, line in enumerate(lines, first))


def _listing(top: str) -> str:
    """Files and folders up to two levels deep, hidden ones left out (as the API's own)."""
    found = [top]
    for depth in (1, 2):
        for folder in [p for p in found if p.count("/") == top.count("/") + depth - 1]:
            if not os.path.isdir(folder) or os.path.islink(folder):
                continue
            try:
                names = sorted(os.listdir(folder))
            except OSError:
                continue
            found += [os.path.join(folder, n) for n in names if not n.startswith(".")]
    shown = [p + ("/" if os.path.isdir(p) and not os.path.islink(p) else "") for p in found]
    return (
        f"Here are the files and directories up to 2 levels deep in {top}, excluding "
        "hidden items:\n" + "\n".join(shown)
    )


def _view(path: str, shown: str, view_range: Any) -> str:
    if os.path.isdir(path):
        if view_range is not None:
            raise EditError("Error: view_range is not allowed when path points to a directory")
        return _listing(path)
    text = _read(path)
    first = 1
    if view_range is not None:
        lines = text.split("\n")
        if (
            not isinstance(view_range, list)
            or len(view_range) != 2
            or not all(isinstance(n, int) and not isinstance(n, bool) for n in view_range)
        ):
            raise EditError("Error: view_range must be a list of two integers")
        first, last = view_range
        if not 1 <= first <= len(lines) or (last != -1 and not first <= last <= len(lines)):
            raise EditError(
                f"Error: Invalid view_range {view_range}: lines are 1 to {len(lines)}, "
                "and the end is -1 or not before the start"
            )
        text = "\n".join(lines[first - 1 :] if last == -1 else lines[first - 1 : last])
    return f"Here's the content of {shown} with line numbers:\n" + _numbered(text, first)


def _text(command: Mapping[str, Any], *names: str) -> str:
    for name in names:
        value = command.get(name)
        if isinstance(value, str):
            return value
    raise EditError(f"Error: Parameter `{names[0]}` is required for command: {command['command']}")


def run(command: Mapping[str, Any], top: str = REPO, max_characters: int | None = None) -> str:
    """One editor command; its result text, or an EditError whose text is the result.
    ``max_characters``: the tool definition's bound on what ``view`` shows."""
    name = command.get("command")
    if name not in COMMANDS:
        raise EditError(
            f"Error: Unrecognized command {name!r}. The allowed commands are: "
            + ", ".join(COMMANDS)
        )
    shown = command.get("path")
    path = resolve(shown, top)
    if name == "view":
        limit = min(max_characters or MAX_TEXT, MAX_TEXT)
        return _bounded(_view(path, str(shown), command.get("view_range")), limit)
    if name == "create":
        if os.path.isdir(path):
            raise EditError(f"Error: {shown} is a directory")
        _write(path, _text(command, "file_text"))
        return f"File created successfully at: {shown}"
    text = _read(path)
    if name == "str_replace":
        old = _text(command, "old_str")
        new = command.get("new_str", "")
        if not isinstance(new, str):
            raise EditError("Error: new_str must be a string")
        count = text.count(old) if old else 0
        if count == 0:
            raise EditError(
                "Error: No match found for replacement. Please check your text and try again."
            )
        if count > 1:
            raise EditError(
                f"Error: Found {count} matches for replacement text. Please provide more "
                "context to make a unique match."
            )
        _write(path, text.replace(old, new, 1))
        return "Successfully replaced text at exactly one location."
    # insert: the docs name the text new_str, the models send insert_text
    new = _text(command, "insert_text", "new_str")
    line = command.get("insert_line")
    lines = text.splitlines(keepends=True)
    if not isinstance(line, int) or isinstance(line, bool) or not 0 <= line <= len(lines):
        raise EditError(
            f"Error: Invalid `insert_line` parameter: {line}. It should be within the range "
            f"of lines of the file: [0, {len(lines)}]"
        )
    before = "".join(lines[:line])
    if before and not before.endswith("\n"):
        before += "\n"
    added = new if new.endswith("\n") or line == len(lines) else new + "\n"
    _write(path, before + added + "".join(lines[line:]))
    return f"Text inserted at line {line} of {shown}."
