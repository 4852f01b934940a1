"""Calls sent ahead of the items: several in flight, items still report in order, -x stops."""

from __future__ import annotations

import itertools
import shutil
import subprocess
import threading
import time
from typing import Any

import pytest

from pytest_prompteval.providers.ratelimit import DEFAULT_CONCURRENCY
from pytest_prompteval.testing import AnthropicServer, ScriptedAgent, call

from .conftest import generated_project

GOOD = " The loop optimization unrolls the loop; an early exit skips it when n is zero."


@pytest.fixture
def project(pytester: pytest.Pytester, anthropic_server: AnthropicServer) -> pytest.Pytester:
    anthropic_server.latency = 0.1
    generated_project(
        pytester, 12, prompt="user_prompt: Explain.\nmodel_config: {model: claude-haiku-4-5}\n"
    )
    return pytester


def answer_all(request: dict[str, Any]) -> str:
    return GOOD


def test_calls_go_ahead_of_items_in_order(
    project: pytest.Pytester, anthropic_server: AnthropicServer, xdist_args: list[str]
) -> None:
    # the second call is answered only once the third has arrived: sent ahead together,
    # they are in flight at once however loaded the machine (one at a time, it would wait
    # 30 s in vain and the bound below fails)
    third = threading.Event()
    arrived = itertools.count(1)

    def answer_together(request: dict[str, Any]) -> str:
        n = next(arrived)  # atomic under the GIL
        if n == 3:
            third.set()
        elif n == 2:
            third.wait(30)
        return GOOD

    anthropic_server.responder = answer_together
    result = project.runpytest("--prompt=v", "--prompteval-concurrency=4", "-v", *xdist_args)
    result.assert_outcomes(passed=12)
    assert len(anthropic_server.requests) == 12  # each call once, prefetched or not
    # Up to 4 ahead, plus the item's own call, per process.
    processes = 2 if xdist_args else 1
    assert 2 <= anthropic_server.max_in_flight <= 5 * processes
    if not xdist_args:
        passed = [line.split(" ")[0] for line in result.outlines if " PASSED" in line]
        assert passed == [f"prompt_cases/c.yaml::c{i:02d}[v]" for i in range(12)]


def test_concurrency_1_sends_one_at_a_time(
    project: pytest.Pytester, anthropic_server: AnthropicServer
) -> None:
    anthropic_server.responder = answer_all
    project.runpytest("--prompt=v", "--prompteval-concurrency=1").assert_outcomes(passed=12)
    assert anthropic_server.max_in_flight == 1


def test_exitfirst_stops_new_calls(
    project: pytest.Pytester, anthropic_server: AnthropicServer
) -> None:
    """The first item's call is answered at once and fails the item while the calls sent
    ahead for the next items are in flight (they take 3 s each): -x makes none of the calls
    queued behind those."""
    anthropic_server.latency = 0.0

    def responder(request: dict[str, Any]) -> str:
        if '{"n": 0}' not in str(request["messages"]):
            time.sleep(3.0)
        return "Nothing relevant."  # every item fails

    anthropic_server.responder = responder
    result = project.runpytest("--prompt=v", "--prompteval-concurrency=4", "-x")
    result.assert_outcomes(failed=1)
    # The first item's call and the calls in flight when it is answered: at most two rounds
    # of 4 (the rate gate may let the first item's call wait behind one round), never the
    # whole suite.
    assert len(anthropic_server.requests) <= 1 + 8 < 12


def test_agent_conversations_walked_ahead_take_turns_for_the_calls(
    pytester: pytest.Pytester, anthropic_server: AnthropicServer
) -> None:
    # four conversations of three steps, two calls at a time: the first item walks its own;
    # the other three are walked ahead, each step queued behind the steps already asked for
    # (the rate gate may let a waiting call pass another, never a whole conversation). A
    # walk that held a place for its whole conversation made the fourth wait for the second
    # or third to end (the last conversations then ran alone, places idle)
    scripted = ScriptedAgent({"Order": [[call("lookup", n=1)]] * 2 + [["Done."]]})
    arrivals: list[tuple[str, int]] = []

    def respond(request: dict[str, Any]) -> Any:
        first = request["messages"][0]["content"]
        text = first if isinstance(first, str) else first[0]["text"]
        arrivals.append((text, len(request["messages"]) // 2 + 1))
        return scripted(request)

    anthropic_server.responder = respond
    anthropic_server.latency = 0.1  # room for every walk to ask its first step in turn
    pytester.makefile(
        ".yaml",
        **{
            "prompts/v": "user_prompt: 'Order {n}'\ninclude_input: false\n"
            "model_config: {model: claude-haiku-4-5}\n"
            "tools:\n  - {name: lookup, input_schema: {type: object}}\n",
            "prompt_cases/c": "cases:\n"
            + "".join(
                f"- id: c{i}\n  input: {{n: {i}}}\n  tool_results: [{{tool: lookup, result: ok}}]"
                "\n  assert: [{contains: Done}]\n"
                for i in range(4)
            ),
        },
    )
    result = pytester.runpytest("--prompt=v", "--prompteval-concurrency=2", "-p", "no:randomly")
    result.assert_outcomes(passed=4)
    assert len(arrivals) == 12
    order = {step: i for i, step in enumerate(arrivals)}
    assert order[("Order 3", 1)] < min(order[("Order 1", 3)], order[("Order 2", 3)]), arrivals
    assert anthropic_server.max_in_flight <= 3  # two ahead, and the first item's own


@pytest.mark.skipif(shutil.which("ss") is None, reason="needs ss (iproute2)")
def test_the_loopback_server_holds_as_many_pending_connections_as_a_run_opens() -> None:
    # socketserver's backlog of 5 dropped the handshakes of the 32 connections a run opens
    # at once; each was sent again a second later, the run's first second at a fraction of
    # its concurrency
    with AnthropicServer(answer_all) as server:
        port = server.url.rsplit(":", 1)[1]
        listed = subprocess.run(
            ["ss", "-ltnH", f"sport = :{port}"], capture_output=True, text=True, check=True
        )
    backlog = int(listed.stdout.split()[2])  # State Recv-Q Send-Q: a listener's backlog
    assert backlog >= DEFAULT_CONCURRENCY
