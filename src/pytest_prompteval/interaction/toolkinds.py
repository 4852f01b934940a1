"""Tool kinds, and how each replays: the one place that decides it.

Every tool an agent is given is of one kind, and every kind declares its ``ReplayPolicy``:

- ``SCRIPTED``: the case gives the outcome (``tool_results``); no run calls anything.
- ``RECORDED``: the tool runs when its step is answered live, and its outcome is recorded
  with that answer; a replay reads the outcome and never runs the tool. (A server tool's
  outcome is part of the model's answer itself: the API ran it.)
- ``RERUN``: the tool runs on every run, a replay's included, so its output (which varies:
  timings, temporary paths) is left out of the recording's key: a step is recorded under
  its request with such a result's content replaced by ``NOT_KEYED``.

The tool loop (``agent.py``), the walk through recordings (``recorded.py``) and the
repository task (``repository.py``) ask a tool's kind; none decides by itself. A new kind
(an MCP server's tools, an HTTP endpoint) is a ``ToolKind`` declared in its own module and
``register``-ed: its policy, the definitions it ``claims`` and how it ``run``-s a call.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pytest_prompteval.core.content import ToolExecutor, ToolOutcome, ToolResult, ToolUse
from pytest_prompteval.core.errors import PromptevalError
from pytest_prompteval.core.request import Message, Request


class ReplayPolicy(enum.Enum):
    SCRIPTED = "scripted"
    RECORDED = "recorded"
    RERUN = "rerun"


#: the project's Python tools by name (``tools.py``), found by each run
Python = Mapping[str, ToolExecutor]
#: whether a tool definition (as sent) is of a kind
Claims = Callable[[Mapping[str, Any], Python], bool]
#: a call's outcome: (the project's Python tools, the tool's name, the call's input)
Run = Callable[[Python, str, Mapping[str, Any]], ToolOutcome]


def _claims_none(definition: Mapping[str, Any], python: Python) -> bool:
    return False


@dataclass(frozen=True)
class ToolKind:
    name: str
    policy: ReplayPolicy
    #: the item's deadline waits for each call on a thread: the tool bounds no time itself
    watched: bool = False
    #: False: the API runs its calls; they never reach the tool loop's executor
    local: bool = True
    #: which definitions parsing gives this kind; a kind claiming none is given by the
    #: task that runs it (a repository task's sandbox tools)
    claims: Claims = _claims_none
    #: how the tool loop's executor runs its calls once no scripted rule answers; None:
    #: answered elsewhere (the case's rules, the API, a repository task's sandbox)
    run: Run | None = None

    @property
    def recorded_here(self) -> bool:
        """Its outcomes are recorded by the loop with the answer (``Response.tools_ran``)."""
        return self.local and self.policy is ReplayPolicy.RECORDED


#: every kind by name, in the order parsing asks them to claim a definition
KINDS: dict[str, ToolKind] = {}


def register(kind: ToolKind) -> ToolKind:
    if kind.name in KINDS:
        raise PromptevalError(f"tool kind {kind.name!r} is registered twice")
    KINDS[kind.name] = kind
    return kind


def _python(definition: Mapping[str, Any], python: Python) -> bool:
    return definition["name"] in python


def _run_python(python: Python, name: str, arguments: Mapping[str, Any]) -> ToolOutcome:
    return python[name](name, arguments)


#: the type prefixes of the tools Anthropic's API runs itself
SERVER_TYPES = ("web_search_", "web_fetch_", "code_execution_", "tool_search_tool_")


def _server(definition: Mapping[str, Any], python: Python) -> bool:
    return str(definition.get("type", "")).startswith(SERVER_TYPES)


#: the project's Python tools (``tools.py``): its code never runs on replay
PYTHON = register(
    ToolKind("python", ReplayPolicy.RECORDED, watched=True, claims=_python, run=_run_python)
)
#: the API's own server tools: their results come within the answer
SERVER = register(ToolKind("server", ReplayPolicy.RECORDED, local=False, claims=_server))
#: Anthropic's client tools run in a repository task's sandbox (``repository.py``)
SANDBOX = register(ToolKind("sandbox", ReplayPolicy.RERUN))
#: any other tool: the case's ``tool_results`` answer it
SCRIPTED = register(ToolKind("scripted", ReplayPolicy.SCRIPTED))


def kinds_of(definitions: tuple[Mapping[str, Any], ...], python: Python) -> dict[str, ToolKind]:
    """Each tool's kind by its name: the first registered kind that claims it, else
    scripted."""
    return {
        str(d["name"]): next((k for k in KINDS.values() if k.claims(d, python)), SCRIPTED)
        for d in definitions
    }


#: What a recording's request holds in place of a re-run tool's result (not keyed).
NOT_KEYED = "[tool output: run again on replay, not part of the recording's key]"
#: the outcome a walk through recordings gives a re-run tool's call (it runs nothing)
UNKEYED = ToolOutcome(NOT_KEYED, False)


def recording_key(
    kinds: Mapping[str, ToolKind], other: ToolKind
) -> Callable[[Request], Request] | None:
    """The request a step is recorded under, given its tools' kinds by name (``other``:
    the kind of any other call): the results of re-run tools left out; None when no tool
    re-runs (a step is recorded under its own request)."""
    if all(k.policy is not ReplayPolicy.RERUN for k in (*kinds.values(), other)):
        return None

    def rerun(block: ToolResult, called: Mapping[str, str]) -> bool:
        name = called.get(block.tool_use_id)
        kind = other if name is None else kinds.get(name, other)
        return kind.policy is ReplayPolicy.RERUN

    def keyed(request: Request) -> Request:
        messages = []
        called: dict[str, str] = {}  # the calls a result answers: the turn before its own
        for message in request.messages:
            if message.role == "assistant":
                called = {b.id: b.name for b in message.content if isinstance(b, ToolUse)}
                messages.append(message)
                continue
            blocks = tuple(
                dataclasses.replace(b, content=NOT_KEYED, is_error=False)
                if isinstance(b, ToolResult) and rerun(b, called)
                else b
                for b in message.content
            )
            messages.append(Message(message.role, blocks))
        return dataclasses.replace(request, messages=tuple(messages))

    return keyed
