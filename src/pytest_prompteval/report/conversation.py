"""An agent item's conversation as the pages show it: per step the model's thinking
(folded), what it said, each tool call with its input as a small form and its result (an
error marked), the user's turn (scripted or simulated), the step's own figures, and the
failures that name the step (a trajectory assertion, the conversation's end).

Every value here is the model's or a tool's, so hostile: this builds plain values (text,
and JSON as tokens of a fixed set of kinds) that the autoescaping templates render."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from pytest_prompteval.core.result import ItemResult, Step, Trajectory
from pytest_prompteval.report import figures

#: characters of a tool's result shown; the rest is named, not shown
SHOWN_RESULT = 4000
#: JSON nested deeper than this is shown as its text
MAX_DEPTH = 12


@dataclass(frozen=True)
class Token:
    #: key | str | num | lit | punct: a CSS class, never the value's
    kind: str
    text: str


@dataclass(frozen=True)
class InputField:
    """One argument of a tool call: a string as text, anything else as JSON tokens."""

    name: str
    text: str | None = None
    tokens: tuple[Token, ...] = ()


@dataclass(frozen=True)
class CallView:
    name: str
    fields: tuple[InputField, ...]
    result: str
    is_error: bool


@dataclass
class StepView:
    number: int
    stop_reason: str
    thinking: str
    text: str
    calls: list[CallView]
    turn: str | None
    simulated: bool
    #: tokens, latency, cost and source of the step's call ("" when not recorded)
    figures: str
    #: what failed at this step: a trajectory assertion, the conversation's end
    failures: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ConversationView:
    counts: str
    steps: tuple[StepView, ...]
    #: a failure no step is named for (an empty conversation that failed)
    failure: str | None

    @property
    def failed_steps(self) -> list[int]:
        return [s.number for s in self.steps if s.failures]


def json_tokens(value: Any, depth: int = 0, indent: str = "") -> list[Token]:
    """``value`` as indented JSON, token by token."""
    if depth > MAX_DEPTH:
        return [Token("str", json.dumps(value, ensure_ascii=False, default=str))]
    if isinstance(value, dict) and value:
        inner = indent + "  "
        tokens = [Token("punct", "{\n")]
        for i, (key, item) in enumerate(value.items()):
            tokens += [
                Token("punct", inner),
                Token("key", json.dumps(str(key), ensure_ascii=False)),
            ]
            tokens.append(Token("punct", ": "))
            tokens += json_tokens(item, depth + 1, inner)
            tokens.append(Token("punct", ",\n" if i < len(value) - 1 else "\n"))
        return [*tokens, Token("punct", indent + "}")]
    if isinstance(value, list) and value:
        inner = indent + "  "
        tokens = [Token("punct", "[\n")]
        for i, item in enumerate(value):
            tokens.append(Token("punct", inner))
            tokens += json_tokens(item, depth + 1, inner)
            tokens.append(Token("punct", ",\n" if i < len(value) - 1 else "\n"))
        return [*tokens, Token("punct", indent + "]")]
    if isinstance(value, str):
        return [Token("str", json.dumps(value, ensure_ascii=False))]
    if isinstance(value, bool) or value is None:
        return [Token("lit", json.dumps(value))]
    if isinstance(value, int | float):
        return [Token("num", json.dumps(value))]
    return [Token("punct", json.dumps(value, ensure_ascii=False, default=str))]


def _fields(given: Any) -> tuple[InputField, ...]:
    if not isinstance(given, dict):  # a history file may hold anything
        return (InputField("input", tokens=tuple(json_tokens(given))),)
    return tuple(
        InputField(str(k), text=v)
        if isinstance(v, str)
        else InputField(str(k), tokens=tuple(json_tokens(v)))
        for k, v in given.items()
    )


def _clipped(text: str) -> str:
    if len(text) <= SHOWN_RESULT:
        return text
    return text[:SHOWN_RESULT] + f"\n[{len(text) - SHOWN_RESULT:,} more characters not shown]"


def _number(value: object) -> float | None:
    """A figure as a results file holds it: a number, else none (the file may hold any)."""
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def step_figures(step: Step) -> str:
    """The step's call: tokens in/out, latency, cost, replayed or live."""
    tokens_in, tokens_out = _number(step.input_tokens), _number(step.output_tokens)
    if tokens_in is None or tokens_out is None:
        return ""
    parts = [f"{tokens_in:,.0f} in / {tokens_out:,.0f} out tokens"]
    latency = _number(step.latency_ms)
    if latency is not None:
        parts.append(f"{figures.milliseconds(latency)} ms")
    parts.append(figures.dollars(_number(step.cost_usd)))
    if isinstance(step.replayed, bool):
        parts.append("replayed" if step.replayed else "live")
    return " · ".join(parts)


def _counts(trajectory: Trajectory) -> str:
    counts = [f"{len(trajectory.steps)} steps", f"{len(trajectory.calls)} tool calls"]
    counts.append(f"{trajectory.tool_errors} tool errors")
    if trajectory.user_calls:
        counts.append(f"{trajectory.user_calls} simulated user calls")
    if trajectory.hit_max_steps:
        counts.append(f"hit max_steps {trajectory.max_steps}")
    return ", ".join(counts)


def conversation_of(result: ItemResult) -> ConversationView | None:
    trajectory = result.trajectory
    if trajectory is None:
        return None
    steps = [
        StepView(
            step.number,
            step.stop_reason or "-",
            step.thinking,
            step.text,
            [
                CallView(c.name, _fields(c.input), _clipped(c.result), c.is_error)
                for c in step.calls
            ],
            step.turn,
            step.simulated,
            step_figures(step),
        )
        for step in trajectory.steps
    ]
    by_number = {s.number: s for s in steps}
    for check in result.assertions:
        if not check.passed and isinstance(check.step, int) and check.step in by_number:
            by_number[check.step].failures.append(f"{check.type}: {check.reason}")
    failure = trajectory.failure
    if failure is not None and steps:  # it ended at its last step
        steps[-1].failures.append(f"ended: {failure}")
        failure = None
    return ConversationView(_counts(trajectory), tuple(steps), failure)
