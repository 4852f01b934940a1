"""A message's content blocks, as the Messages API has them, and the seam tools run through.

A text block is a plain ``str`` (so a text-only request serialises exactly as before and
every recording made before blocks still has its key); the other blocks are frozen values:
``ToolUse``, ``ToolResult`` (its content a string or blocks; ``is_error``), ``Thinking`` and
``RedactedThinking`` (passed back unchanged, signature included, as the API requires in a
tool conversation) and ``Image``. ``block_from_api`` reads one block as the API (or a
recording, which may be hostile) gives it, checked; ``block_to_api`` writes it back.

Tools run through one seam, ``ToolExecutor``: ``(name, input) -> ToolOutcome``. The tool
loop (``interaction/``) asks it for every ``tool_use`` block Claude sends; the case's
scripted results and the project's Python tools are executors, and so is anything that
runs a real tool (a sandboxed editor or shell): plug it in by passing such a callable. An
executor returns ``ToolOutcome(content, is_error)``; it raises ``PromptevalError`` only for
a call it cannot answer at all (the item then fails, naming the call).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pytest_prompteval.core.errors import PromptevalError

#: Blocks one message, or one tool result, may hold: the API's own limits are far below.
MAX_BLOCKS = 4096
#: How deep a tool result's blocks (or a tool input's JSON) may nest in a recording.
MAX_DEPTH = 64


def _is_kind(kind: str) -> bool:
    """A block type as the API names them: lower-case ASCII words joined by ``_``."""
    bare = kind.replace("_", "")
    return 0 < len(kind) <= 64 and bare.isascii() and bare.isalnum() and kind == kind.lower()


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True)
class ToolUse:
    id: str
    name: str
    #: the call's input as canonical JSON (a mapping), so the block stays hashable
    input_json: str = "{}"

    @property
    def input(self) -> dict[str, Any]:
        value: dict[str, Any] = json.loads(self.input_json)
        return value

    @classmethod
    def of(cls, id: str, name: str, input: Mapping[str, Any]) -> ToolUse:
        return cls(id, name, _json(dict(input)))


@dataclass(frozen=True)
class ToolResult:
    tool_use_id: str
    content: str | tuple[Block, ...] = ""
    is_error: bool = False

    @property
    def text(self) -> str:
        if isinstance(self.content, str):
            return self.content
        return "".join(b for b in self.content if isinstance(b, str))


@dataclass(frozen=True)
class Thinking:
    thinking: str
    signature: str


@dataclass(frozen=True)
class RedactedThinking:
    data: str


@dataclass(frozen=True)
class Image:
    #: the image's ``source`` (base64 data or a URL) as canonical JSON
    source_json: str


@dataclass(frozen=True)
class OtherBlock:
    """A block of a kind the loop only passes back (a server tool's use and result)."""

    api_json: str


Block = str | ToolUse | ToolResult | Thinking | RedactedThinking | Image | OtherBlock


@dataclass(frozen=True)
class ToolOutcome:
    """What a tool gave back: its text, and whether it is an error (``is_error``)."""

    content: str
    is_error: bool = False


@dataclass(frozen=True)
class RanTool:
    """A project tool's outcome for one call, recorded with the answer that made the call,
    so that a replay never runs the project's code."""

    name: str
    input_json: str
    outcome: ToolOutcome

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "input": json.loads(self.input_json),
            "content": self.outcome.content,
            "is_error": self.outcome.is_error,
        }

    @classmethod
    def from_json(cls, value: Any) -> RanTool:
        if not isinstance(value, Mapping) or set(value) != {"name", "input", "content", "is_error"}:
            raise PromptevalError("a tool outcome is {name, input, content, is_error}")
        name, given, content, error = (value[k] for k in ("name", "input", "content", "is_error"))
        if not (isinstance(name, str) and isinstance(content, str) and isinstance(error, bool)):
            raise PromptevalError("a tool outcome's name or content is not text")
        if not isinstance(given, Mapping):
            raise PromptevalError("a tool outcome's input is not an object")
        _depth(given)
        return cls(name, _json(dict(given)), ToolOutcome(content, error))


#: The one seam every tool runs through: (tool name, its input) -> its outcome.
ToolExecutor = Callable[[str, Mapping[str, Any]], ToolOutcome]


def block_to_api(block: Block) -> dict[str, Any]:
    if isinstance(block, str):
        return {"type": "text", "text": block}
    if isinstance(block, ToolUse):
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
    if isinstance(block, ToolResult):
        content: Any = block.content
        if not isinstance(content, str):
            content = [block_to_api(b) for b in content]
        api: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": block.tool_use_id,
            "content": content,
        }
        if block.is_error:
            api["is_error"] = True
        return api
    if isinstance(block, Thinking):
        return {"type": "thinking", "thinking": block.thinking, "signature": block.signature}
    if isinstance(block, RedactedThinking):
        return {"type": "redacted_thinking", "data": block.data}
    if isinstance(block, Image):
        return {"type": "image", "source": json.loads(block.source_json)}
    other: dict[str, Any] = json.loads(block.api_json)
    return other


def _field(block: Mapping[str, Any], name: str) -> str:
    value = block.get(name)
    if not isinstance(value, str):
        raise PromptevalError(f"{block.get('type')} block: {name!r} is not a string")
    return value


def _depth(value: Any, depth: int = 0) -> None:
    if depth > MAX_DEPTH:
        raise PromptevalError("content nested too deeply")
    if isinstance(value, Mapping):
        for item in value.values():
            _depth(item, depth + 1)
    elif isinstance(value, list):
        for item in value:
            _depth(item, depth + 1)


def block_from_api(block: Any, depth: int = 0) -> Block:
    """One content block as the API writes it (a string is a text block), checked."""
    if isinstance(block, str):
        return block
    if not isinstance(block, Mapping):
        raise PromptevalError(f"a content block is a mapping, not {type(block).__name__}")
    kind = block.get("type")
    if kind == "text":
        return _field(block, "text")
    if kind == "tool_use":
        given = block.get("input", {})
        if not isinstance(given, Mapping):
            raise PromptevalError("tool_use block: 'input' is not an object")
        _depth(given)
        return ToolUse.of(_field(block, "id"), _field(block, "name"), given)
    if kind == "tool_result":
        content = block.get("content", "")
        is_error = block.get("is_error", False)
        if not isinstance(is_error, bool):
            raise PromptevalError("tool_result block: 'is_error' is not true or false")
        if isinstance(content, list):
            if depth >= MAX_DEPTH or len(content) > MAX_BLOCKS:
                raise PromptevalError("tool_result block: too many or too deep blocks")
            content = tuple(block_from_api(b, depth + 1) for b in content)
        elif not isinstance(content, str):
            raise PromptevalError("tool_result block: 'content' is not a string or blocks")
        return ToolResult(_field(block, "tool_use_id"), content, is_error)
    if kind == "thinking":
        return Thinking(_field(block, "thinking"), _field(block, "signature"))
    if kind == "redacted_thinking":
        return RedactedThinking(_field(block, "data"))
    if kind == "image":
        source = block.get("source")
        if not isinstance(source, Mapping):
            raise PromptevalError("image block: 'source' is not an object")
        _depth(source)
        return Image(_json(dict(source)))
    if isinstance(kind, str) and _is_kind(kind):
        _depth(block)
        return OtherBlock(_json(dict(block)))
    raise PromptevalError(f"unknown content block type {kind!r:.40}")


def blocks_from_api(content: Any) -> tuple[Block, ...]:
    """A message's ``content`` (a string, or a list of blocks), checked and bounded."""
    if isinstance(content, str):
        return (content,)
    if not isinstance(content, list):
        raise PromptevalError(
            f"message content is a string or a list, not {type(content).__name__}"
        )
    if len(content) > MAX_BLOCKS:
        raise PromptevalError(f"more than {MAX_BLOCKS} content blocks in one message")
    return tuple(block_from_api(b) for b in content)


def tool_calls(blocks: tuple[Block, ...]) -> list[ToolUse]:
    return [b for b in blocks if isinstance(b, ToolUse)]


def text_of(blocks: tuple[Block, ...]) -> str:
    return "".join(b for b in blocks if isinstance(b, str))


def thinking_of(blocks: tuple[Block, ...]) -> str:
    """The thinking an answer showed (redacted thinking has none to show)."""
    return "\n\n".join(b.thinking for b in blocks if isinstance(b, Thinking))


def input_matches(wanted: Any, given: Any) -> bool:
    """Whether a tool call's input ``given`` holds ``wanted``: a mapping's keys as a subset,
    ``{regex: ...}`` searched (RE2) in a string, lists item by item, anything else equal
    (``true`` is not 1). A pattern applies to the model's string only: a ``{regex: ...}``
    mapping the model sent matches nothing (else it would satisfy any rule's pattern)."""
    if isinstance(wanted, Mapping):
        if set(wanted) == {"regex"}:
            from pytest_prompteval.core.patterns import pattern

            return (
                isinstance(given, str) and pattern(str(wanted["regex"])).search(given) is not None
            )
        return isinstance(given, Mapping) and all(
            k in given and input_matches(v, given[k]) for k, v in wanted.items()
        )
    if isinstance(wanted, list):
        return (
            isinstance(given, list)
            and len(wanted) == len(given)
            and all(input_matches(w, g) for w, g in zip(wanted, given, strict=True))
        )
    if isinstance(wanted, bool) or isinstance(given, bool):
        return type(wanted) is type(given) and wanted == given
    return bool(wanted == given)
