"""Adapting to rate limits: AIMD in-flight limit, pauses from 429s and headers, shared by
the run's processes through a file."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from pytest_prompteval.providers.ratelimit import RateGate, pause_from_headers
from pytest_prompteval.testing import AnthropicServer, Fault

from .conftest import generated_project


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_429_halves_the_limit_and_pauses_successes_grow_it_back(tmp_path: Path) -> None:
    clock = Clock()
    gate = RateGate(8, tmp_path / "rate.json", clock=clock)
    gate.limited({"retry-after": "2"})
    assert gate.limit == 4 and gate.paused_until() == 1002.0
    gate.limited({"retry-after-ms": "500"})
    assert gate.limit == 2 and gate.paused_until() == 1002.0  # the longer pause stands
    for _ in range(20):
        gate.succeeded({})
    assert 5 < gate.limit <= 8
    for _ in range(200):
        gate.succeeded({})
    assert gate.limit == 8


def test_a_pause_is_shared_through_the_file(tmp_path: Path) -> None:
    clock = Clock()
    shared = tmp_path / "rate.json"
    worker_a, worker_b = RateGate(4, shared, clock=clock), RateGate(4, shared, clock=clock)
    worker_a.limited({"retry-after": "5"})
    assert worker_b.paused_until() == 1005.0
    waiting = threading.Thread(target=worker_b.acquire)
    waiting.start()
    waiting.join(0.3)
    assert waiting.is_alive()  # held by the other process's pause
    clock.now = 1006.0
    waiting.join(2)
    assert not waiting.is_alive() and worker_b.in_flight == 1


def test_headers_that_say_nothing_is_left_pause_until_reset() -> None:
    now = datetime(2026, 1, 1, tzinfo=timezone.utc)
    reset = (now + timedelta(seconds=30)).isoformat().replace("+00:00", "Z")
    headers = {
        "anthropic-ratelimit-tokens-remaining": "0",
        "anthropic-ratelimit-tokens-reset": reset,
        "anthropic-ratelimit-requests-remaining": "41",
    }
    assert pause_from_headers(headers, now.timestamp()) == now.timestamp() + 30
    assert pause_from_headers({"anthropic-ratelimit-requests-remaining": "3"}, 0.0) is None


def test_calls_wait_for_the_reset_the_api_announced(
    pytester: pytest.Pytester, anthropic_server: AnthropicServer
) -> None:
    def headers(number: int) -> dict[str, str]:
        if number != 1:
            return {}
        reset = datetime.now(timezone.utc) + timedelta(seconds=0.6)
        return {
            "anthropic-ratelimit-requests-remaining": "0",
            "anthropic-ratelimit-requests-reset": reset.isoformat(),
        }

    anthropic_server.response_headers = headers
    anthropic_server.inject()  # no faults
    generated_project(pytester, 3, prompt="user_prompt: x\n", fields="  threshold: 0\n")
    pytester.runpytest("--prompt=v", "--prompteval-concurrency=1").assert_outcomes(passed=3)
    first, second = anthropic_server.requests[:2]
    assert second.received_at - first.received_at >= 0.5  # held until the reset


def test_a_429_pauses_new_calls_of_the_whole_process(
    pytester: pytest.Pytester, anthropic_server: AnthropicServer
) -> None:
    anthropic_server.inject(Fault.rate_limited(retry_after=0.5))
    generated_project(pytester, 8, prompt="user_prompt: x\n", fields="  threshold: 0\n")
    pytester.runpytest("--prompt=v", "--prompteval-concurrency=2").assert_outcomes(passed=8)
    times = [
        r.received_at - anthropic_server.requests[0].received_at for r in anthropic_server.requests
    ]
    assert len(times) == 9  # the 429, the SDK's retry of it, and the seven others
    # Calls already on their way when the 429 came back may land at once; nothing started
    # after it goes out before the pause it asked for is over.
    assert all(t < 0.05 or t >= 0.45 for t in times), times
