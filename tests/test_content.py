"""Content blocks in requests, responses and recordings: a text-only request is what it
always was (its key included), every block kind round-trips, and a recording's blocks are
checked as hostile input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_prompteval.core.content import (
    Image,
    OtherBlock,
    RedactedThinking,
    Thinking,
    ToolResult,
    ToolUse,
    block_from_api,
    block_to_api,
)
from pytest_prompteval.core.errors import PromptevalError
from pytest_prompteval.core.request import Message, Request
from pytest_prompteval.core.response import Response
from pytest_prompteval.providers.recording_file import UnreadableRecording, parse

ROOT = Path(__file__).resolve().parents[1]


def test_a_text_only_request_keeps_the_key_it_had_before_blocks() -> None:
    request = Request.create(
        "claude-haiku-4-5",
        [Message("user", ("Explain.", '{"code": "x"}')), Message("assistant", ("Sure:",))],
        "You are an expert.",
        max_tokens=100,
        temperature=0.0,
    )
    # computed by the code before content blocks existed
    assert request.key() == "6e09c6f97350d0fef33088107c2cbe8fd7c2433617a2af9bc48a0c90ee3e13dd"
    assert request.key(1) == "060a1166b3f54b0732f419705a46d0d25b408121fd51553d591f87e030fb441b"


@pytest.mark.parametrize(
    "folder", ["prompt_recordings", "examples/structured/prompt_recordings"], ids=str
)
def test_every_committed_recording_still_hashes_to_its_name(folder: str) -> None:
    paths = sorted((ROOT / folder).glob("*.json"))
    assert paths
    for path in paths:
        data = json.loads(path.read_text())
        assert Request.from_api(data["request"]).key(data["sample"]) == path.stem


CONVERSATION: dict[str, Any] = {
    "model": "claude-haiku-4-5",
    "max_tokens": 64,
    "tools": [{"type": "bash_20250124", "name": "bash"}],
    "messages": [
        {"role": "user", "content": [{"type": "text", "text": "Look it up."}]},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "I should look.", "signature": "c2ln"},
                {"type": "redacted_thinking", "data": "ZW5j"},
                {"type": "text", "text": "Looking."},
                {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"id": "A-1"}},
                {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search",
                 "input": {"query": "x"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "not found",
                 "is_error": True},
                {"type": "tool_result", "tool_use_id": "toolu_2",
                 "content": [{"type": "text", "text": "ok"},
                             {"type": "image", "source": {"type": "url", "url": "http://x/y.png"}}]},
            ],
        },
    ],
}  # fmt: skip


def test_every_block_kind_round_trips_unchanged() -> None:
    request = Request.from_api(CONVERSATION)
    assert request.to_api() == CONVERSATION
    assistant, results = request.messages[1].content, request.messages[2].content
    assert assistant[0] == Thinking("I should look.", "c2ln")
    assert assistant[1] == RedactedThinking("ZW5j")
    assert assistant[3] == ToolUse.of("toolu_1", "lookup", {"id": "A-1"})
    assert isinstance(assistant[4], OtherBlock)
    assert results[0] == ToolResult("toolu_1", "not found", is_error=True)
    nested = results[1]
    assert isinstance(nested, ToolResult) and isinstance(nested.content, tuple)
    assert isinstance(nested.content[1], Image) and nested.text == "ok"
    assert request.messages[1].text == "Looking."
    # the same conversation is the same key, whichever order its keys were written in
    assert Request.from_api(json.loads(json.dumps(CONVERSATION))).key() == request.key()


def _recording(request: Request, response: dict[str, Any]) -> bytes:
    record = {
        "format": 1,
        "key": request.key(),
        "sample": 0,
        "request": request.to_api(),
        "response": response,
    }
    return json.dumps(record).encode()


def test_a_recording_with_a_tool_use_block_reads_back_whole() -> None:
    request = Request.from_api(CONVERSATION)
    answer = Response(
        text="Refunding.",
        model="claude-haiku-4-5",
        stop_reason="tool_use",
        content=("Refunding.", ToolUse.of("toolu_9", "refund", {"amount": 42.0})),
    )
    read = parse(_recording(request, answer.to_json()), Path("r.json"), request.key())
    assert read.response == answer and read.response.blocks == answer.content


def test_a_text_only_answer_is_recorded_as_before() -> None:
    answer = Response(text="hi", model="m")
    assert "content" not in answer.to_json() and answer.blocks == ("hi",)


@pytest.mark.parametrize(
    ("content", "why"),
    [
        ([{"type": "tool_use", "id": "t", "name": "f", "input": "rm -rf /"}], "not an object"),
        ([{"type": "tool_use", "id": 1, "name": "f", "input": {}}], "'id' is not a string"),
        ([{"type": "tool_result", "tool_use_id": "t", "is_error": "yes"}], "'is_error'"),
        ([{"type": "<script>"}], "unknown content block type"),
        ([{"type": "text", "text": "x"}] * 5000, "more than 4096"),
        ("text", "expected"),
    ],
)
def test_a_hostile_recorded_content_makes_the_recording_unreadable(content: Any, why: str) -> None:
    request = Request.create("m", [Message("user", ("hi",))], None, max_tokens=5)
    bad = {"text": "", "model": "m", "content": content}
    with pytest.raises(UnreadableRecording, match="unreadable recording") as caught:
        parse(_recording(request, bad), Path("r.json"), request.key())
    assert why in str(caught.value)


def test_deeply_nested_tool_input_is_refused() -> None:
    deep: Any = {}
    for _ in range(100):
        deep = {"a": deep}
    with pytest.raises(PromptevalError, match="nested too deeply"):
        block_from_api({"type": "tool_use", "id": "t", "name": "f", "input": deep})


def test_text_blocks_are_plain_strings() -> None:
    assert block_to_api("hi") == {"type": "text", "text": "hi"}
    assert block_from_api({"type": "text", "text": "hi"}) == "hi"
