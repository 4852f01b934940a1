"""Agent cases: the tools a prompt version (and a case) gives Claude, the world a case
scripts for them, and the tool loop that walks the conversation.

The format. A prompt version may say ``tools`` (Anthropic tool definitions, sent as is; a
``type:`` one, such as ``{type: bash_20250124, name: bash}``, is a client or server tool of
the API's own; a bare name is a Python tool of the project's), ``tool_choice`` (sent as
is) and ``max_steps`` (model calls per conversation, default 10). A case adds ``tools``
(the case's wins on a name), ``tool_results`` (rules, the first that matches answers a
call: ``tool``, an optional ``input`` matched as a subset, ``{regex: ...}`` on a string
value, and ``result`` (a mapping or list sent as JSON text, a string as is) or ``error``
(an ``is_error`` result)) and ``turns`` (user turns sent, in order, each time Claude ends
its turn). A case may set ``item_timeout`` (seconds its tool calls may run in all, see
``deadline.py``) and ``max_tool_calls`` (calls one turn may ask for), over the ini's.

The loop (``conversation``): while Claude stops for ``tool_use``, every call of its turn is
answered in the next user message, all results together and first; then the next turn;
it ends at ``end_turn`` with no turn left. A call nothing answers, ``max_steps`` reached,
a turn asking for more than ``max_tool_calls`` (none of them run) or the item's deadline
passed ends it with a failure that the item reports. Every call goes through the one
``ToolExecutor`` seam (``core/content.py``): scripted rules first, then Python tools.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import math
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_prompteval.core.cases import Case
from pytest_prompteval.core.content import (
    RanTool,
    ToolExecutor,
    ToolOutcome,
    ToolResult,
    ToolUse,
    input_matches,
    thinking_of,
    tool_calls,
)
from pytest_prompteval.core.errors import PromptevalError, display
from pytest_prompteval.core.patterns import PatternError, pattern
from pytest_prompteval.core.prompts import PromptVersion
from pytest_prompteval.core.request import Message, Request, canonical_json
from pytest_prompteval.core.response import Response
from pytest_prompteval.core.result import Step, ToolCall, Trajectory
from pytest_prompteval.core.schema import check_keys, suggestion
from pytest_prompteval.core.yamlload import line_of
from pytest_prompteval.interaction.deadline import DEFAULT_ITEM_TIMEOUT, MAX_ITEM_TIMEOUT, Deadline
from pytest_prompteval.interaction.replaydiff import what_changed
from pytest_prompteval.interaction.toolkinds import (
    SCRIPTED,
    ReplayPolicy,
    ToolKind,
    kinds_of,
    recording_key,
)
from pytest_prompteval.interaction.tools import PythonTool
from pytest_prompteval.interaction.transcript import transcript_trajectory
from pytest_prompteval.providers.base import CallContext
from pytest_prompteval.providers.ledger import Entry, Ledger, Purpose
from pytest_prompteval.providers.store import Fetched, MissingRecording, Store

DEFAULT_MAX_STEPS = 10
MAX_STEPS_LIMIT = 100
#: tool calls one turn may ask for: Claude's parallel calls are a few (independent
#: lookups, reads of several files); one answer of 1,024 tokens can hold about 50
DEFAULT_MAX_TOOL_CALLS = 16
MAX_TOOL_CALLS_LIMIT = 128
RULE_KEYS = ("tool", "input", "result", "error")
#: keys of a tool the API runs on our side (``input_schema``) or its own (``type``)
TOOL_KEYS = ("name", "description", "input_schema", "cache_control", "type")


@dataclass(frozen=True)
class ToolRule:
    tool: str
    #: the input the call must hold (a subset; ``{regex: ...}`` on a string value), or None
    input: Mapping[str, Any] | None
    outcome: ToolOutcome
    where: str  # file:line, for the messages that name the rule


@dataclass(frozen=True)
class UserSimulator:
    """A second Claude playing the user: after the scripted turns, it is asked for each
    next turn until it answers ``DONE_SIGNAL`` or has sent ``max_turns``."""

    instructions: str
    max_turns: int = 4
    #: None: the agent's model
    model: str | None = None
    max_tokens: int = 512


@dataclass(frozen=True)
class AgentSpec:
    #: the tool definitions the requests send, as the API takes them
    tools: tuple[Mapping[str, Any], ...]
    tool_choice: Mapping[str, Any] | None = None
    max_steps: int = DEFAULT_MAX_STEPS
    rules: tuple[ToolRule, ...] = ()
    turns: tuple[str, ...] = ()
    #: the project's Python tools the definitions name
    python: Mapping[str, PythonTool] = dataclasses.field(default_factory=dict)
    simulator: UserSimulator | None = None
    #: seconds the item's tool calls may run in all
    item_timeout: float = DEFAULT_ITEM_TIMEOUT
    #: tool calls one turn may ask for
    max_tool_calls: int = DEFAULT_MAX_TOOL_CALLS
    #: each tool's kind (``toolkinds.py``: how its calls replay) by its name
    kinds: Mapping[str, ToolKind] = dataclasses.field(default_factory=dict)
    #: the kind of a call naming no tool the agent was given (whatever answers it)
    other: ToolKind = SCRIPTED

    @property
    def names(self) -> frozenset[str]:
        return frozenset(str(t["name"]) for t in self.tools)

    def kind(self, name: str) -> ToolKind:
        """The kind of the tool a call names."""
        return self.kinds.get(name, self.other)

    @property
    def reruns(self) -> bool:
        """Whether a call may re-run on replay: its tools run with the item only (never
        walked ahead or in batch rounds, which would run them once more)."""
        return any(k.policy is ReplayPolicy.RERUN for k in (*self.kinds.values(), self.other))


class UnansweredCall(PromptevalError):
    """A tool call no scripted rule and no Python tool answers: the item fails."""

    kind = "unanswered_tool_call"


AGENT_CASE_FIELDS = ("tools", "tool_results", "turns", "user_simulator")
SIMULATOR_KEYS = ("instructions", "max_turns", "model", "max_tokens")
MAX_USER_TURNS = 50
#: a simulated user's reply holding this ends the conversation (nothing more is sent)
DONE_SIGNAL = "[DONE]"
SIMULATOR_SYSTEM = (
    "You play the user in a conversation with an AI assistant, to test the assistant. "
    "Stay in character and follow these instructions:\n\n{instructions}\n\n"
    "Reply with the user's next message only. When the user's goal is met, or the "
    "assistant cannot help further, reply with " + DONE_SIGNAL + " alone."
)
AGENT_PROMPT_FIELDS = ("tools", "tool_choice", "max_steps")


def is_agent(case: Case, prompt: PromptVersion) -> bool:
    return any(k in case.raw for k in AGENT_CASE_FIELDS) or any(
        k in prompt.raw for k in AGENT_PROMPT_FIELDS
    )


def _tools(
    entries: Any,
    path: Path,
    line: int | None,
    owner: str,
    python: Mapping[str, PythonTool],
) -> list[dict[str, Any]]:
    if entries is None:
        return []
    if not isinstance(entries, list):
        raise PromptevalError(f"{owner}, field 'tools': expected a list of tools", path, line)
    found = []
    for entry in entries:
        at = line_of(entry) or line
        if isinstance(entry, str):
            if entry not in python:
                raise PromptevalError(
                    f"{owner}, tools: no Python tool {entry!r}{suggestion(entry, python)}; "
                    "register one with @pytest_prompteval.tool(name) in conftest.py, or give "
                    "the tool's definition (name, description, input_schema)",
                    path,
                    at,
                )
            found.append(python[entry].definition())
            continue
        if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
            raise PromptevalError(
                f"{owner}, tools: expected a tool's name (a Python tool) or its definition "
                "{name, description, input_schema}",
                path,
                at,
            )
        if "type" not in entry:  # the API's own tools take their own keys; ours are known
            check_keys(entry, TOOL_KEYS, path, f"{owner}, tool {entry['name']!r}: ")
            if not isinstance(entry.get("input_schema"), Mapping):
                raise PromptevalError(
                    f"{owner}, tool {entry['name']!r}: expected an input_schema (a JSON schema "
                    "of the tool's input, such as {type: object, properties: {...}})",
                    path,
                    at,
                )
        found.append(json.loads(json.dumps(entry)))  # plain JSON, as sent
    return found


def _merged(version: list[dict[str, Any]], case: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The version's tools, the case's replacing one of the same name, then the case's new."""
    own = {t["name"]: t for t in case}
    merged = [own.pop(t["name"], t) for t in version]
    return merged + list(own.values())


def _check_pattern(value: Any, fail: Any) -> None:
    if isinstance(value, Mapping):
        if set(value) == {"regex"}:
            try:
                pattern(str(value["regex"]))
            except PatternError as exc:
                raise fail(f"input: {exc}") from None
            return
        for item in value.values():
            _check_pattern(item, fail)
    elif isinstance(value, list):
        for item in value:
            _check_pattern(item, fail)


def _outcome(entry: Mapping[str, Any], fail: Any) -> ToolOutcome:
    given = [k for k in ("result", "error") if k in entry]
    if len(given) != 1:
        raise fail("expected one of result (what the tool returns) or error (its failure)")
    if "error" in entry:
        if not isinstance(entry["error"], str):
            raise fail("error: expected the error's message (a string)")
        return ToolOutcome(entry["error"], is_error=True)
    result = entry["result"]
    if isinstance(result, str):
        return ToolOutcome(result)
    try:
        return ToolOutcome(json.dumps(result, ensure_ascii=False, allow_nan=False))
    except (TypeError, ValueError) as exc:  # a YAML date, binary or .nan is not JSON
        raise fail(f"result: cannot be sent as JSON ({exc}); quote the value") from None


def _rules(case: Case, names: frozenset[str]) -> tuple[ToolRule, ...]:
    entries = case.raw.get("tool_results")
    if entries is None:
        return ()
    owner = f"case {case.id!r}"
    if not isinstance(entries, list):
        raise PromptevalError(
            f"{owner}, field 'tool_results': expected a list of {{tool, input, result}}",
            case.path,
            line_of(case.raw, "tool_results"),
        )
    rules = []
    for index, entry in enumerate(entries):
        at = line_of(entry) or line_of(case.raw, "tool_results")

        def fail(message: str, _i: int = index, _at: int | None = at) -> PromptevalError:
            return PromptevalError(f"{owner}, tool_results[{_i}]: {message}", case.path, _at)

        if not isinstance(entry, Mapping):
            raise fail("expected a mapping {tool, input, result | error}")
        check_keys(entry, RULE_KEYS, case.path, f"{owner}, tool_results[{index}]: ")
        name = entry.get("tool")
        if not isinstance(name, str):
            raise fail("tool: expected the tool's name")
        if name not in names:
            raise fail(f"unknown tool {name!r}{suggestion(name, names)}; known: {_list(names)}")
        wanted = entry.get("input")
        if wanted is not None and not isinstance(wanted, Mapping):
            raise fail("input: expected a mapping of the arguments the call must hold")
        _check_pattern(wanted, fail)
        rules.append(ToolRule(name, wanted, _outcome(entry, fail), display(case.path, at)))
    return tuple(rules)


def _list(names: frozenset[str]) -> str:
    return ", ".join(sorted(names)) or "none (give the case or its prompt version tools)"


def _turns(case: Case) -> tuple[str, ...]:
    turns = case.raw.get("turns")
    if turns is None:
        return ()
    if not isinstance(turns, list) or not all(isinstance(t, str) and t for t in turns):
        raise PromptevalError(
            f"case {case.id!r}, field 'turns': expected a list of user messages",
            case.path,
            line_of(case.raw, "turns"),
        )
    return tuple(turns)


def _simulator(case: Case) -> UserSimulator | None:
    given = case.raw.get("user_simulator")
    if given is None:
        return None
    at = line_of(case.raw, "user_simulator")

    def fail(message: str) -> PromptevalError:
        return PromptevalError(f"case {case.id!r}, user_simulator: {message}", case.path, at)

    if not isinstance(given, Mapping):
        raise fail("expected a mapping {instructions, max_turns, model}")
    check_keys(given, SIMULATOR_KEYS, case.path, f"case {case.id!r}, user_simulator: ")
    instructions = given.get("instructions")
    if not isinstance(instructions, str) or not instructions.strip():
        raise fail("instructions: expected the user's part and goal (a string)")
    numbers = {}
    for key, default, top in (("max_turns", 4, MAX_USER_TURNS), ("max_tokens", 512, 64000)):
        value = given.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= top:
            raise fail(f"{key}: expected a whole number from 1 to {top}")
        numbers[key] = value
    model = given.get("model")
    if model is not None and not isinstance(model, str):
        raise fail("model: expected a model name")
    return UserSimulator(instructions, numbers["max_turns"], model, numbers["max_tokens"])


def _max_steps(prompt: PromptVersion) -> int:
    value = prompt.raw.get("max_steps", DEFAULT_MAX_STEPS)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_STEPS_LIMIT:
        raise PromptevalError(
            f"field 'max_steps': expected a whole number from 1 to {MAX_STEPS_LIMIT}",
            prompt.path,
            prompt.line_of("max_steps"),
        )
    return value


def _limit(case: Case, key: str, default: float, whole: bool) -> Any:
    """The case's ``item_timeout`` or ``max_tool_calls``, checked, else the ini's."""
    value = case.raw.get(key, default)
    top = MAX_TOOL_CALLS_LIMIT if whole else MAX_ITEM_TIMEOUT
    number = not isinstance(value, bool) and isinstance(value, int if whole else int | float)
    if not (number and math.isfinite(value) and (value >= 1 if whole else value > 0)) or (
        value > top
    ):
        allowed = (
            f"a whole number from 1 to {top}"
            if whole
            else f"seconds, more than 0 and at most {top:g}"
        )
        raise PromptevalError(
            f"case {case.id!r}, field {key!r}: expected {allowed}, got {value!r:.40}",
            case.path,
            line_of(case.raw, key),
        )
    return value


def parse_agent(
    case: Case,
    prompt: PromptVersion,
    python: Mapping[str, PythonTool],
    item_timeout: float = DEFAULT_ITEM_TIMEOUT,
    max_tool_calls: int = DEFAULT_MAX_TOOL_CALLS,
) -> AgentSpec | None:
    """The case's agent spec with this prompt version, checked (errors name file and line),
    or None for a case that is no agent's. ``item_timeout``, ``max_tool_calls``: the ini's,
    for a case that sets neither."""
    if not is_agent(case, prompt):
        return None
    choice = prompt.raw.get("tool_choice")
    if choice is not None and not isinstance(choice, Mapping):
        raise PromptevalError(
            "field 'tool_choice': expected a mapping such as {type: auto}",
            prompt.path,
            prompt.line_of("tool_choice"),
        )
    version = _tools(
        prompt.raw.get("tools"),
        prompt.path,
        prompt.line_of("tools"),
        f"prompt {prompt.version!r}",
        python,
    )
    own = _tools(
        case.raw.get("tools"), case.path, line_of(case.raw, "tools"), f"case {case.id!r}", python
    )
    tools = _merged(version, own)
    names = frozenset(t["name"] for t in tools)
    kinds = kinds_of(tuple(tools), python)
    return AgentSpec(
        tools=tuple(tools),
        tool_choice=None if choice is None else json.loads(json.dumps(choice)),
        max_steps=_max_steps(prompt),
        rules=_rules(case, names),
        turns=_turns(case),
        python={n: t for n, t in python.items() if n in names},
        simulator=_simulator(case),
        item_timeout=float(_limit(case, "item_timeout", item_timeout, whole=False)),
        max_tool_calls=_limit(case, "max_tool_calls", max_tool_calls, whole=True),
        kinds=kinds,
    )


def with_tools(request: Request, agent: AgentSpec) -> Request:
    """The request with the agent's tools (and tool choice) among its parameters."""
    params = request.params
    if agent.tools:
        params["tools"] = [dict(t) for t in agent.tools]
    if agent.tool_choice is not None:
        params["tool_choice"] = dict(agent.tool_choice)
    return dataclasses.replace(request, params_json=canonical_json(params))


def shown(value: Any, limit: int = 200) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _differs(wanted: Mapping[str, Any], given: Mapping[str, Any]) -> list[str]:
    """The arguments a rule wants that the call does not match, with did-you-mean on a name
    the call spelt otherwise."""
    found = []
    for key, value in wanted.items():
        if key not in given:
            close = suggestion(key, [k for k in given if k not in wanted])
            found.append(f"{key} missing{close}")
        elif not input_matches(value, given[key]):
            found.append(f"{key} is {shown(given[key], 60)}, the rule wants {shown(value, 60)}")
    return found


def nearest(rules: Sequence[ToolRule], name: str, arguments: Mapping[str, Any]) -> str:
    """The rule closest to an unanswered call, and how they differ."""
    same = [r for r in rules if r.tool == name]
    if same:
        rule = min(same, key=lambda r: len(_differs(r.input or {}, arguments)))
        why = "; ".join(_differs(rule.input or {}, arguments))
        return f"nearest rule ({rule.where}): {rule.tool} {shown(rule.input)}: {why}"
    close = difflib.get_close_matches(name, [r.tool for r in rules], n=1, cutoff=0.6)
    if close:
        rule = next(r for r in rules if r.tool == close[0])
        return f"no rule for {name!r}; did you mean {close[0]!r} ({rule.where})?"
    return f"no rule for {name!r}"


def executor(agent: AgentSpec, case: Case) -> ToolExecutor:
    """The case's world: its scripted rules first (first match wins), then the tool's kind
    runs the call (the project's Python tools); a call neither answers raises
    ``UnansweredCall``."""

    def execute(name: str, arguments: Mapping[str, Any]) -> ToolOutcome:
        for rule in agent.rules:
            if rule.tool == name and (rule.input is None or input_matches(rule.input, arguments)):
                return rule.outcome
        run = agent.kind(name).run
        if run is not None:
            return run(agent.python, name, arguments)
        raise UnansweredCall(
            f"case {case.id!r}: tool call {name}({shown(arguments)}) has no scripted result: "
            f"{nearest(agent.rules, name, arguments)}; add a tool_results rule for it",
            case.path,
            line_of(case.raw, "tool_results") or case.line,
        )

    return execute


def describe(call: ToolUse | ToolCall) -> str:
    return f"{call.name}({shown(call.input)})"


#: A conversation's course: yields the request of its next step, is sent that step's
#: response, and returns the trajectory (the final answer is the last response sent).
Conversation = Generator[Request, Response, Trajectory]
#: the simulated user's reply to the conversation so far (its request and its answer's text)
UserTurn = Callable[[Request], str]


def simulator_request(
    simulator: UserSimulator, request: Request, messages: Sequence[Message]
) -> Request:
    """What the simulated user is asked: the conversation so far as a transcript (the
    agent's tool activity left out: a user sees only what the agent says)."""
    lines = []
    for message in messages:
        said = message.text.strip()
        if said:
            lines.append(f"{'User' if message.role == 'user' else 'Assistant'}: {said}")
    transcript = "\n\n".join(lines)
    return Request.create(
        simulator.model or request.model,
        [
            Message(
                "user",
                (f"The conversation so far:\n\n{transcript}\n\nWrite the user's next message.",),
            )
        ],
        SIMULATOR_SYSTEM.format(instructions=simulator.instructions.strip()),
        max_tokens=simulator.max_tokens,
    )


def conversation(
    agent: AgentSpec,
    request: Request,
    execute: ToolExecutor,
    user: UserTurn | None = None,
    deadline: Deadline | None = None,
) -> Conversation:
    """The tool loop, step by step: the same course whether its calls are made one by one
    or looked up in recordings. ``user``: asks the simulated user, if the case has one;
    ``deadline``: the item's, shared by every walk of its conversation (else its own)."""
    deadline = deadline or Deadline(agent.item_timeout)
    deadline.start()
    trajectory = Trajectory(max_steps=agent.max_steps)
    simulator = agent.simulator if user is not None else None
    messages = list(request.messages)
    turns = list(agent.turns)
    asked = request
    last: ToolUse | None = None
    for number in range(1, agent.max_steps + 1):
        response = yield asked
        if response.transcript:  # the app's own agent held the whole conversation
            return transcript_trajectory(response.transcript, agent.max_steps)
        step = Step(
            number, response.stop_reason, response.text, thinking=thinking_of(response.content)
        )
        trajectory.steps.append(step)
        said = response.blocks
        if messages and messages[-1].role == "assistant":  # the prefill it continued
            said = messages.pop().content + said
        calls = tool_calls(response.blocks)
        if response.stop_reason == "tool_use" and calls:
            if len(calls) > agent.max_tool_calls:  # refused whole: none of them runs
                trajectory.failure = (
                    f"step {number} asked for {len(calls)} tool calls in one turn, more than "
                    f"max_tool_calls {agent.max_tool_calls}; none of them ran (the first: "
                    f"{describe(calls[0])})"
                )
                return trajectory
            results = []
            for call in calls:
                last = call
                try:
                    waited = agent.kind(call.name).watched
                    outcome = deadline.run(execute, call.name, call.input, waited)
                except UnansweredCall as exc:
                    trajectory.failure = exc.message
                    return trajectory
                step.calls.append(
                    ToolCall(call.name, call.input, outcome.content, outcome.is_error, call.id)
                )
                if deadline.passed:
                    trajectory.failure = (
                        f"item_timeout {agent.item_timeout:g} s reached: the tool calls ran "
                        f"{deadline.spent:.1f} s in all; the last call: {describe(call)}"
                    )
                    return trajectory
                results.append(ToolResult(call.id, outcome.content, outcome.is_error))
            messages += [Message("assistant", said), Message("user", tuple(results))]
        elif response.stop_reason == "pause_turn":  # a server tool's long turn: continue it
            messages.append(Message("assistant", said))
        elif turns:
            step.turn = turns.pop(0)
            messages += [Message("assistant", said), Message("user", (step.turn,))]
        elif (
            simulator is not None
            and user is not None
            and trajectory.user_turns < simulator.max_turns
        ):
            messages.append(Message("assistant", said))
            trajectory.user_calls += 1
            reply = user(simulator_request(simulator, request, messages)).strip()
            if DONE_SIGNAL in reply or not reply:
                return trajectory
            step.turn, step.simulated = reply, True
            trajectory.user_turns += 1
            messages.append(Message("user", (reply,)))
        else:
            return trajectory
        asked = dataclasses.replace(request, messages=tuple(messages))
    trajectory.hit_max_steps = True
    what = f"; the last call: {describe(last)}" if last is not None else ""
    trajectory.failure = f"reached max_steps {agent.max_steps} before the conversation ended{what}"
    return trajectory


#: how a walk gets a step's answer: (request, purpose) -> what the store fetched
StepGetter = Callable[[Request, Purpose], Fetched]


def converse(
    agent: AgentSpec,
    store: Store,
    ledger: Ledger,
    request: Request,
    context: CallContext,
    execute: ToolExecutor,
    deadline: Deadline | None = None,
) -> tuple[Fetched, Trajectory]:
    """Walk the conversation call by call, each on ``ledger``: the last step's answer as
    fetched (the final answer) and the trajectory. Steps walked ahead (``converse_ahead``) are found
    answered, with their recorded tools' outcomes. A step is recorded under its request as
    its tools' kinds key it (``recording_key``); ``deadline``: the item's
    (``conversation``)."""

    calls: list[Entry] = []  # the agent's own, one a step
    key = recording_key(agent.kinds, agent.other)

    def get(asked: Request, purpose: Purpose) -> Fetched:
        answers = None if key is None else key(asked)
        got = ledger.get(store, asked, for_purpose(context, purpose), purpose, answers=answers)
        if purpose != "user":
            calls.append(ledger.entries[-1])
        return got

    outcome, trajectory = _walk(agent, store, get, request, context, execute, False, deadline)
    if len(calls) == len(trajectory.steps):  # not an app's transcript, read from one answer
        for step, call in zip(trajectory.steps, calls, strict=True):
            used = call.usage
            step.input_tokens, step.output_tokens = used.input_tokens, used.output_tokens
            step.latency_ms = used.latency_ms
            step.cost_usd = None if used.unpriced else used.cost_usd
            step.replayed = used.replayed == used.calls
    return outcome, trajectory


def converse_ahead(
    agent: AgentSpec,
    store: Store,
    request: Request,
    context: CallContext,
    execute: ToolExecutor,
    going: Callable[[], bool],
    deadline: Deadline | None = None,
) -> None:
    """Walk the conversation ahead of its item (on the store's walkers): each step's answer
    is kept for the item's own walk, with the outcomes of the Python tools its calls ran,
    so that walk makes no call and runs no tool again. ``going``: False once the run stops
    (no new calls)."""

    def get(asked: Request, purpose: Purpose) -> Fetched:
        if not going():
            raise PromptevalError("stopping: no new calls")  # left for the item
        step = for_purpose(context, purpose)
        store.prefetch(asked, step)  # a call of the pool, in turn with every other
        return store.get(asked, step, keep=True)

    _walk(agent, store, get, request, context, execute, True, deadline)


def take_held(
    held: list[RanTool], name: str, arguments: Mapping[str, Any]
) -> tuple[str, ToolOutcome | None]:
    """A Python tool call's input as kept, and the outcome an answer holds for it (taken out
    of ``held``: the same call twice has two outcomes), or None."""
    given = canonical_json(dict(arguments))
    found = next((r for r in held if r.name == name and r.input_json == given), None)
    if found is None:
        return given, None
    held.remove(found)
    return given, found.outcome


def for_purpose(context: CallContext, purpose: Purpose) -> CallContext:
    """A simulated user's calls are labelled as the user's."""
    return dataclasses.replace(context, purpose="user") if purpose == "user" else context


def _walk(
    agent: AgentSpec,
    store: Store,
    get: StepGetter,
    request: Request,
    context: CallContext,
    execute: ToolExecutor,
    keep: bool,
    deadline: Deadline | None = None,
) -> tuple[Fetched, Trajectory]:
    ran: list[RanTool] = []
    recorded: list[RanTool] = []
    key = recording_key(agent.kinds, agent.other)

    def run_tool(name: str, arguments: Mapping[str, Any]) -> ToolOutcome:
        """A recorded tool's outcome: as the answer holds it (a replay, or a step walked
        ahead), else run (and kept with the answer). Any other kind's call runs (a
        scripted one answers from the case, a re-run one runs on replay too)."""
        if not agent.kind(name).recorded_here:
            return execute(name, arguments)
        given, found = take_held(recorded, name, arguments)
        if found is not None:
            return found
        if store.mode == "none":
            raise UnansweredCall(
                f"case {context.case.id!r}: the recording of this step has no outcome of the "
                f"Python tool call {name}({shown(arguments)}); record again with "
                "--prompteval-record=all",
                context.case.path,
                context.case.line,
            )
        outcome = execute(name, arguments)
        ran.append(RanTool(name, given, outcome))
        return outcome

    def user(asked: Request) -> str:
        return get(asked, "user").response.text

    def step_get(asked: Request, step: int) -> Fetched:
        """The step's answer as fetched; a replay's miss names what changed from the recording."""
        try:
            return get(asked, "generation" if step == 1 else "agent")
        except MissingRecording as exc:
            changed = what_changed(store.root, asked if key is None else key(asked), context)
            where = f"step {step} of the conversation" if step > 1 else None
            if changed is None:
                if where is None:
                    raise
                raise type(exc)(f"{where}: {exc.message}", exc.path) from None
            raise type(exc)(
                f"{where or 'the first step of the conversation'}: no recording answers it: "
                f"{changed} since it was recorded; run with --prompteval-record=new",
                exc.path,
            ) from None

    walk = conversation(agent, request, run_tool, user, deadline)
    asked = next(walk)
    fetched = step_get(asked, 1)
    step = 1
    while True:
        ran.clear()
        recorded[:] = fetched.response.tools_ran  # a live answer has none
        try:
            said = asked
            asked = walk.send(fetched.response)
        except StopIteration as done:
            return fetched, done.value
        finally:
            if ran and not fetched.replayed:  # kept with the answer whose calls they are
                answer = dataclasses.replace(fetched.response, tools_ran=tuple(ran))
                under = said if key is None else key(said)
                store.record(under, context, answer)
                if keep:
                    store.keep(under, context.sample, dataclasses.replace(fetched, response=answer))
        step += 1
        fetched = step_get(asked, step)
