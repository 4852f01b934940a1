"""Calls sent ahead of the items: several in flight, items still report in order, -x stops."""

from __future__ import annotations

import itertools
import threading
import time
from typing import Any

import pytest

from pytest_prompteval.testing import AnthropicServer

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
