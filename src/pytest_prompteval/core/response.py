"""What a provider returns for one request sample."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

from pytest_prompteval.core.content import (
    MAX_BLOCKS,
    Block,
    RanTool,
    block_to_api,
    blocks_from_api,
)
from pytest_prompteval.core.errors import PromptevalError
from pytest_prompteval.core.request import Message


@dataclass(frozen=True)
class Response:
    text: str
    model: str
    stop_reason: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    latency_ms: float = 0.0
    request_id: str | None = None
    message_id: str | None = None
    #: The input of the first tool call in the answer (structured output), if any.
    tool_input: dict[str, Any] | None = None
    #: Answered through the Message Batches API (billed at half price).
    batch: bool = False
    #: The answer's blocks in order, when it holds more than text (tool calls, thinking);
    #: empty for a text-only answer, whose one block is ``text``.
    content: tuple[Block, ...] = ()
    #: what the project's own tools gave the answer's calls, recorded with it
    tools_ran: tuple[RanTool, ...] = ()
    #: a ``python:`` provider's whole conversation (an app's own agent): the item's
    #: trajectory is read from it
    transcript: tuple[Message, ...] = ()

    @property
    def blocks(self) -> tuple[Block, ...]:
        """The answer's content blocks, as the next request sends them back."""
        if self.content:
            return self.content
        return (self.text,) if self.text else ()

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        if self.content:
            data["content"] = [block_to_api(b) for b in self.content]
        else:
            del data["content"]  # a text-only answer's recording reads as it always has
        if self.tools_ran:
            data["tools_ran"] = [t.to_json() for t in self.tools_ran]
        else:
            del data["tools_ran"]
        if self.transcript:
            data["transcript"] = [
                {"role": m.role, "content": [block_to_api(b) for b in m.content]}
                for m in self.transcript
            ]
        else:
            del data["transcript"]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Response:
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        if "content" in values:
            values["content"] = blocks_from_api(values["content"])
        if "tools_ran" in values:
            ran = values["tools_ran"]
            if not isinstance(ran, list) or len(ran) > MAX_BLOCKS:
                raise PromptevalError("'tools_ran' is not a list of tool outcomes")
            values["tools_ran"] = tuple(RanTool.from_json(t) for t in ran)
        if "transcript" in values:
            values["transcript"] = transcript_from_api(values["transcript"])
        return cls(**values)


def transcript_from_api(messages: Any) -> tuple[Message, ...]:
    """A conversation's messages as the API writes them ({role, content}), checked."""
    if not isinstance(messages, list) or len(messages) > MAX_BLOCKS:
        raise PromptevalError("a transcript is a list of messages {role, content}")
    found = []
    for index, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role not in ("user", "assistant"):
            raise PromptevalError(
                f"transcript message {index}: expected {{role: user | assistant, content}}"
            )
        try:
            found.append(Message(role, blocks_from_api(message.get("content"))))
        except PromptevalError as exc:
            raise PromptevalError(f"transcript message {index}: {exc.message}") from None
    return tuple(found)


def only_text(blocks: tuple[Block, ...]) -> bool:
    return all(isinstance(b, str) for b in blocks)
