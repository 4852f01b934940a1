"""Adapting to rate limits: pacing from the rate-limit headers, AIMD in-flight limit, pauses
from 429s and headers, shared by the run's processes through a file; the loopback server's
requests-per-minute limit. Time is a fake clock throughout."""

from __future__ import annotations

import heapq
import threading
from datetime import datetime, timedelta, timezone
from pathlib import Path

import anthropic
import pytest

from pytest_prompteval.providers.ratelimit import Pacer, RateGate, Ticket, pause_from_headers
from pytest_prompteval.testing import AnthropicServer, Fault, RequestLimit

from .conftest import generated_project


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_429_halves_the_limit_once_per_window_pauses_and_successes_grow_it_back(
    tmp_path: Path,
) -> None:
    clock = Clock()
    gate = RateGate(8, tmp_path / "rate.json", clock=clock)
    gate.probing = False
    together = [gate.try_acquire() for _ in range(3)]
    assert all(isinstance(t, Ticket) for t in together)
    for ticket in together:
        assert isinstance(ticket, Ticket)
        gate.limited(ticket, {"retry-after": "2"})
        gate.release(ticket)
    assert gate.limit == 4 and gate.paused_until() == 1002.0  # halved once for the three
    clock.now = 1003.0
    later = gate.try_acquire()
    assert isinstance(later, Ticket)
    gate.limited(later, {"retry-after-ms": "500"})
    assert gate.limit == 2 and gate.paused_until() == 1003.5
    for _ in range(20):
        gate.succeeded(later, {})
    assert 5 < gate.limit <= 8
    for _ in range(200):
        gate.succeeded(later, {})
    assert gate.limit == 8


def test_a_pause_is_shared_through_the_file(tmp_path: Path) -> None:
    clock = Clock()
    shared = tmp_path / "rate.json"
    worker_a, worker_b = RateGate(4, shared, clock=clock), RateGate(4, shared, clock=clock)
    worker_a.limited(Ticket(1, clock.now), {"retry-after": "5"})
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


def test_until_the_first_answer_one_call_at_a_time_then_the_full_limit() -> None:
    clock = Clock()
    gate = RateGate(4, clock=clock)
    first = gate.try_acquire()
    assert isinstance(first, Ticket) and gate.try_acquire() == 0.0
    gate.succeeded(first, {})
    gate.release(first)
    started = [gate.try_acquire() for _ in range(5)]
    assert [isinstance(t, Ticket) for t in started] == [True] * 4 + [False]


def test_the_call_an_item_waits_on_takes_the_next_place_before_calls_sent_ahead() -> None:
    # one place (as until the first answer, or at a limit of one): a call sent ahead waits,
    # then the item's own asks; when the place frees, the item's call takes it (it waited a
    # round behind the calls sent ahead before; under -x those were calls not needed)
    gate = RateGate(1, clock=Clock())
    held = gate.try_acquire()
    assert isinstance(held, Ticket)
    admitted: list[str] = []
    tickets: dict[str, Ticket] = {}

    def call(name: str, first: bool) -> None:
        tickets[name] = gate.acquire(first)
        admitted.append(name)

    ahead = threading.Thread(target=call, args=("ahead", False))
    ahead.start()
    own = threading.Thread(target=call, args=("own", True))
    own.start()
    for _ in range(6000):  # both are waiting (no wall-clock bound: a count of looks)
        with gate._cond:
            if gate._first_waiting == 1 and len(gate._cond._waiters) == 2:  # type: ignore[attr-defined]
                break
        threading.Event().wait(0.005)
    gate.release(held)
    own.join(60)
    assert admitted == ["own"]
    gate.release(tickets["own"])
    ahead.join(60)
    assert admitted == ["own", "ahead"]


def limit_headers(limit: int, remaining: int) -> dict[str, str]:
    return {
        "anthropic-ratelimit-requests-limit": str(limit),
        "anthropic-ratelimit-requests-remaining": str(remaining),
    }


def test_the_pacer_counts_calls_started_since_the_answer_and_the_refill() -> None:
    pacer = Pacer(safety=1.0)
    first = pacer.start(0.0)
    for _ in range(3):
        pacer.start(0.1)
    pacer.observe(first, limit_headers(600, 9), 0.2)  # 10/s: 9, three started since, 2 refilled
    assert pacer.buckets["requests"].left == pytest.approx(9 - 3 + 2)
    assert pacer.wait(0.2) == 0.0
    for _ in range(7):
        pacer.start(0.2)
    assert pacer.wait(0.2) == pytest.approx(0.1)  # 1 left: one more refill keeps a margin
    assert pacer.wait(0.31) == 0.0
    late = Ticket(1, 0.0)  # an older answer does not overwrite what a newer one said
    pacer.observe(late, limit_headers(600, 9), 0.3)
    assert pacer.buckets["requests"].left == pytest.approx(2.0)


def test_a_call_started_earlier_but_not_answered_may_not_be_counted_yet() -> None:
    pacer = Pacer(safety=1.0)
    straggler, answered = pacer.start(0.0), pacer.start(0.0)
    pacer.observe(answered, limit_headers(600, 9), 0.0)  # the API had not seen the straggler
    assert pacer.buckets["requests"].left == 8
    pacer.finish(straggler)
    pacer.finish(answered)
    pacer.observe(pacer.start(0.0), limit_headers(600, 6), 0.0)
    assert pacer.buckets["requests"].left == 6


def test_token_limits_pace_by_the_tokens_calls_spend() -> None:
    pacer = Pacer(safety=1.0)
    ticket = pacer.start(0.0)
    headers = {
        "anthropic-ratelimit-input-tokens-limit": "6000",  # 100 a second
        "anthropic-ratelimit-input-tokens-remaining": "300",
    }
    pacer.observe(ticket, headers, 0.0, {"input-tokens": 100.0})
    assert pacer.wait(0.0) == 0.0
    pacer.start(0.0)
    pacer.start(0.0)  # 100 left: two calls' worth needed
    assert pacer.wait(0.0) == pytest.approx(1.0)


def test_a_worker_paces_on_its_share_of_the_limit() -> None:
    pacer = Pacer(share=0.5, safety=1.0)
    pacer.observe(pacer.start(0.0), limit_headers(600, 9), 0.0)
    bucket = pacer.buckets["requests"]
    assert (bucket.per_second, bucket.capacity, bucket.left) == (5.0, 5.0, 4.5)


def test_a_bucket_smaller_than_two_calls_waits_until_full_not_forever() -> None:
    pacer = Pacer(share=0.125, safety=1.0)  # one of 8 workers, a burst of 10
    pacer.observe(pacer.start(0.0), limit_headers(600, 9), 0.0)
    assert pacer.buckets["requests"].capacity == 1.25
    pacer.start(0.0)
    assert 0 < pacer.wait(0.0) < float("inf")
    assert pacer.wait(1.0) == 0.0


def simulate(
    items: int, per_minute: int, burst: int, concurrency: int, latency: float
) -> tuple[float, int]:
    """A run's calls through the real gate against the server's limit, on a fake clock:
    (the time the last answer came back, requests refused)."""
    clock = Clock()
    clock.now = 0.0
    limit = RequestLimit(per_minute, burst, clock=clock)
    gate = RateGate(concurrency, clock=clock, share=1.0)
    answers: list[tuple[float, int, Ticket, bool, dict[str, str]]] = []
    waiting, refused, done, order = items, 0, 0, 0
    while done < items:
        got = gate.try_acquire() if waiting else None
        while isinstance(got, Ticket):
            allowed, headers = limit.take()
            order += 1
            heapq.heappush(answers, (clock.now + latency, order, got, allowed, headers))
            waiting -= 1
            got = gate.try_acquire() if waiting else None
        wake = clock.now + got if got else float("inf")
        clock.now = min(answers[0][0] if answers else wake, wake) + 1e-6
        while answers and answers[0][0] <= clock.now:
            _, _, ticket, allowed, headers = heapq.heappop(answers)
            if allowed:
                gate.succeeded(ticket, headers)
                done += 1
            else:
                gate.limited(ticket, headers)
                refused += 1
                waiting += 1  # retried
            gate.release(ticket)
    return clock.now, refused


def test_pacing_keeps_refusals_rare_and_the_run_near_the_limit() -> None:
    """300 calls, 32 at a time, 0.2 s each, against 600 requests/min in bursts of 10: the
    limit's minimum is (300 - 10) / 10 = 29 s."""
    took, refused = simulate(300, 600, 10, 32, 0.2)
    assert refused <= 15
    assert took <= 1.25 * 29


def test_without_limits_the_calls_in_flight_are_the_concurrency() -> None:
    took, refused = simulate(320, 10**9, 10**9, 32, 0.2)
    assert refused == 0 and took <= 0.2 + 10 * 0.2 + 0.01  # the probe, then 10 full rounds


def test_the_server_limit_refills_and_announces_itself() -> None:
    clock = Clock()
    limit = RequestLimit(60, 2, clock=clock)  # one a second, two at once
    assert limit.take()[0] and limit.take()[0]
    allowed, headers = limit.take()
    assert not allowed and headers["retry-after"] == "1"
    assert headers["anthropic-ratelimit-requests-limit"] == "60"
    assert headers["anthropic-ratelimit-requests-remaining"] == "0"
    clock.now += 1.5
    allowed, headers = limit.take()
    assert allowed and headers["anthropic-ratelimit-requests-remaining"] == "0"
    assert "retry-after" not in headers


def test_the_server_refuses_over_its_limit_with_the_apis_headers(
    anthropic_server: AnthropicServer,
) -> None:
    clock = Clock()
    anthropic_server.limit = RequestLimit(600, 2, clock=clock)
    client = anthropic.Anthropic(max_retries=0)
    ask = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}
    first = client.messages.with_raw_response.create(**ask)
    assert first.headers["anthropic-ratelimit-requests-remaining"] == "1"
    client.messages.create(**ask)
    with pytest.raises(anthropic.RateLimitError) as refused:
        client.messages.create(**ask)
    assert refused.value.response.headers["retry-after"] == "1"
    assert refused.value.response.headers["anthropic-ratelimit-requests-remaining"] == "0"
    assert anthropic_server.refused == 1
    clock.now += 0.1  # one more refilled
    client.messages.create(**ask)
    client.close()
