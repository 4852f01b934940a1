"""Tool kinds: every registered kind declares its replay policy, and each policy does what
it declares on replay, through the real SDK against the loopback server: a scripted tool
never calls anything, a recorded one runs live only (its outcome recorded with the answer),
a re-run one runs again on replay, its output left out of the recording's key."""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

from pytest_prompteval.core.content import Block, ToolOutcome, ToolResult, ToolUse
from pytest_prompteval.core.errors import PromptevalError
from pytest_prompteval.core.request import Message, Request
from pytest_prompteval.interaction.toolkinds import (
    KINDS,
    NOT_KEYED,
    PYTHON,
    SCRIPTED,
    SERVER,
    ReplayPolicy,
    ToolKind,
    kinds_of,
    recording_key,
    register,
)
from pytest_prompteval.testing import AnthropicServer, ScriptedAgent, call
from pytest_prompteval.testing import Block as Said

from .conftest import item_results
from .test_repo_items import make_project, no_network


def test_every_registered_kind_declares_a_policy_and_every_policy_has_a_kind() -> None:
    assert all(isinstance(k.policy, ReplayPolicy) for k in KINDS.values())
    assert {k.policy for k in KINDS.values()} == set(ReplayPolicy)
    assert all(name == k.name for name, k in KINDS.items())
    with pytest.raises(PromptevalError, match="'python' is registered twice"):
        register(ToolKind("python", ReplayPolicy.RERUN))
    assert KINDS["python"] is PYTHON


def test_a_definition_is_of_the_first_kind_that_claims_it_else_scripted() -> None:
    definitions = (
        {"name": "add", "input_schema": {}},
        {"type": "web_search_20250305", "name": "web_search"},
        {"type": "bash_20250124", "name": "bash"},
        {"name": "lookup", "input_schema": {}},
    )
    assert kinds_of(definitions, {"add": lambda name, arguments: ToolOutcome("")}) == {
        "add": PYTHON,
        "web_search": SERVER,
        "bash": SCRIPTED,  # outside a repository task, the case's tool_results answer it
        "lookup": SCRIPTED,
    }


def test_a_result_is_keyed_by_the_kind_of_the_call_of_the_turn_before_it() -> None:
    """A call id an earlier turn used again (a hostile answer) changes no other result's
    key: each result belongs to a call of the assistant turn just before it."""
    rerun = ToolKind("rerun", ReplayPolicy.RERUN)
    key = recording_key({"roll": rerun, "add": PYTHON}, SCRIPTED)
    assert key is not None and recording_key({"add": PYTHON}, SCRIPTED) is None
    turns: list[tuple[str, Block]] = [
        ("assistant", ToolUse.of("t1", "roll", {})),
        ("user", ToolResult("t1", "varies", is_error=True)),
        ("assistant", ToolUse.of("t1", "add", {})),
        ("user", ToolResult("t1", "5")),
        ("user", ToolResult("t9", "no call of it")),
    ]
    request = Request.create("m", [Message(role, (block,)) for role, block in turns])
    keyed = [m.content[0] for m in key(request).messages if m.role == "user"]
    assert keyed == [
        ToolResult("t1", NOT_KEYED),
        ToolResult("t1", "5"),
        ToolResult("t9", "no call of it"),
    ]


CONFTEST = '''
from pathlib import Path

import pytest_prompteval


@pytest_prompteval.tool("add")
def add(a: int, b: int) -> int:
    """Add two numbers."""
    with Path("ran.log").open("a") as log:
        log.write(f"add {a} {b}\\n")
    return a + b
'''
PROMPT = """\
user_prompt: sum
include_input: false
tools:
  - add
  - {name: lookup, description: "Look a number up.", input_schema: {type: object}}
"""
CASES = """\
cases:
- id: c1
  input: {}
  tool_results: [{tool: lookup, result: {number: 3}}]
  assert: [{tool_called: add}, {tool_called: lookup}, {contains: "is 5"}]
"""


def recordings(root: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted((root / "prompt_recordings").glob("*.json"))]


def test_scripted_and_recorded_tools_replay_as_declared(
    pytester: pytest.Pytester, anthropic_server: AnthropicServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    anthropic_server.responder = ScriptedAgent(
        {"sum": [[call("lookup", q="x"), call("add", a=2, b=3)], ["The sum is 5."]]}
    )
    pytester.makeconftest(CONFTEST)
    pytester.mkdir("prompts").joinpath("agent.yaml").write_text(PROMPT)
    pytester.mkdir("prompt_cases").joinpath("c.yaml").write_text(CASES)
    pytester.runpytest("--prompt=agent").assert_outcomes(passed=1)
    sent = anthropic_server.requests[1].body["messages"][-1]["content"]
    assert [r["content"] for r in sent] == ['{"number": 3}', "5"]
    log = pytester.path / "ran.log"
    assert log.read_text() == "add 2 3\n"
    # recorded: the Python tool's outcome is kept with the answer whose call it is; the
    # scripted one is not (the case gives it on every run)
    ran = [r["response"].get("tools_ran") for r in recordings(pytester.path)]
    assert [t for t in ran if t] == [
        [{"name": "add", "input": {"a": 2, "b": 3}, "content": "5", "is_error": False}]
    ]

    anthropic_server.requests.clear()
    no_network(monkeypatch)
    reprec = pytester.inline_run("--prompt=agent", "--prompteval-record=none")
    reprec.assertoutcome(passed=1)
    # on replay neither kind calls anything: no tool ran, no request went out
    assert anthropic_server.requests == [] and log.read_text() == "add 2 3\n"
    (result,) = item_results(reprec)
    calls = result["trajectory"]["steps"][0]["calls"]
    assert [(c["name"], c["result"]) for c in calls] == [("lookup", '{"number": 3}'), ("add", "5")]


UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def test_a_rerun_tool_runs_again_on_replay_its_output_left_out_of_the_key(
    pytester: pytest.Pytester,
    anthropic_server: AnthropicServer,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> None:
    anthropic_server.responder = ScriptedAgent(
        {"UUID": [[call("bash", command="cat /proc/sys/kernel/random/uuid")], ["Done."]]}
    )
    make_project(pytester.path, [("fresh", "UUID", 60)])
    private = Path(tempfile.mkdtemp(prefix="prompteval-items-"))
    request.addfinalizer(lambda: shutil.rmtree(private, ignore_errors=True))
    monkeypatch.setenv("TMPDIR", str(private))
    monkeypatch.setattr(tempfile, "tempdir", str(private))
    live = pytester.inline_run("--prompt=fixer", "-p", "no:randomly")
    live.assertoutcome(failed=1)  # the agent fixes nothing
    (first,) = item_results(live)
    said = first["trajectory"]["steps"][0]["calls"][0]["result"]
    assert UUID.search(said)
    # the step after the call is recorded with NOT_KEYED where the output was
    results = [
        b
        for r in recordings(pytester.path)
        for m in r["request"]["messages"]
        if isinstance(m["content"], list)
        for b in m["content"]
        if b["type"] == "tool_result"
    ]
    assert [b["content"] for b in results] == [NOT_KEYED]

    anthropic_server.requests.clear()
    no_network(monkeypatch)
    reprec = pytester.inline_run("--prompt=fixer", "--prompteval-record=none", "-p", "no:randomly")
    reprec.assertoutcome(failed=1)
    assert anthropic_server.requests == []
    (again,) = item_results(reprec)
    assert again["replayed"]
    rerun = again["trajectory"]["steps"][0]["calls"][0]["result"]
    assert UUID.search(rerun) and rerun != said  # it ran again: another uuid


def probe_kinds(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Two kinds a test registers, ``stamp`` recorded and ``roll`` re-run: the names of
    the calls they ran, in order (each outcome numbered)."""
    ran: list[str] = []

    def run(python: object, name: str, arguments: object) -> ToolOutcome:
        ran.append(name)
        return ToolOutcome(f"{name} #{len(ran)}")

    for name, policy in (("stamp", ReplayPolicy.RECORDED), ("roll", ReplayPolicy.RERUN)):
        claims = lambda d, p, n=name: d["name"] == n  # noqa: E731
        kind = ToolKind(f"probe_{name}", policy, claims=claims, run=run)
        monkeypatch.setitem(KINDS, kind.name, kind)
    return ran


def probe_project(pytester: pytest.Pytester, words: tuple[str, ...]) -> None:
    """A case for each word, whose prompt says it, the agent given both probe tools."""
    schema = "input_schema: {type: object}"
    pytester.mkdir("prompts").joinpath("agent.yaml").write_text(
        f"user_prompt: '{{word}}'\ntools:\n  - {{name: stamp, {schema}}}\n"
        f"  - {{name: roll, {schema}}}\n"
    )
    cases = "".join(
        f"- id: {w}\n  input: {{word: {w}}}\n  assert: [{{contains: Done}}]\n" for w in words
    )
    pytester.mkdir("prompt_cases").joinpath("c.yaml").write_text("cases:\n" + cases)


ROLL_STAMP_ROLL: list[list[Said]] = [[call("roll")], [call("stamp"), call("roll")], ["Done."]]


def test_a_new_kind_is_one_registration_and_replays_as_its_policy_declares(
    pytester: pytest.Pytester, anthropic_server: AnthropicServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran = probe_kinds(monkeypatch)
    anthropic_server.responder = ScriptedAgent({"go": ROLL_STAMP_ROLL})
    probe_project(pytester, ("go",))
    pytester.inline_run("--prompt=agent").assertoutcome(passed=1)
    assert ran == ["roll", "stamp", "roll"]
    steps = sorted(recordings(pytester.path), key=lambda r: len(r["request"]["messages"]))
    # the recorded kind's outcome is kept with the answer that called it (recorded under
    # that step's key), and keyed in the next; the re-run kind's output is left out of both
    assert [r["response"].get("tools_ran") for r in steps] == [
        None,
        [{"name": "stamp", "input": {}, "content": "stamp #2", "is_error": False}],
        None,
    ]
    results = [m["content"] for m in steps[2]["request"]["messages"] if m["role"] == "user"]
    assert [[b.get("content") for b in r] for r in results[1:]] == [
        [NOT_KEYED],
        ["stamp #2", NOT_KEYED],
    ]

    no_network(monkeypatch)
    reprec = pytester.inline_run("--prompt=agent", "--prompteval-record=none")
    reprec.assertoutcome(passed=1)
    assert ran == ["roll", "stamp", "roll", "roll", "roll"]  # only the re-run kind ran again
    (result,) = item_results(reprec)
    calls = [c["result"] for s in result["trajectory"]["steps"] for c in s["calls"]]
    assert calls == ["roll #4", "stamp #2", "roll #5"]


def test_a_conversation_whose_tool_reruns_is_not_walked_ahead_of_its_item(
    pytester: pytest.Pytester, anthropic_server: AnthropicServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran = probe_kinds(monkeypatch)
    words = ("one", "two", "three")
    anthropic_server.responder = ScriptedAgent(dict.fromkeys(words, ROLL_STAMP_ROLL))
    probe_project(pytester, words)
    pytester.inline_run("--prompt=agent", "-p", "no:randomly").assertoutcome(passed=3)
    # each item ran its tools once, in its own walk: none ran them ahead, once more
    assert ran == ["roll", "stamp", "roll"] * 3
    assert len(recordings(pytester.path)) == 9
