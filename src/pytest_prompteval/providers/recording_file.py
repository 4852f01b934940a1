"""A recording's file: what it holds (the request, its key and sample, the response, a label
saying what it was made for), written as stable JSON and read back checked as hostile input
(a file a pull request may change): bounded, plain JSON of the right types, made for the
very request its name says."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_prompteval.core.errors import PromptevalError
from pytest_prompteval.core.paths import MAX_RECORDING_BYTES, read_bounded
from pytest_prompteval.core.request import Request, canonical_json
from pytest_prompteval.core.response import Response
from pytest_prompteval.providers.labels import Label

FORMAT = 1


class UnreadableRecording(PromptevalError):
    """A recording that is not what this plugin writes: its item errors, the run goes on."""

    kind = "unreadable_recording"


@dataclass(frozen=True)
class Recording:
    key: str
    sample: int
    request: dict[str, Any]
    response: Response
    #: None for a recording made before labels
    label: Label | None


def recording_text(
    key: str,
    sample: int,
    origin: str,
    request: Request,
    response: Response,
    label: Label,
    note: str | None = None,
) -> str:
    """The file's text: sorted keys and indented, so that a change reads well in a diff."""
    record: dict[str, Any] = {
        "format": FORMAT,
        "key": key,
        "sample": sample,
        "origin": origin,
        "request": request.to_api(),
        "response": response.to_json(),
        "label": label.to_json(),
    }
    if note:
        record["note"] = note
    return json.dumps(record, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"


def load(path: Path, key: str | None = None, asked: Request | None = None) -> Recording:
    """The recording at ``path``, checked as ``Store.read`` does; ``asked``: the request
    looked up by ``key``, which a recording equal to it needs not be rebuilt from."""
    try:
        # a recording is its folder's own file: a link out of the folder is not replayed
        content = read_bounded(path, MAX_RECORDING_BYTES, path.parent)
    except PromptevalError as exc:
        raise UnreadableRecording(
            f"unreadable recording: {exc.message}; delete it to record again", path
        ) from None
    return parse(content, path, key, asked)


def parse(
    content: bytes, path: Path, key: str | None = None, asked: Request | None = None
) -> Recording:
    """A recording's bytes (named ``path`` in errors), checked as ``load`` does."""
    try:
        data = json.loads(content, parse_constant=_no_constant)
        return _checked(data, key, asked)
    except RecursionError:
        why = "JSON nested too deeply"
    except (PromptevalError, ValueError) as exc:
        why = exc.message if isinstance(exc, PromptevalError) else str(exc)
    raise UnreadableRecording(f"unreadable recording: {why}; delete it to record again", path)


def read_all(root: Path) -> list[tuple[Path, Recording | UnreadableRecording]]:
    """Every recording in ``root`` by file name, or why it cannot be read."""
    found: list[tuple[Path, Recording | UnreadableRecording]] = []
    for path in sorted(root.glob("*.json")) if root.is_dir() else ():
        if path.name.startswith("."):
            continue  # a write in progress
        try:
            found.append((path, load(path, path.stem)))
        except UnreadableRecording as exc:
            found.append((path, exc))
    return found


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _milliseconds(value: Any) -> bool:
    number = isinstance(value, int | float) and not isinstance(value, bool)
    return number and math.isfinite(value) and value >= 0


def _text(value: Any) -> bool:
    return isinstance(value, str)


def _optional_text(value: Any) -> bool:
    return value is None or isinstance(value, str)


# What a recording's response may hold, field by field (``text`` and ``model`` required).
_FIELDS: dict[str, Callable[[Any], bool]] = {
    "text": _text,
    "model": _text,
    "stop_reason": _optional_text,
    "input_tokens": _count,
    "output_tokens": _count,
    "cache_read_tokens": _count,
    "cache_write_tokens": _count,
    "latency_ms": _milliseconds,
    "request_id": _optional_text,
    "message_id": _optional_text,
    "tool_input": lambda value: value is None or isinstance(value, dict),
    "batch": lambda value: isinstance(value, bool),
    "content": lambda value: isinstance(value, list),  # its blocks are checked as it is read
    "tools_ran": lambda value: isinstance(value, list),
}


def _checked(data: Any, key: str | None, asked: Request | None = None) -> Recording:
    if not isinstance(data, dict):
        raise ValueError("expected a JSON object")
    response, sample, request = data.get("response"), data.get("sample"), data.get("request")
    if not isinstance(response, dict):
        raise ValueError("'response': expected an object")
    if isinstance(sample, bool) or not isinstance(sample, int) or sample < 0:
        raise ValueError("'sample': expected a whole number >= 0")
    if not isinstance(request, dict):
        raise ValueError("'request': expected an object")
    if key is not None:
        if data.get("key") != key:
            raise ValueError("its 'key' is not its file name")
        # a recording of the very request asked, in the very form the key hashes, needs no
        # rebuilding to be known as its own
        if asked is None or asked.key(sample) != key or canonical_json(request) != asked.api_json:
            _made_for(request, sample, key)
    for name, valid in _FIELDS.items():
        if name not in response:
            if name in ("text", "model"):
                raise ValueError(f"'response.{name}': missing")
        elif not valid(response[name]):
            value = response[name]
            raise ValueError(f"'response.{name}': unexpected {type(value).__name__} {value!r:.40}")
    label = Label.from_json(data["label"]) if "label" in data else None
    try:
        answer = Response.from_json(response)
    except PromptevalError as exc:
        raise ValueError(f"'response': {exc.message}") from None
    return Recording(str(data.get("key")), sample, request, answer, label)


def _made_for(request: dict[str, Any], sample: int, key: str) -> None:
    try:
        made_for = Request.from_api(request).key(sample)
    except (PromptevalError, LookupError, TypeError, AttributeError):
        raise ValueError("'request' is not a Messages API request") from None
    if made_for != key:
        raise ValueError("its 'request' does not hash to its key")
