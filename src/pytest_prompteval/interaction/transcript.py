"""Your own agent under test: a ``python:`` provider may return the whole conversation its
app held (Anthropic-format messages, or the SDK's ``Message`` objects for the assistant's
turns), and the item's trajectory is read from it, so the same trajectory assertions grade
an agent built on any framework."""

from __future__ import annotations

from collections.abc import Sequence

from pytest_prompteval.core.content import ToolResult, thinking_of, tool_calls
from pytest_prompteval.core.request import Message
from pytest_prompteval.core.result import Step, ToolCall, Trajectory


def transcript_trajectory(messages: Sequence[Message], max_steps: int) -> Trajectory:
    """A step per assistant turn: its tool calls, answered by the results of the user turn
    after it (a call no result answers is shown with an empty result), and that turn's text
    as the user's turn."""
    trajectory = Trajectory(max_steps=max_steps)
    for index, message in enumerate(messages):
        if message.role != "assistant":
            continue
        after = messages[index + 1] if index + 1 < len(messages) else None
        results = {
            b.tool_use_id: b
            for b in (after.content if after is not None else ())
            if isinstance(b, ToolResult)
        }
        calls = tool_calls(message.content)
        step = Step(
            len(trajectory.steps) + 1,
            "tool_use" if calls else "end_turn",
            message.text,
            thinking=thinking_of(message.content),
        )
        for call in calls:
            answer = results.get(call.id)
            step.calls.append(
                ToolCall(
                    call.name,
                    call.input,
                    answer.text if answer is not None else "",
                    answer.is_error if answer is not None else False,
                    call.id,
                )
            )
        if after is not None and after.role == "user" and after.text:
            step.turn = after.text
        trajectory.steps.append(step)
    trajectory.hit_max_steps = len(trajectory.steps) > max_steps
    if trajectory.hit_max_steps:
        trajectory.failure = (
            f"the transcript has {len(trajectory.steps)} steps, over max_steps {max_steps}"
        )
    return trajectory
