"""Anthropic's text editor tool (``text_editor_20250728``), run inside a repository task's
sandbox by a process without privileges: ``view``, ``create``, ``str_replace``, ``insert``.

Paths are the model's: absolute under ``/repo`` or relative to it. A path that leaves the
copy, by its name or through a symlink, is refused in the result (the sandbox would stop a
write anyway; refusing says so instead of editing a file the task never meant); the path
checked is then opened from ``/repo`` down without following any link, so a link swapped in
after the check (by the agent's processes, which run on) is refused too. Results
carry the API's documented error texts, so a model reacts as it was trained to.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping

TYPE_CHECKING = False  # typing for the checker only: the repository sandbox imports this
if TYPE_CHECKING:
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


def _open(path: str, top: str, flags: int) -> int:
    """``path`` (a real path below ``top``, from ``resolve``) opened from ``top`` down, each
    folder on the way and the file itself without following a link: a link put in place
    since ``resolve`` looked (by the agent's process in the background) is refused, never
    followed out of the copy (to ``/proc/self/fd``, say)."""
    parts = [p for p in path[len(os.path.realpath(top)) :].split("/") if p]
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in parts[:-1]:
            inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = inner
        # non-blocking: a FIFO put in place opens at once (and is refused)
        last = flags | os.O_NOFOLLOW | os.O_NONBLOCK
        return os.open(parts[-1] if parts else ".", last, 0o666, dir_fd=fd)
    finally:
        os.close(fd)


def _opened(path: str, top: str, flags: int) -> int:
    try:
        return _open(path, top, flags)
    except FileNotFoundError:
        if flags & os.O_CREAT:
            raise EditError(f"Error: the folder of {path} does not exist") from None
        raise EditError(f"Error: File not found: {path}") from None
    except IsADirectoryError:
        raise EditError(f"Error: {path} is a directory") from None
    except PermissionError:
        if flags & os.O_CREAT:
            raise EditError("Error: Permission denied. Cannot write to file.") from None
        raise EditError(f"Error: Permission denied. Cannot read {path}") from None
    except OSError as exc:  # a link or a file on the way: ELOOP, ENOTDIR
        raise EditError(f"Error: cannot open {path}: {exc.strerror}") from None


def _regular(fd: int, path: str) -> os.stat_result:
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        raise EditError(f"Error: {path} is not a regular file")
    return info


def _contents(fd: int, path: str) -> str:
    """The text of the open file ``fd``, at most ``MAX_FILE`` bytes of it."""
    if _regular(fd, path).st_size > MAX_FILE:
        raise EditError(f"Error: {path} is larger than {MAX_FILE} bytes")
    with open(fd, "rb", closefd=False) as file:
        data = file.read(MAX_FILE + 1)  # it may have grown since
    if len(data) > MAX_FILE:
        raise EditError(f"Error: {path} is larger than {MAX_FILE} bytes")
    return data.decode("utf-8", errors="surrogateescape")


def _read(path: str, top: str) -> str:
    fd = _opened(path, top, os.O_RDONLY)
    try:
        return _contents(fd, path)
    finally:
        os.close(fd)


def _write(path: str, top: str, text: str) -> None:
    fd = _opened(path, top, os.O_WRONLY | os.O_CREAT)
    try:
        _regular(fd, path)  # emptied only once known to be a file: a FIFO stays as it is
        os.ftruncate(fd, 0)
        with open(fd, "wb", closefd=False) as file:
            file.write(text.encode("utf-8", errors="surrogateescape"))
    except OSError as exc:
        raise EditError(f"Error: cannot write {path}: {exc.strerror}") from None
    finally:
        os.close(fd)


def _bounded(text: str, limit: int = MAX_TEXT) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[output truncated: {len(text):,} characters, {limit:,} shown]"


def _numbered(text: str, first: int) -> str:
    lines = text.split("\n")
    if len(lines) > 1 and not lines[-1]:
        lines.pop()  # the end of the last line, not a line
    return "\n".join(f"{number:6}\t{line}" for number, line in enumerate(lines, first))


def _names(fd: int) -> list[tuple[str, bool]]:
    """The names in the open folder ``fd`` but hidden ones, sorted, and whether each is a
    folder (a link to one is not)."""
    try:
        with os.scandir(fd) as found:
            listed = [(e.name, e.is_dir(follow_symlinks=False)) for e in found]
    except OSError:
        return []
    return sorted((name, folder) for name, folder in listed if not name.startswith("."))


def _listing(fd: int, top: str) -> str:
    """Files and folders up to two levels deep, hidden ones left out (as the API's own);
    read from the open folder ``fd``, never through a link."""
    first = _names(fd)
    shown = [f"{top}/"] + [f"{top}/{name}" + ("/" if folder else "") for name, folder in first]
    for name, folder in first:
        if not folder:
            continue
        try:
            inner = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
        except OSError:
            continue
        try:
            shown += [f"{top}/{name}/{n}" + ("/" if f else "") for n, f in _names(inner)]
        finally:
            os.close(inner)
    return (
        f"Here are the files and directories up to 2 levels deep in {top}, excluding "
        "hidden items:\n" + "\n".join(shown)
    )


def _view(path: str, top: str, shown: str, view_range: Any) -> str:
    fd = _opened(path, top, os.O_RDONLY)
    try:
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            if view_range is not None:
                raise EditError("Error: view_range is not allowed when path points to a directory")
            return _listing(fd, path)
        text = _contents(fd, path)
    finally:
        os.close(fd)
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
        return _bounded(_view(path, top, str(shown), command.get("view_range")), limit)
    if name == "create":
        _write(path, top, _text(command, "file_text"))
        return f"File created successfully at: {shown}"
    text = _read(path, top)
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
        _write(path, top, text.replace(old, new, 1))
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
    _write(path, top, before + added + "".join(lines[line:]))
    return f"Text inserted at line {line} of {shown}."
