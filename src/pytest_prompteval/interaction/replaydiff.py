"""Why a replay misses a conversation's later step: the step's request set beside the
recorded requests of the same case, prompt version, sample and step, naming the first
difference (a tool's result, a user turn, the tools, the system prompt, a parameter)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_prompteval.core.request import Request
from pytest_prompteval.providers.base import CallContext
from pytest_prompteval.providers.recording_file import Recording, read_all

SHOWN = 80


def _shown(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return repr(text if len(text) <= SHOWN else text[: SHOWN - 3] + "...")


def _steps(messages: Sequence[Any]) -> int:
    return sum(isinstance(m, Mapping) and m.get("role") == "assistant" for m in messages)


def what_changed(root: Any, asked: Request, context: CallContext) -> str | None:
    """The first difference from the latest recording of this step of the conversation
    (``root``: the recordings' folder), or None when there is none to compare with."""
    now = asked.to_api()
    step = _steps(now["messages"])
    same = [
        r
        for _, r in read_all(root)
        if isinstance(r, Recording)
        and r.label is not None
        and r.label.case == context.case.id
        and r.label.prompt == context.prompt.version
        and r.label.purpose == context.purpose
        and r.sample == context.sample
        and _steps(r.request.get("messages", [])) == step
    ]
    if not same:
        return None
    latest = max(same, key=lambda r: r.label.recorded_at if r.label is not None else "")
    return first_difference(latest.request, now)


def first_difference(was: Mapping[str, Any], now: Mapping[str, Any]) -> str | None:
    tools = _tools(was.get("tools") or [], now.get("tools") or [])
    if tools:
        return tools
    if was.get("system") != now.get("system"):
        return "the system prompt changed"
    before, after = was.get("messages", []), now.get("messages", [])
    for index, (old, new) in enumerate(zip(before, after, strict=False)):
        if old != new:
            return _message(index, old, new, after)
    if len(before) != len(after):
        return f"the conversation has {len(after)} messages, its recording {len(before)}"
    for key in sorted(set(was) | set(now)):
        if key not in ("tools", "system", "messages") and was.get(key) != now.get(key):
            recorded, asked = _shown(was.get(key)), _shown(now.get(key))
            return f"parameter {key} changed: recorded {recorded}, now {asked}"
    return None


def _tools(was: Sequence[Any], now: Sequence[Any]) -> str | None:
    old = {t.get("name"): t for t in was if isinstance(t, Mapping)}
    new = {t.get("name"): t for t in now if isinstance(t, Mapping)}
    for name in new:
        if name not in old:
            return f"the tools changed: {name!r} added"
    for name in old:
        if name not in new:
            return f"the tools changed: {name!r} removed"
        if old[name] != new[name]:
            return f"the tools changed: {name!r}'s definition"
    return "the tools' order changed" if list(old) != list(new) else None


def _message(index: int, old: Any, new: Any, messages: Sequence[Any]) -> str:
    role = new.get("role") if isinstance(new, Mapping) else None
    if role != "user":
        return f"message {index} (the agent's) differs from its recording"
    old_blocks, new_blocks = old.get("content") or [], new.get("content") or []
    calls = {
        b.get("id"): b
        for b in (messages[index - 1].get("content") or [] if index else [])
        if isinstance(b, Mapping) and b.get("type") == "tool_use"
    }
    for was, block in zip(old_blocks, new_blocks, strict=False):
        if was == block:
            continue
        if isinstance(block, Mapping) and block.get("type") == "tool_result":
            call = calls.get(block.get("tool_use_id"), {})
            what = f"{call.get('name', '?')}({json.dumps(call.get('input', {}), sort_keys=True)})"
            if was.get("is_error", False) != block.get("is_error", False):
                error = bool(block.get("is_error"))
                return f"the result of tool call {what} changed: is_error is now {error}"
            return (
                f"the result of tool call {what} changed: recorded "
                f"{_shown(was.get('content'))}, now {_shown(block.get('content'))}"
            )
        recorded, asked = _shown(_text(old_blocks)), _shown(_text(new_blocks))
        return f"a user turn changed: recorded {recorded}, now {asked}"
    return (
        f"the user's message {index} has {len(new_blocks)} blocks, its recording {len(old_blocks)}"
    )


def _text(blocks: Sequence[Any]) -> str:
    return "".join(b.get("text", "") for b in blocks if isinstance(b, Mapping))
