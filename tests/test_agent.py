"""Agent cases through the real SDK against the loopback server playing a scripted agent:
the tool loop, parallel calls, is_error, turns, max_steps, unscripted calls, the format's
collection errors, trajectory assertions, replay offline."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

from pytest_prompteval.core.result import Step, ToolCall, Trajectory
from pytest_prompteval.scoring.judge import trajectory_materials
from pytest_prompteval.testing import (
    AnthropicServer,
    Block,
    ScriptedAgent,
    call,
    thinking,
    tool_use,
)

from .conftest import item_results

PROMPT = """\
system_prompt: "You are a support agent. Use the tools; never delete accounts."
user_prompt: "{message}"
include_input: false
model_config: {model: claude-haiku-4-5, max_tokens: 512}
max_steps: 5
tool_choice: {type: auto}
tools:
  - name: lookup_order
    description: "Look up an order by its id."
    input_schema: {type: object, properties: {order_id: {type: string}}, required: [order_id]}
  - name: issue_refund
    description: "Refund an order."
    input_schema: {type: object, properties: {order_id: {type: string}}}
  - name: delete_account
    description: "Delete the customer's account."
    input_schema: {type: object, properties: {}}
"""

CASE = """\
cases:
- id: refund_001
  input: {message: "Order A-1001 arrived broken, please refund it."}
  tool_results:
    - tool: lookup_order
      input: {order_id: {regex: "^A-"}}
      result: {status: delivered, amount: 42.0}
    - tool: issue_refund
      error: "refund limit exceeded"
  turns: ["Can you make it store credit instead?"]
  assert:
%s
"""

ASSERTS = """\
    - {type: tool_called, value: lookup_order, input: {order_id: A-1001}}
    - {type: tool_not_called, value: delete_account}
    - {type: tool_sequence, value: [lookup_order, issue_refund], mode: in_order}
    - {type: max_steps, value: 4}
    - {type: contains, value: "store credit"}
"""

REFUND: dict[str, list[list[Block]]] = {
    "Order A-1001": [
        [
            thinking("Look the order up first."),
            "Let me look.",
            call("lookup_order", order_id="A-1001"),
        ],
        [call("issue_refund", order_id="A-1001")],
        ["The refund failed: the limit is exceeded."],
        ["Done: you get store credit of 42.0."],
    ]
}


def project(pytester: pytest.Pytester, asserts: str = ASSERTS, case: str = CASE) -> None:
    pytester.mkdir("prompts").joinpath("agent.yaml").write_text(PROMPT)
    pytester.mkdir("prompt_cases").joinpath("agent.yaml").write_text(case % asserts.rstrip())


@pytest.fixture
def agent(anthropic_server: AnthropicServer) -> AnthropicServer:
    anthropic_server.responder = ScriptedAgent(REFUND)
    return anthropic_server


def run(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, list[dict[str, Any]]]:
    result = pytester.runpytest("--prompt=agent", "-p", "no:randomly", *args)
    return result, []


def but_replayed(trajectory: dict[str, Any]) -> dict[str, Any]:
    """A trajectory as a replay gives it again: each step's call is marked replayed."""
    steps = [{k: v for k, v in s.items() if k != "replayed"} for s in trajectory["steps"]]
    return {**trajectory, "steps": steps}


def test_the_loop_answers_calls_sends_turns_and_passes_every_assertion(
    pytester: pytest.Pytester, agent: AnthropicServer
) -> None:
    project(pytester)
    reprec = pytester.inline_run("--prompt=agent")
    reprec.assertoutcome(passed=1)
    (result,) = item_results(reprec)
    trajectory = result["trajectory"]
    assert [s["stop_reason"] for s in trajectory["steps"]] == [
        "tool_use", "tool_use", "end_turn", "end_turn"
    ]  # fmt: skip
    calls = [c for s in trajectory["steps"] for c in s["calls"]]
    assert [(c["name"], c["result"], c["is_error"]) for c in calls] == [
        ("lookup_order", '{"status": "delivered", "amount": 42.0}', False),
        ("issue_refund", "refund limit exceeded", True),
    ]
    assert trajectory["steps"][2]["turn"] == "Can you make it store credit instead?"
    assert result["response"] == "Done: you get store credit of 42.0."
    assert result["calls_live"] == 4 and result["answer_calls"] == 4
    # each step's own call: its figures add up to the item's, its thinking kept
    steps = trajectory["steps"]
    assert steps[0]["thinking"] == "Look the order up first." and steps[1]["thinking"] == ""
    assert sum(s["input_tokens"] for s in steps) == result["input_tokens"]
    assert sum(s["output_tokens"] for s in steps) == result["output_tokens"]
    assert all(s["output_tokens"] > 0 and s["latency_ms"] is not None for s in steps)
    assert [s["replayed"] for s in steps] == [False] * 4
    assert sum(s["cost_usd"] for s in steps) == pytest.approx(result["cost_usd"])
    # what the API received: results answer each call first, thinking passed back unchanged
    bodies = [r.body for r in agent.requests]
    assert len(bodies) == 4 and bodies[0]["tool_choice"] == {"type": "auto"}
    second = bodies[1]["messages"]
    assert second[1]["content"][0] == thinking("Look the order up first.")
    assert second[2]["content"] == [
        {
            "type": "tool_result",
            "tool_use_id": "toolu_01_03",
            "content": '{"status": "delivered", "amount": 42.0}',
        }
    ]
    assert bodies[2]["messages"][-1]["content"][0]["is_error"] is True
    assert bodies[3]["messages"][-1] == {
        "role": "user",
        "content": [{"type": "text", "text": "Can you make it store credit instead?"}],
    }
    # replayed offline: the same conversation, no request
    agent.requests.clear()
    reprec = pytester.inline_run("--prompt=agent", "--prompteval-record=none")
    reprec.assertoutcome(passed=1)
    assert agent.requests == []
    (replayed,) = item_results(reprec)
    assert replayed["calls_replayed"] == 4
    assert [s["replayed"] for s in replayed["trajectory"]["steps"]] == [True] * 4
    assert but_replayed(replayed["trajectory"]) == but_replayed(trajectory)


def test_parallel_calls_are_answered_together_in_one_message(
    pytester: pytest.Pytester, anthropic_server: AnthropicServer
) -> None:
    anthropic_server.responder = ScriptedAgent(
        {"Order A-1001": [
            [call("lookup_order", order_id="A-1001"), call("lookup_order", order_id="A-2002")],
            ["Both found: store credit."],
        ]}
    )  # fmt: skip
    case = CASE.replace('  turns: ["Can you make it store credit instead?"]\n', "")
    case = case.replace('input: {order_id: {regex: "^A-"}}', 'input: {order_id: {regex: "^A-"}}')
    project(pytester, "    - {type: tool_sequence, value: [lookup_order, lookup_order]}", case)
    reprec = pytester.inline_run("--prompt=agent")
    reprec.assertoutcome(passed=1)
    second = anthropic_server.requests[1].body["messages"][-1]["content"]
    assert [b["tool_use_id"] for b in second] == ["toolu_01_01", "toolu_01_02"]


@pytest.mark.parametrize(
    ("asserts", "why"),
    [
        ("    - {type: tool_called, value: issue_refund, input: {order_id: B-1}}",
         'failed assert tool_called: expected a call to issue_refund with input {"order_id": '
         '"B-1"}; made: lookup_order({"order_id": "A-1001"}), issue_refund({"order_id": '
         '"A-1001"})'),
        ("    - {type: tool_not_called, value: issue_refund}",
         "failed assert tool_not_called: expected no call to issue_refund; made: lookup_order"),
        ("    - {type: tool_sequence, value: [issue_refund, lookup_order], mode: in_order}",
         "failed assert tool_sequence: expected calls issue_refund, lookup_order (in_order)"),
        ("    - {type: tool_sequence, value: [lookup_order]}",
         "failed assert tool_sequence: expected calls lookup_order (exact)"),
        ("    - {type: tool_sequence, value: [lookup_order], mode: subset}",
         "failed assert tool_sequence: expected calls lookup_order (subset)"),
        ("    - {type: tool_sequence, value: [lookup_order, delete_account], mode: superset}",
         "failed assert tool_sequence: expected calls lookup_order, delete_account (superset)"),
        ("    - {type: tool_sequence, value: [issue_refund], mode: any_order}",
         "failed assert tool_sequence: expected calls issue_refund (any_order)"),
        ("    - {type: max_steps, value: 3}",
         "failed assert max_steps: expected: 4 steps <= 3"),
    ],
)  # fmt: skip
def test_each_trajectory_assertion_fails_naming_what_was_expected_and_the_calls(
    pytester: pytest.Pytester, agent: AnthropicServer, asserts: str, why: str
) -> None:
    project(pytester, asserts)
    result = pytester.runpytest("--prompt=agent")
    result.assert_outcomes(failed=1)
    text = result.stdout.str()
    assert why in text
    # the trajectory, readably
    result.stdout.fnmatch_lines(
        [
            "*step 1 (tool_use): 'Let me look.'",
            '*lookup_order({"order_id": "A-1001"}) -> result: {"status": "delivered", *',
            "*issue_refund(*) -> error: refund limit exceeded",
            "*user: Can you make it store credit instead?",
        ]
    )


@pytest.mark.parametrize(
    ("asserts", "mode"),
    [
        ("    - {type: tool_sequence, value: [lookup_order, issue_refund]}", "exact"),
        (
            "    - {type: tool_sequence, value: [issue_refund, lookup_order], mode: any_order}",
            "any",
        ),
        (
            "    - {type: tool_sequence, value: [lookup_order, issue_refund, add], mode: subset}",
            "s",
        ),
        ("    - {type: tool_sequence, value: [issue_refund], mode: superset}", "superset"),
        ("    - {tool_called: lookup_order}", "shorthand"),
    ],
)
def test_each_sequence_mode_passes_when_it_holds(
    pytester: pytest.Pytester, agent: AnthropicServer, asserts: str, mode: str
) -> None:
    project(pytester, asserts.replace(", add]", ", delete_account]"))
    pytester.runpytest("--prompt=agent").assert_outcomes(passed=1)


def test_an_unscripted_call_fails_naming_the_call_and_the_nearest_rule(
    pytester: pytest.Pytester, anthropic_server: AnthropicServer
) -> None:
    anthropic_server.responder = ScriptedAgent(
        {"Order A-1001": [[call("lookup_order", orderid="B-7")]]}
    )
    project(pytester, "    - {contains: x}")
    result = pytester.runpytest("--prompt=agent")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*refund_001 [[]agent[]]: case 'refund_001': tool call lookup_order("
            '{"orderid": "B-7"}) has no scripted result: nearest rule (prompt_cases/agent.yaml:5): '
            'lookup_order {"order_id": {"regex": "^A-"}}: order_id missing; did you mean '
            "'orderid'?; add a tool_results rule for it"
        ]
    )


def test_a_regex_object_the_model_sends_matches_no_rule_and_no_assertion(
    pytester: pytest.Pytester, anthropic_server: AnthropicServer
) -> None:
    """A rule's or an assertion's ``{regex: ...}`` applies to the model's string: the same
    mapping sent by the model as the tool's input is not a string that matches."""
    forged = {"regex": "^A-"}
    anthropic_server.responder = ScriptedAgent(
        {"Order A-1001": [[call("lookup_order", order_id=forged)], ["Done."]]}
    )
    project(pytester, "    - {contains: x}")
    result = pytester.runpytest("--prompt=agent")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ['*tool call lookup_order({"order_id": {"regex": "^A-"}}) has no scripted result*']
    )
    # answered by a rule without input, the assertion's pattern does not match it either
    case = CASE.replace('      input: {order_id: {regex: "^A-"}}\n', "")
    asserts = '    - {type: tool_called, value: lookup_order, input: {order_id: {regex: "^A-"}}}'
    pytester.path.joinpath("prompt_cases", "agent.yaml").write_text(case % asserts)
    result = pytester.runpytest("--prompt=agent")
    result.assert_outcomes(failed=1)
    assert "tool_called" in result.stdout.str()


def test_max_steps_fails_the_item_naming_the_last_call(
    pytester: pytest.Pytester, anthropic_server: AnthropicServer
) -> None:
    anthropic_server.responder = ScriptedAgent(
        {"Order A-1001": [[call("lookup_order", order_id=f"A-{n}")] for n in range(9)]}
    )
    project(pytester, "    - {contains: x}")
    result = pytester.runpytest("--prompt=agent")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ['*reached max_steps 5 before the conversation ended; the last call: '
         'lookup_order({"order_id": "A-4"})']
    )  # fmt: skip
    assert len(anthropic_server.requests) == 5


@pytest.mark.parametrize(
    ("where", "text", "error"),
    [
        ("case", "  tool_results:\n    - tool: lookup_ordr\n      result: x\n",
         "prompt_cases/agent.yaml:5: case 'c1', tool_results[0]: unknown tool 'lookup_ordr'; "
         "did you mean 'lookup_order'?"),
        ("case", "  tool_results:\n    - tool: lookup_order\n      reslt: x\n",
         "prompt_cases/agent.yaml:6: case 'c1', tool_results[0]: unknown field 'reslt'; did you "
         "mean 'result'?"),
        ("case", "  tool_results:\n    - tool: lookup_order\n",
         "tool_results[0]: expected one of result (what the tool returns) or error"),
        ("case", "  tool_results:\n    - tool: lookup_order\n      input: {id: {regex: '(?=a)'}}\n"
                 "      result: x\n", "tool_results[0]: input: invalid regular expression"),
        ("case", "  assert:\n    - {tool_not_called: delete_acount}\n",
         "prompt_cases/agent.yaml:4: case 'c1': assertion tool_not_called: unknown tool "
         "'delete_acount' with prompt 'agent'; known: lookup_order"),
        ("case", "  assert:\n    - {type: tool_sequence, value: [lookup_order], mode: inorder}\n",
         "mode 'inorder'; did you mean 'in_order'?"),
        ("case", "  tool_results:\n    - tool: lookup_order\n      result: {on: 2024-01-02}\n",
         "prompt_cases/agent.yaml:5: case 'c1', tool_results[0]: result: cannot be sent as JSON "
         "(Object of type date is not JSON serializable); quote the value"),
        ("case", "  turns: [1]\n", "case 'c1', field 'turns': expected a list of user messages"),
        ("case", "  user_simulator: {instructions: x, max_turn: 2}\n",
         "prompt_cases/agent.yaml:4: case 'c1', user_simulator: unknown field 'max_turn'; did "
         "you mean 'max_turns'?"),
        ("case", "  user_simulator: {instructions: x, max_turns: 0}\n",
         "case 'c1', user_simulator: max_turns: expected a whole number from 1 to 50"),
        ("case", "  tools: [add]\n",
         "case 'c1', tools: no Python tool 'add'; register one with @pytest_prompteval.tool"),
        ("prompt", "max_steps: 0\n", "prompts/agent.yaml:2: field 'max_steps': expected a whole"),
        ("prompt", "tools:\n  - {name: x, input_shema: {}}\n",
         "prompt 'agent', tool 'x': unknown field 'input_shema'; did you mean 'input_schema'?"),
    ],
)  # fmt: skip
def test_mistakes_in_the_format_are_one_line_naming_the_file_and_line(
    pytester: pytest.Pytester, where: str, text: str, error: str
) -> None:
    prompt = "user_prompt: hi\ntools:\n  - {name: lookup_order, input_schema: {type: object}}\n"
    if where == "prompt":
        prompt = "user_prompt: hi\n" + text
        text = ""
    pytester.mkdir("prompts").joinpath("agent.yaml").write_text(prompt)
    pytester.mkdir("prompt_cases").joinpath("agent.yaml").write_text(
        "cases:\n- id: c1\n  input: {}\n" + text
    )
    result = pytester.runpytest("--prompt=agent", "--prompteval-record=none")
    assert error in result.stdout.str()
    assert "Traceback" not in result.stdout.str()


def test_a_trajectory_assertion_on_a_case_without_tools_is_an_error(
    pytester: pytest.Pytester,
) -> None:
    pytester.mkdir("prompts").joinpath("plain.yaml").write_text("user_prompt: hi\n")
    pytester.mkdir("prompt_cases").joinpath("c.yaml").write_text(
        "cases:\n- id: c1\n  input: {}\n  assert:\n    - {tool_called: x}\n"
    )
    result = pytester.runpytest("--prompt=plain", "--prompteval-record=none")
    result.stdout.fnmatch_lines(
        ["*prompt_cases/c.yaml:4: case 'c1': assertion tool_called needs an agent case*"]
    )


def test_server_tools_given_with_a_type_are_sent_as_is(
    pytester: pytest.Pytester, anthropic_server: AnthropicServer
) -> None:
    anthropic_server.responder = ScriptedAgent({"hi": [["ok"]]})
    pytester.mkdir("prompts").joinpath("agent.yaml").write_text(
        "user_prompt: hi\ninclude_input: false\ntools:\n  - {type: bash_20250124, name: bash}\n"
    )
    pytester.mkdir("prompt_cases").joinpath("c.yaml").write_text(
        "cases:\n- id: c1\n  input: {}\n  assert: [{tool_not_called: bash}]\n"
    )
    pytester.runpytest("--prompt=agent").assert_outcomes(passed=1)
    assert anthropic_server.requests[0].body["tools"] == [{"type": "bash_20250124", "name": "bash"}]


def test_the_case_tools_are_added_and_win_on_a_name(
    pytester: pytest.Pytester, agent: AnthropicServer
) -> None:
    own = (
        "  tools:\n    - {name: lookup_order, description: mine, input_schema: {type: object}}\n"
        "    - {name: escalate, input_schema: {type: object}}\n"
    )
    project(
        pytester,
        "    - {tool_not_called: escalate}",
        CASE.replace("  tool_results:", own + "  tool_results:"),
    )
    pytester.runpytest("--prompt=agent").assert_outcomes(passed=1)
    tools = agent.requests[0].body["tools"]
    assert [(t["name"], t.get("description")) for t in tools] == [
        ("lookup_order", "mine"),
        ("issue_refund", "Refund an order."),
        ("delete_account", "Delete the customer's account."),
        ("escalate", None),
    ]


def test_the_loopback_server_refuses_a_malformed_tool_conversation(
    agent: AnthropicServer,
) -> None:
    import anthropic

    def send(*messages: dict[str, Any]) -> Any:
        with anthropic.Anthropic(base_url=agent.url, api_key="test", max_retries=0) as client:
            return client.messages.create(model="m", max_tokens=5, messages=list(messages))

    ask = {"role": "user", "content": "Order A-1001"}
    first = send(ask)
    assistant: dict[str, Any] = {
        "role": "assistant",
        "content": [b.model_dump() for b in first.content],
    }
    answered = {"type": "tool_result", "tool_use_id": first.content[2].id, "content": "ok"}
    cases = {
        "without `tool_result`": [{"type": "text", "text": "hm"}],
        "unexpected `tool_use_id`": [answered, {**answered, "tool_use_id": "toolu_x"}],
        "must come first": [{"type": "text", "text": "hm"}, answered],
    }
    for why, content in cases.items():
        with pytest.raises(anthropic.BadRequestError, match=why):
            send(ask, assistant, {"role": "user", "content": content})
    altered = {**assistant, "content": [{**assistant["content"][0], "thinking": "changed"}]}
    altered["content"] += assistant["content"][1:]
    for turn in (altered, {**assistant, "content": assistant["content"][1:]}):
        with pytest.raises(anthropic.BadRequestError, match="cannot be modified"):
            send(ask, turn, {"role": "user", "content": [answered]})
    # answered as the API requires, the conversation goes on
    assert send(ask, assistant, {"role": "user", "content": [answered]}).stop_reason == "tool_use"


TOOLS_CONFTEST = '''
from pathlib import Path

import pytest_prompteval


@pytest_prompteval.tool("add")
def add(a: int, b: int = 0) -> int:
    """Add two numbers.

    Not part of the description."""
    with Path("ran.log").open("a") as log:
        log.write(f"add {a} {b}\\n")
    return a + b


@pytest_prompteval.tool("boom")
def boom(x: str) -> str:
    raise pytest_prompteval.ToolError("no " + x)


def pytest_prompteval_tools():
    return {"shout": lambda text: {"said": text.upper()}}
'''


def test_python_tools_run_once_then_replay_from_the_recording(
    pytester: pytest.Pytester, anthropic_server: AnthropicServer
) -> None:
    anthropic_server.responder = ScriptedAgent(
        {"sum": [
            [call("add", a=2, b=3), call("boom", x="way"), call("shout", text="hi")],
            ["The sum is 5."],
        ]}
    )  # fmt: skip
    pytester.makeconftest(TOOLS_CONFTEST)
    pytester.mkdir("prompts").joinpath("agent.yaml").write_text(
        "user_prompt: sum\ninclude_input: false\ntools: [add, boom, shout]\n"
    )
    pytester.mkdir("prompt_cases").joinpath("c.yaml").write_text(
        "cases:\n- id: c1\n  input: {}\n  assert:\n"
        "    - {tool_called: add, input: {a: 2}}\n    - {contains: 'sum is 5'}\n"
    )
    pytester.runpytest("--prompt=agent").assert_outcomes(passed=1)
    tools = anthropic_server.requests[0].body["tools"]
    assert tools[0] == {
        "name": "add",
        "description": "Add two numbers.",
        "input_schema": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a"],
        },
    }
    results = anthropic_server.requests[1].body["messages"][-1]["content"]
    assert [(r["content"], r.get("is_error", False)) for r in results] == [
        ("5", False),
        ("no way", True),
        ('{"said": "HI"}', False),
    ]
    log = pytester.path / "ran.log"
    assert log.read_text() == "add 2 3\n"
    # a replay offline never runs the project's tools; --prompteval-record=all does
    anthropic_server.requests.clear()
    pytester.runpytest("--prompt=agent", "--prompteval-record=none").assert_outcomes(passed=1)
    assert anthropic_server.requests == [] and log.read_text() == "add 2 3\n"
    pytester.runpytest("--prompt=agent", "--prompteval-record=all").assert_outcomes(passed=1)
    assert log.read_text() == "add 2 3\nadd 2 3\n" and len(anthropic_server.requests) == 2


BUGGY_TOOLS = """
import hashlib

import pytest_prompteval


@pytest_prompteval.tool("escalate")
def escalate(ticket: str) -> str:
    \"\"\"Hand the ticket to a human.\"\"\"
    return hashlib.sha265(ticket.encode()).hexdigest()


@pytest_prompteval.tool("export")
def export(ticket: str) -> object:
    return {ticket}


@pytest_prompteval.tool("quit")
def quit(ticket: str) -> str:
    raise SystemExit(3)


@pytest_prompteval.tool("refund")
def refund(order: str, amount: float) -> str:
    \"\"\"Refund an order, up to 50.\"\"\"
    if amount > 50:
        raise pytest_prompteval.ToolError(f"refund of {amount} is over the limit of 50")
    return "refunded"
"""


@pytest.mark.parametrize(
    ("calls", "error"),
    [
        ([call("escalate", ticket="T-1")],
         ["*tool 'escalate' raised AttributeError: module 'hashlib' has no attribute 'sha265'*",
          "*conftest.py:9 in escalate: return hashlib.sha265(ticket.encode()).hexdigest()"]),
        ([call("export", ticket="T-1")],
         ["*tool 'export' returned set, which cannot be sent as JSON: Object of type set is "
          "not JSON serializable"]),
        ([call("quit", ticket="T-1")], ["*tool 'quit' raised SystemExit: 3"]),
    ],
)  # fmt: skip
def test_a_bug_in_a_python_tool_is_an_error_of_the_item_never_shown_to_the_model(
    pytester: pytest.Pytester,
    anthropic_server: AnthropicServer,
    calls: list[dict[str, Any]],
    error: list[str],
) -> None:
    anthropic_server.responder = ScriptedAgent({"help": [calls, ["Escalated."]]})
    pytester.makeconftest(BUGGY_TOOLS)
    pytester.mkdir("prompts").joinpath("agent.yaml").write_text(
        "user_prompt: help\ninclude_input: false\ntools: [escalate, export, quit]\n"
    )
    pytester.mkdir("prompt_cases").joinpath("c.yaml").write_text(
        "cases:\n- id: c1\n  input: {}\n  assert: [{contains: Escalated}]\n"
    )
    result = pytester.runpytest("--prompt=agent", "-p", "no:randomly")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(error)
    assert len(anthropic_server.requests) == 1  # the model never saw the tool's bug
    reprec = pytester.inline_run("--prompt=agent", "-p", "no:randomly")
    assert [r["error_type"] for r in item_results(reprec)] == ["tool"]


def test_a_tool_error_and_arguments_the_tool_does_not_take_go_to_the_model(
    pytester: pytest.Pytester, anthropic_server: AnthropicServer
) -> None:
    anthropic_server.responder = ScriptedAgent(
        {"help": [
            [call("refund", order="A-1", amount=80), call("refund", order_id="A-1", amount=8)],
            ["Sorry, over the limit."],
        ]}
    )  # fmt: skip
    pytester.makeconftest(BUGGY_TOOLS)
    pytester.mkdir("prompts").joinpath("agent.yaml").write_text(
        "user_prompt: help\ninclude_input: false\ntools: [refund]\n"
    )
    pytester.mkdir("prompt_cases").joinpath("c.yaml").write_text(
        "cases:\n- id: c1\n  input: {}\n  assert: [{contains: limit}]\n"
    )
    pytester.runpytest("--prompt=agent").assert_outcomes(passed=1)
    results = anthropic_server.requests[1].body["messages"][-1]["content"]
    assert [(r["content"], r.get("is_error", False)) for r in results] == [
        ("refund of 80 is over the limit of 50", True),
        ("invalid arguments: missing a required argument: 'order'", True),
    ]


def test_a_python_transcript_provider_that_raises_is_an_error_of_the_item(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        raisingapp="def answer(request, **kw):\n    return [{'role': 'user'}] + None\n"
    )
    pytester.syspathinsert()
    pytester.mkdir("prompts").joinpath("agent.yaml").write_text(PROMPT)
    pytester.mkdir("prompt_cases").joinpath("c.yaml").write_text(
        "cases:\n- id: c1\n  input: {message: x}\n  assert: [{tool_called: lookup_order}]\n"
    )
    result = pytester.runpytest("--prompt=agent", "--prompteval-provider=python:raisingapp:answer")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*provider 'python:raisingapp:answer', called for case 'c1' raised TypeError*",
         "*raisingapp.py:2 in answer*"]
    )  # fmt: skip


def test_the_summary_counts_steps_calls_errors_and_max_steps_the_same_under_xdist(
    pytester: pytest.Pytester, anthropic_server: AnthropicServer, xdist_args: list[str]
) -> None:
    looping = [[call("lookup_order", order_id=f"A-{n}")] for n in range(9)]
    anthropic_server.responder = ScriptedAgent({**REFUND, "Order A-9": looping})
    second = (
        '- id: loops_002\n  input: {message: "Order A-9?"}\n  tool_results:\n'
        "    - {tool: lookup_order, result: pending}\n  assert: [{contains: x}]\n"
    )
    project(pytester, ASSERTS, CASE + second)
    result = pytester.runpytest(
        "--prompt=agent", "--junitxml=junit.xml", "--prompteval-markdown=report.md", *xdist_args
    )
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        ["agent: agent: 2 conversations; per conversation 4.5 steps, 3.5 tool calls, 0.5 tool "
         "errors; 1 hit max_steps; pass@1 50.0%, pass^1 50.0%"]
    )  # fmt: skip
    junit = (pytester.path / "junit.xml").read_text()
    for name, value in [("mean_steps", "4.500000"), ("tool_calls", "7"), ("hit_max_steps", "1")]:
        assert f'<property name="prompteval.agent.{name}" value="{value}"' in junit
    assert "| `agent` | 4.5 | 3.5 | 0.5 | 1 |" in (pytester.path / "report.md").read_text()
    assert "per solved case" not in result.stdout.str()  # an agent's steps are no attempts


def test_upcoming_conversations_are_walked_ahead_and_each_tool_runs_once(
    pytester: pytest.Pytester, anthropic_server: AnthropicServer
) -> None:
    """The second step of c01's conversation is answered only once c02's second step has
    arrived: with only first steps sent ahead, c02's second step would wait for c01's item
    to end, and the wait below would run out."""
    scripts: dict[str, list[list[Block]]] = {
        f"Order c0{i}": [[call("add", a=i, b=1)], [f"The sum is {i + 1}."]] for i in range(4)
    }
    agent = ScriptedAgent(scripts)
    second_of_c02 = threading.Event()
    waited: list[bool] = []

    def responder(request: dict[str, Any]) -> dict[str, Any]:
        first = str(request["messages"][0]["content"])
        if len(request["messages"]) > 1 and "Order c02" in first:
            second_of_c02.set()
        elif len(request["messages"]) > 1 and "Order c01" in first:
            waited.append(second_of_c02.wait(30))
        return agent(request)

    anthropic_server.responder = responder
    pytester.makeconftest(TOOLS_CONFTEST)
    pytester.mkdir("prompts").joinpath("agent.yaml").write_text(
        "user_prompt: '{message}'\ninclude_input: false\ntools: [add]\n"
    )
    cases = "".join(
        f"- id: c0{i}\n  input: {{message: Order c0{i}}}\n  assert: [{{contains: 'sum is'}}]\n"
        for i in range(4)
    )
    pytester.mkdir("prompt_cases").joinpath("c.yaml").write_text("cases:\n" + cases)
    reprec = pytester.inline_run(
        "--prompt=agent", "--prompteval-concurrency=4", "-p", "no:randomly"
    )
    reprec.assertoutcome(passed=4)
    assert waited == [True]
    assert len(anthropic_server.requests) == 8  # each step once
    log = pytester.path / "ran.log"
    assert sorted(log.read_text().splitlines()) == [f"add {i} 1" for i in range(4)]
    results = item_results(reprec)
    assert [(r["calls_live"], r["answer_calls"]) for r in results] == [(2, 2)] * 4
    # the tools' outcomes were recorded with the answers: replayed, none runs again
    anthropic_server.requests.clear()
    again = pytester.inline_run("--prompt=agent", "--prompteval-record=none")
    again.assertoutcome(passed=4)
    assert anthropic_server.requests == [] and len(log.read_text().splitlines()) == 4


def test_the_estimate_walks_the_recordings_then_bounds_the_rest_by_max_steps(
    pytester: pytest.Pytester, agent: AnthropicServer
) -> None:
    project(pytester)
    unrecorded = pytester.runpytest("--prompt=agent", "--prompteval-estimate")
    unrecorded.stdout.fnmatch_lines(
        [
            "agent * 0 * 0 * 5 *",
            "total: 5 new calls, *",
            "1 agent items priced as up to max_steps calls each (5 of the new calls), each at "
            "the input tokens of the item's first unrecorded step*",
        ]
    )
    pytester.runpytest("--prompt=agent").assert_outcomes(passed=1)
    recorded = pytester.runpytest("--prompt=agent", "--prompteval-estimate")
    recorded.stdout.fnmatch_lines(["agent * 4 * 0 *", "total: 0 new calls, *"])
    assert "agent items priced" not in recorded.stdout.str()
    # a changed turn: the three steps before it replay, the rest are bounded by max_steps 5
    cases = pytester.path / "prompt_cases" / "agent.yaml"
    cases.write_text(cases.read_text().replace("credit instead?", "credit, please?"))
    changed = pytester.runpytest("--prompt=agent", "--prompteval-estimate")
    changed.stdout.fnmatch_lines(
        ["agent * 3 * 2 *", "total: 2 new calls, *", "1 agent items priced * (2 of the new calls)*"]
    )
    assert not [r for r in agent.requests if r.path.split("?")[0] == "/v1/messages"][4:]


def test_a_batch_sends_a_step_per_round_and_each_tool_runs_once(
    pytester: pytest.Pytester, anthropic_server: AnthropicServer
) -> None:
    anthropic_server.responder = ScriptedAgent(
        {"sum": [[call("add", a=2, b=3)], [call("add", a=5, b=1)], ["The sum is 6."]]}
    )
    pytester.makeconftest(TOOLS_CONFTEST)
    pytester.mkdir("prompts").joinpath("agent.yaml").write_text(
        "user_prompt: sum\ninclude_input: false\ntools: [add]\n"
    )
    pytester.mkdir("prompt_cases").joinpath("c.yaml").write_text(
        "cases:\n- id: c1\n  input: {}\n  assert: [{contains: 'sum is 6'}]\n"
    )
    result = pytester.runpytest(
        "--prompt=agent", "--prompteval-batch", "--prompteval-batch-poll=0.01"
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*batch round 3: strategies' and agents' next calls"])
    paths = [r.path.split("?")[0] for r in anthropic_server.requests]
    assert "/v1/messages" not in paths  # every step went in a batch
    assert [len(b["requests"]) for b in anthropic_server.batches.values()] == [1, 1, 1]
    assert (pytester.path / "ran.log").read_text() == "add 2 3\nadd 5 1\n"


SIMULATED = """\
cases:
- id: sim_001
  input: {message: "Order A-1001 arrived broken."}
  tool_results: [{tool: lookup_order, result: delivered}]
  user_simulator: {instructions: "You want store credit, not a refund.", max_turns: %d,
                   model: claude-sonnet-4-5}
  assert: [{contains: "store credit"}]
"""


@pytest.mark.parametrize(("max_turns", "user_calls"), [(4, 2), (1, 1)])
def test_a_simulated_user_talks_until_done_counted_as_the_users_calls(
    pytester: pytest.Pytester, anthropic_server: AnthropicServer, max_turns: int, user_calls: int
) -> None:
    agent = ScriptedAgent(
        {"Order A-1001": [
            [call("lookup_order", order_id="A-1001")],
            ["It is delivered; I can refund it."],
            ["Done: store credit of 42.0."],
            ["Anything else about store credit?"],
        ]}
    )  # fmt: skip
    asked: list[dict[str, Any]] = []

    def responder(request: dict[str, Any]) -> Any:
        if "You play the user" not in str(request.get("system")):
            return agent(request)
        asked.append(request)
        return "Thanks, that works. [DONE]" if len(asked) > 1 else "Store credit instead?"

    anthropic_server.responder = responder
    pytester.mkdir("prompts").joinpath("agent.yaml").write_text(PROMPT)
    pytester.mkdir("prompt_cases").joinpath("c.yaml").write_text(SIMULATED % max_turns)
    reprec = pytester.inline_run("--prompt=agent")
    reprec.assertoutcome(passed=1)
    (result,) = item_results(reprec)
    trajectory = result["trajectory"]
    assert [s["turn"] for s in trajectory["steps"]] == [None, "Store credit instead?", None]
    assert [s["simulated"] for s in trajectory["steps"]] == [False, True, False]
    assert (trajectory["user_calls"], trajectory["user_turns"]) == (user_calls, 1)
    # the agent's figures are its own three calls; the user's apart
    assert result["answer_calls"] == 3 and result["user_calls"] == user_calls
    assert result["calls_live"] == 3 + user_calls and result["user_output_tokens"] > 0
    # the simulated user sees the instructions and what the agent said, in its own model
    assert len(asked) == user_calls and asked[0]["model"] == "claude-sonnet-4-5"
    assert "You want store credit, not a refund." in asked[0]["system"]
    assert "[DONE]" in asked[0]["system"]
    transcript = asked[0]["messages"][0]["content"]
    assert "User: Order A-1001 arrived broken." in str(transcript)
    assert "Assistant: It is delivered; I can refund it." in str(transcript)
    # replayed offline, the user's calls too
    anthropic_server.requests.clear()
    again = pytester.inline_run("--prompt=agent", "--prompteval-record=none")
    again.assertoutcome(passed=1)
    assert anthropic_server.requests == []
    (replayed,) = item_results(again)
    assert but_replayed(replayed["trajectory"]) == but_replayed(trajectory)
    assert replayed["user_calls"] == user_calls


APP = '''
import anthropic


def sdk(content, stop_reason):
    return anthropic.types.Message.model_validate({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "m",
        "content": content, "stop_reason": stop_reason,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    })


def answer(request, case, prompt, sample):
    """The app's own agent: its whole conversation, as dicts or as the SDK's Messages."""
    lookup = {"type": "tool_use", "id": "t1", "name": "lookup_order",
              "input": {"order_id": "A-1001"}}
    refund = {"type": "tool_use", "id": "t2", "name": "issue_refund",
              "input": {"order_id": "A-1001"}}
    turns = [
        {"role": "user", "content": "Order A-1001 arrived broken."},
        {"role": "assistant", "content": [{"type": "text", "text": "Looking."}, lookup]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "delivered"}]},
        {"role": "assistant", "content": [refund]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t2", "content": "limit", "is_error": True}]},
        {"role": "assistant", "content": [{"type": "text", "text": "You get store credit."}]},
    ]
    if case.id == "sdk_001":
        for index in (1, 3, 5):
            stop = "end_turn" if index == 5 else "tool_use"
            turns[index] = sdk(turns[index]["content"], stop)
    return turns
'''


def test_a_python_provider_returns_a_whole_transcript_graded_by_the_same_assertions(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(myapp=APP)
    pytester.syspathinsert()
    pytester.mkdir("prompts").joinpath("agent.yaml").write_text(PROMPT)
    asserts = (
        "  assert:\n"
        "    - {type: tool_called, value: lookup_order, input: {order_id: A-1001}}\n"
        "    - {type: tool_sequence, value: [lookup_order, issue_refund]}\n"
        "    - {type: tool_not_called, value: delete_account}\n"
        "    - {type: max_steps, value: 3}\n"
        "    - {contains: store credit}\n"
    )
    pytester.mkdir("prompt_cases").joinpath("c.yaml").write_text(
        "cases:\n"
        + "".join(
            f"- id: {name}\n  input: {{message: x}}\n{asserts}" for name in ("dicts_001", "sdk_001")
        )
    )
    provider = "--prompteval-provider=python:myapp:answer"
    reprec = pytester.inline_run("--prompt=agent", provider)
    reprec.assertoutcome(passed=2)
    dicts, sdk = item_results(reprec)
    assert dicts["trajectory"] == sdk["trajectory"]
    steps = dicts["trajectory"]["steps"]
    assert [(s["stop_reason"], s["text"]) for s in steps] == [
        ("tool_use", "Looking."), ("tool_use", ""), ("end_turn", "You get store credit.")
    ]  # fmt: skip
    assert [(c["name"], c["result"], c["is_error"]) for s in steps for c in s["calls"]] == [
        ("lookup_order", "delivered", False),
        ("issue_refund", "limit", True),
    ]
    assert dicts["response"] == "You get store credit." and sdk["output_tokens"] == 15
    # replayed from its recording, the same trajectory; and a failing assertion says so
    cases = pytester.path / "prompt_cases" / "c.yaml"
    cases.write_text(cases.read_text().replace("value: 3}", "value: 2}"))
    again = pytester.inline_run("--prompt=agent", provider, "--prompteval-record=none")
    again.assertoutcome(failed=2)
    assert [r["trajectory"] for r in item_results(again)] == [dicts["trajectory"]] * 2
    shown = pytester.runpytest("--prompt=agent", provider, "--prompteval-record=none")
    shown.stdout.fnmatch_lines(["*failed assert max_steps: expected: 3 steps <= 2*"])


def test_a_transcript_that_is_not_one_fails_naming_the_message(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        badapp="def answer(request, **kw):\n    return [{'role': 'user', 'content': 'hi'}, 3]\n"
    )
    pytester.syspathinsert()
    pytester.mkdir("prompts").joinpath("agent.yaml").write_text(PROMPT)
    pytester.mkdir("prompt_cases").joinpath("c.yaml").write_text(
        "cases:\n- id: c1\n  input: {message: x}\n  assert: [{contains: x}]\n"
    )
    result = pytester.runpytest("--prompt=agent", "--prompteval-provider=python:badapp:answer")
    result.stdout.fnmatch_lines(
        ["*provider 'python:badapp:answer' returned a transcript whose message 1 is int; "
         "expected {role, content} or an anthropic Message*"]
    )  # fmt: skip
    assert "Traceback" not in result.stdout.str()


@pytest.mark.parametrize(
    ("old", "new", "why"),
    [
        ("result: {status: delivered, amount: 42.0}", "result: {status: shipped}",
         "step 2 of the conversation: no recording answers it: the result of tool call "
         'lookup_order({"order_id": "A-1001"}) changed: recorded \'{"status": "delivered", '
         '"amount": 42.0}\', now \'{"status": "shipped"}\' since it was recorded'),
        ('error: "refund limit exceeded"', "result: ok",
         "step 3 of the conversation: no recording answers it: the result of tool call "
         'issue_refund({"order_id": "A-1001"}) changed: is_error is now False'),
        ("store credit instead?", "store credit, please?",
         "step 4 of the conversation: no recording answers it: a user turn changed: recorded "
         "'Can you make it store credit instead?', now 'Can you make it store credit, please?'"),
        ("  tool_results:", "  tools: [{name: escalate, input_schema: {type: object}}]\n"
         "  tool_results:",
         "the first step of the conversation: no recording answers it: the tools changed: "
         "'escalate' added"),
    ],
)  # fmt: skip
def test_a_replay_miss_names_the_step_and_what_changed(
    pytester: pytest.Pytester, agent: AnthropicServer, old: str, new: str, why: str
) -> None:
    project(pytester)
    pytester.runpytest("--prompt=agent").assert_outcomes(passed=1)
    cases = pytester.path / "prompt_cases" / "agent.yaml"
    assert old in cases.read_text()
    cases.write_text(cases.read_text().replace(old, new))
    result = pytester.runpytest("--prompt=agent", "--prompteval-record=none")
    result.assert_outcomes(errors=1)
    assert why in result.stdout.str().replace("\n", " ")


def test_the_html_report_shows_each_conversation_and_json_report_carries_the_counts(
    pytester: pytest.Pytester, agent: AnthropicServer
) -> None:
    project(pytester, "    - {type: max_steps, value: 3}")
    pytester.runpytest(
        "--prompt=agent",
        "--prompteval-html=report.html",
        "--json-report",
        "--json-report-file=report.json",
    ).assert_outcomes(failed=1)
    page = (pytester.path / "report.html").read_text()
    # open: a step failed (the first over max_steps, marked)
    assert (
        '<details class="detail" open><summary>Agent conversation: 4 steps, 2 tool calls, '
        "1 tool errors</summary>" in page
    )
    assert '<code class="tool-name">issue_refund</code>' in page
    assert '<span class="role">user</span><pre>Can you make it store credit instead?' in page
    assert '<section class="step failed-step" id="step-4">' in page
    assert "✗ max_steps: expected: 4 steps &lt;= 3" in page
    report = json.loads((pytester.path / "report.json").read_text())
    version = report["prompteval"]["versions"]["agent"]
    assert {k: version[k] for k in ("agent_items", "agent_steps", "tool_calls", "tool_errors",
                                    "hit_max_steps", "mean_steps")} == {
        "agent_items": 1, "agent_steps": 4, "tool_calls": 2, "tool_errors": 1,
        "hit_max_steps": 0, "mean_steps": 4.0,
    }  # fmt: skip
    (test,) = report["tests"]
    assert len(test["metadata"]["prompteval"]["trajectory"]["steps"]) == 4


def test_the_estimate_bounds_a_simulated_users_calls_by_max_turns(
    pytester: pytest.Pytester, anthropic_server: AnthropicServer
) -> None:
    pytester.mkdir("prompts").joinpath("agent.yaml").write_text(PROMPT)
    pytester.mkdir("prompt_cases").joinpath("c.yaml").write_text(SIMULATED % 2)
    result = pytester.runpytest("--prompt=agent", "--prompteval-estimate")
    # max_steps 5 of the agent's, and the user's 2 turns and the call saying it is done
    result.stdout.fnmatch_lines(["total: 8 new calls, *", "1 agent items priced * (8 of the new*"])
    assert {r.path.split("?")[0] for r in anthropic_server.requests} == {
        "/v1/messages/count_tokens"
    }


def test_a_batch_sends_a_simulated_users_calls_in_their_own_rounds(
    pytester: pytest.Pytester, anthropic_server: AnthropicServer
) -> None:
    agent = ScriptedAgent(
        {"Order A-1001": [[call("lookup_order", order_id="A-1001")], ["Delivered."],
                          ["Done: store credit."]]}
    )  # fmt: skip
    users: list[str] = []

    def responder(request: dict[str, Any]) -> Any:
        if "You play the user" not in str(request.get("system")):
            return agent(request)
        users.append(request["model"])
        return "[DONE]" if len(users) > 1 else "Store credit instead?"

    anthropic_server.responder = responder
    pytester.mkdir("prompts").joinpath("agent.yaml").write_text(PROMPT)
    pytester.mkdir("prompt_cases").joinpath("c.yaml").write_text(SIMULATED % 4)
    reprec = pytester.inline_run(
        "--prompt=agent", "--prompteval-batch", "--prompteval-batch-poll=0.01"
    )
    reprec.assertoutcome(passed=1)
    paths = [r.path.split("?")[0] for r in anthropic_server.requests]
    assert "/v1/messages" not in paths
    # agent, agent, user, agent, user: a round each
    assert [len(b["requests"]) for b in anthropic_server.batches.values()] == [1] * 5
    (result,) = item_results(reprec)
    assert (result["answer_calls"], result["user_calls"]) == (3, 2)


AGENT_DIMENSIONS = ["task_completed", "policy_followed", "tools_used_correctly", "communication"]


def test_the_judge_reads_the_trajectory_by_the_agent_rubric(
    pytester: pytest.Pytester, anthropic_server: AnthropicServer
) -> None:
    agent = ScriptedAgent(REFUND)

    def respond(request: dict[str, Any]) -> Any:
        if request.get("tool_choice", {}).get("name") == "submit_verdict":
            scores = dict.fromkeys(AGENT_DIMENSIONS, 90)
            verdict = {"scores": scores, "missing_topics": [], "incorrect_claims": [], "notes": ""}
            return tool_use(request, verdict)
        return agent(request)

    anthropic_server.responder = respond
    project(pytester)
    reprec = pytester.inline_run("--prompt=agent", "--prompteval-scorer=claude")
    reprec.assertoutcome(passed=1)
    (judged,) = [r.body for r in anthropic_server.requests if r.body["tools"][0]["name"] == (
        "submit_verdict"
    )]  # fmt: skip
    schema = judged["tools"][0]["input_schema"]
    assert schema["properties"]["scores"]["required"] == AGENT_DIMENSIONS
    materials = judged["messages"][0]["content"][0]["text"]
    trajectory = materials.split("<trajectory>\n")[1].split("\n</trajectory>")[0]
    assert trajectory.splitlines() == [
        "step 1 (stopped for tool_use)",
        "assistant: Let me look.",
        'tool call: lookup_order {"order_id":"A-1001"}',
        'tool result: {"status": "delivered", "amount": 42.0}',
        "",
        "step 2 (stopped for tool_use)",
        'tool call: issue_refund {"order_id":"A-1001"}',
        "tool error: refund limit exceeded",
        "",
        "step 3 (stopped for end_turn)",
        "assistant: The refund failed: the limit is exceeded.",
        "user: Can you make it store credit instead?",
        "",
        "step 4 (stopped for end_turn)",
        "assistant: Done: you get store credit of 42.0.",
    ]
    (result,) = item_results(reprec)
    assert result["judge_template"] == "agent_review"


def test_the_judge_keeps_the_newest_steps_whole_within_its_bound() -> None:
    steps = [
        Step(n, "tool_use", calls=[ToolCall("look", {"n": n}, "x" * 30, is_error=n == 1)])
        for n in range(1, 6)
    ]
    text = trajectory_materials(Trajectory(steps), budget=200)
    assert text.startswith("(steps 1-3 left out for length: 3 tool calls, 1 errors)\n\nstep 4")
    assert text.endswith('tool call: look {"n":5}\ntool result: ' + "x" * 30)
    # a step longer than the bound is still kept whole when it is the newest
    assert trajectory_materials(Trajectory(steps[:1]), budget=10).endswith("x" * 30)


def test_an_ablation_derives_a_version_without_a_part_and_compares_with_it(
    pytester: pytest.Pytester, agent: AnthropicServer
) -> None:
    project(pytester)
    prompts = pytester.path / "prompts"
    prompts.joinpath("bare.yaml").write_text(
        "ablate: {from: agent, remove: [system_prompt, tool_description lookup_order]}\n"
    )
    result = pytester.runpytest("--prompt=agent", "--compare=bare", "-p", "no:randomly")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*agent vs bare: 1 paired cases*"])
    bare = [r.body for r in agent.requests if "system" not in r.body]
    assert len(bare) == 4 and len(agent.requests) == 8
    lookup = bare[0]["tools"][0]
    assert lookup["name"] == "lookup_order" and "description" not in lookup
    for ablate, error in [
        ("{from: agnet, remove: system_prompt}",
         "prompts/bare.yaml:1: ablate: from: no prompt version 'agnet' in prompts; did you "
         "mean 'agent'?"),
        ("{from: agent, remove: tool issue_refnd}",
         "prompts/bare.yaml:1: ablate: remove: 'agent' has no tool 'issue_refnd'; did you mean "
         "'issue_refund'?"),
        ("{from: agent, remove: tools}",
         "prompts/bare.yaml:1: ablate: remove: unknown part 'tools'; did you mean 'tool'? "
         "(expected system_prompt, tool NAME or tool_description NAME)"),
    ]:  # fmt: skip
        prompts.joinpath("bare.yaml").write_text(f"ablate: {ablate}\n")
        bad = pytester.runpytest("--prompt=agent", "--compare=bare", "--prompteval-record=none")
        assert error in bad.stdout.str() + bad.stderr.str()
        assert "Traceback" not in bad.stdout.str() + bad.stderr.str()
