"""What the model may make an agent item cost: tool calls per turn (``max_tool_calls``) and
the time its tool calls run in all (``item_timeout``), through the real SDK against the
loopback server playing a scripted agent. Time is a fake clock the Python tools move."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from pytest_prompteval.core.content import ToolOutcome
from pytest_prompteval.interaction import deadline as deadline_module
from pytest_prompteval.interaction.deadline import Deadline
from pytest_prompteval.testing import AnthropicServer, ScriptedAgent, call

from .conftest import item_results

PROMPT = """\
user_prompt: "{message}"
include_input: false
max_steps: 5
tools:
  - slow
  - name: lookup
    input_schema: {type: object, properties: {id: {type: string}}}
"""
CASE = """\
cases:
- id: c1
  input: {message: "go"}
  tool_results:
    - {tool: lookup, result: found}
  assert: [{contains: Done}]
"""
#: a Python tool that takes 200 s of the fake clock the test puts in place of the real one
CONFTEST = """\
import pytest_prompteval
from pytest_prompteval.interaction import deadline


@pytest_prompteval.tool("slow")
def slow(n: int) -> str:
    \"\"\"Work for a while.\"\"\"
    deadline.monotonic.now += 200
    with open("ran.log", "a") as log:
        log.write(f"{n}\\n")
    return "worked"
"""


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(deadline_module, "monotonic", fake)
    return fake


def project(pytester: pytest.Pytester, case: str = CASE, ini: str = "") -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makeini(f"[pytest]\n{ini}")
    pytester.mkdir("prompts").joinpath("agent.yaml").write_text(PROMPT)
    pytester.mkdir("prompt_cases").joinpath("c.yaml").write_text(case)


def lookups(count: int) -> list[dict[str, object]]:
    return [call("lookup", id=str(n)) for n in range(count)]


@pytest.mark.parametrize(
    ("calls", "setting", "passed"),
    [
        (17, "", False),  # the default, 16
        (16, "", True),
        (17, "  max_tool_calls: 17\n", True),  # the case's wins
        (3, "ini:prompteval_max_tool_calls = 2", False),
    ],
)
def test_a_turn_asking_for_more_calls_than_max_tool_calls_fails_and_runs_none(
    pytester: pytest.Pytester,
    anthropic_server: AnthropicServer,
    calls: int,
    setting: str,
    passed: bool,
) -> None:
    anthropic_server.responder = ScriptedAgent({"go": [lookups(calls), ["Done."]]})
    ini = setting.removeprefix("ini:") if setting.startswith("ini:") else ""
    project(pytester, CASE + ("" if ini else setting), ini)
    reprec = pytester.inline_run("--prompt=agent")
    (result,) = item_results(reprec)
    ran = [c for s in result["trajectory"]["steps"] for c in s["calls"]]
    if passed:
        assert result["passed"] and len(ran) == calls
        return
    cap = 2 if ini else 16
    assert result["trajectory"]["failure"] == (
        f"step 1 asked for {calls} tool calls in one turn, more than max_tool_calls {cap}; "
        'none of them ran (the first: lookup({"id": "0"}))'
    )
    assert ran == [] and len(anthropic_server.requests) == 1


@pytest.mark.parametrize(
    "options",
    [
        ["--prompteval-concurrency=1"],
        ["--prompteval-concurrency=8"],
        ["--prompteval-batch", "--prompteval-batch-poll=0.01"],
    ],
    ids=["item-walk", "walked-ahead", "batch-rounds"],
)
def test_the_deadline_counts_the_tools_time_and_fails_the_item_at_the_same_call(
    pytester: pytest.Pytester,
    anthropic_server: AnthropicServer,
    clock: FakeClock,
    options: list[str],
) -> None:
    """Four calls of 200 s against an item_timeout of 500: the third passes it, the fourth
    never runs; walked ahead of the item or not, the same call ends it and each tool runs
    once. The model's own time does not count (the fake clock moves only in the tool). c1
    is walked ahead while c0 runs, unless the concurrency is 1."""
    turns = [[call("slow", n=1), call("slow", n=2)], [call("slow", n=3), call("slow", n=4)]]
    anthropic_server.responder = ScriptedAgent({"go": [*turns, ["Done."]], "first": [["Done."]]})
    first = '- id: c0\n  input: {message: "first"}\n  assert: [{contains: Done}]\n'
    project(pytester, CASE.replace("cases:\n", "cases:\n" + first), "prompteval_item_timeout = 500")
    reprec = pytester.inline_run("--prompt=agent", *options)
    reprec.assertoutcome(passed=1, failed=1)
    result = item_results(reprec)[1]
    assert result["trajectory"]["failure"] == (
        "item_timeout 500 s reached: the tool calls ran 600.0 s in all; the last call: "
        'slow({"n": 3})'
    )
    assert (pytester.path / "ran.log").read_text() == "1\n2\n3\n"
    steps = [r for r in anthropic_server.requests if r.path.split("?")[0] == "/v1/messages"]
    assert len(steps) == (0 if "--prompteval-batch" in options else 3)


def test_a_cases_item_timeout_wins_over_the_ini(
    pytester: pytest.Pytester, anthropic_server: AnthropicServer, clock: FakeClock
) -> None:
    turns = [[call("slow", n=1), call("slow", n=2)], [call("slow", n=3), call("slow", n=4)]]
    anthropic_server.responder = ScriptedAgent({"go": [*turns, ["Done."]]})
    project(pytester, CASE + "  item_timeout: 900\n", ini="prompteval_item_timeout = 500")
    pytester.inline_run("--prompt=agent").assertoutcome(passed=1)
    assert (pytester.path / "ran.log").read_text() == "1\n2\n3\n4\n"


@pytest.mark.parametrize(
    ("where", "text", "error"),
    [
        ("case", "  item_timeout: 0\n",
         "prompt_cases/c.yaml:7: case 'c1', field 'item_timeout': expected seconds, more than 0 "
         "and at most 3600, got 0"),
        ("case", "  item_timeout: .inf\n", "field 'item_timeout': expected seconds"),
        ("case", "  item_timeout: '60'\n", "field 'item_timeout': expected seconds"),
        ("case", "  max_tool_calls: true\n",
         "prompt_cases/c.yaml:7: case 'c1', field 'max_tool_calls': expected a whole number "
         "from 1 to 128, got True"),
        ("case", "  max_tool_calls: 1000\n", "from 1 to 128, got 1000"),
        ("case", "  max_tool_call: 3\n", "unknown field 'max_tool_call'; did you mean "
         "'max_tool_calls'?"),
        ("ini", "prompteval_item_timeout = 7200",
         "ini prompteval_item_timeout '7200': expected a number > 0 and <= 3600"),
        ("ini", "prompteval_max_tool_calls = 0",
         "ini prompteval_max_tool_calls '0': expected a whole number from 1 to 128"),
    ],
)  # fmt: skip
def test_a_bad_limit_is_one_line_naming_the_file_or_ini_key(
    pytester: pytest.Pytester, where: str, text: str, error: str
) -> None:
    if where == "case":
        project(pytester, CASE + text)
    else:
        project(pytester, ini=text)
    result = pytester.runpytest("--prompt=agent", "--prompteval-record=none")
    output = result.stdout.str() + result.stderr.str()
    assert error in output
    assert "Traceback" not in output


def test_a_sandbox_command_runs_at_most_the_time_the_deadline_leaves() -> None:
    """299 of 300 s spent (on a fake clock): the next command gets 1 s, not its 60 s
    timeout, and is killed saying so."""
    from pytest_prompteval.interaction.repository import tool_executor
    from pytest_prompteval.sandbox.workspace import BASH, Copy, Executor, Snapshot, Workspace

    now = [0.0]

    def spend(name: str, arguments: object) -> ToolOutcome:
        now[0] += 299
        return ToolOutcome("spent")

    deadline = Deadline(300, clock=lambda: now[0])
    deadline.run(spend, "earlier", {})
    assert deadline.left() == 1
    project = Path(tempfile.mkdtemp(prefix="prompteval-deadline-"))
    (project / "f").write_text("x\n")
    with Copy(Snapshot(folder=project)) as copy, Workspace(copy.path) as workspace:
        execute = tool_executor(Executor(workspace, {"bash": BASH}, timeout=60.0), deadline)
        outcome = execute("bash", {"command": "sleep 30"})
    assert outcome.is_error
    assert "timed out after 1 s" in outcome.content
    os.remove(project / "f")
    project.rmdir()
