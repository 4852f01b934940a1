"""Claude through the real SDK against the loopback server: record, replay, retries, faults."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest

from pytest_prompteval import Case, PromptVersion, Request
from pytest_prompteval.core.errors import ApiError
from pytest_prompteval.core.request import Message
from pytest_prompteval.providers.anthropic import AnthropicProvider, backoff, should_retry
from pytest_prompteval.providers.base import CallContext
from pytest_prompteval.providers.ratelimit import RateGate
from pytest_prompteval.testing import AnthropicServer, Fault

from .conftest import item_results

PROMPT = (
    "system_prompt: 'You explain {arch} assembly.'\n"
    "user_prompt: 'Explain the {arch} assembly output.'\n"
    "assistant_prefill: 'My analysis:'\n"
    "model_config: {model: claude-haiku-4-5, max_tokens: 300, temperature: 0.0}\n"
)
CASES = (
    "cases:\n"
    "- id: loop_001\n  category: loop_optimization\n  difficulty: beginner\n"
    "  expected_topics: [loop_optimization, early_termination]\n"
    "  input: {language: C, instructionSet: x86_64, code: 'int f(int n);'}\n"
    "- id: inline_001\n  category: function_inlining\n  difficulty: beginner\n"
    "  expected_topics: [function_inlining]\n"
    "  input: {language: C, instructionSet: x86_64, code: 'int g(int x);'}\n"
)
ANSWERS = {
    "loop_001": " The loop optimization unrolls the body, and an early exit skips it for n = 0.",
    "inline_001": " The helper was inlined, so no call instruction remains in the caller.",
}


def answer(request: dict[str, Any]) -> str:
    payload = json.loads(request["messages"][0]["content"][1]["text"])
    return ANSWERS["loop_001" if "f(int n)" in payload["code"] else "inline_001"]


@pytest.fixture
def project(pytester: pytest.Pytester, anthropic_server: AnthropicServer) -> pytest.Pytester:
    anthropic_server.responder = answer
    pytester.mkdir("prompts").joinpath("current.yaml").write_text(PROMPT)
    pytester.mkdir("prompt_cases").joinpath("cases.yaml").write_text(CASES)
    return pytester


def results(reprec: pytest.HookRecorder) -> dict[str, dict[str, Any]]:
    return {r["case_id"]: r for r in item_results(reprec)}


def test_record_then_replay_offline_gives_identical_scores(
    project: pytest.Pytester,
    anthropic_server: AnthropicServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    recorded = results(project.inline_run("--prompt=current"))
    assert len(anthropic_server.requests) == 2
    sent = anthropic_server.requests[0]
    credentials = sent.headers.get("x-api-key") or sent.headers["authorization"]
    assert credentials.endswith("test-key-not-secret")
    assert sent.body["system"] == "You explain x86_64 assembly."
    assert sent.body["messages"][-1] == {
        "role": "assistant",
        "content": [{"type": "text", "text": "My analysis:"}],
    }
    loop = recorded["loop_001"]
    assert loop["passed"] and loop["replayed"] is False
    assert loop["input_tokens"] > 0 and loop["output_tokens"] > 0
    assert loop["request_id"].startswith("req_") and loop["cost_usd"] > 0

    anthropic_server.stop()
    monkeypatch.delenv("ANTHROPIC_API_KEY")

    def no_network(*args: object) -> None:
        raise AssertionError(f"a replay run opened a connection to {args}")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    replayed = results(project.inline_run("--prompt=current"))
    assert len(anthropic_server.requests) == 2
    for case_id, first in recorded.items():
        again = replayed[case_id]
        assert again["replayed"] is True
        for field in ("score", "dimensions", "passed", "response", "input_tokens", "cost_usd"):
            assert again[field] == first[field], field

    recordings = list(project.path.joinpath("prompt_recordings").glob("*.json"))
    assert len(recordings) == 2
    for path in recordings:
        text = path.read_text()
        assert "test-key-not-secret" not in text
        assert "x-api-key" not in text.lower() and "authorization" not in text.lower()
        assert json.loads(text)["origin"] == "anthropic"


def test_overload_and_reset_are_retried(
    project: pytest.Pytester, anthropic_server: AnthropicServer
) -> None:
    anthropic_server.inject(Fault.overloaded(), Fault(kind="reset"))
    reprec = project.inline_run("--prompt=current", "-k", "loop_001")
    reprec.assertoutcome(passed=1)
    assert len(anthropic_server.requests) == 3


def test_persistent_server_error_is_an_error_with_status_and_request_id(
    project: pytest.Pytester, anthropic_server: AnthropicServer
) -> None:
    anthropic_server.inject(*[Fault(status=500, message="boom")] * 3)
    result = project.runpytest("--prompt=current", "-k", "loop_001")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "InternalServerError: status 500, request_id req_fault_000003: boom (3 attempts)",
            "*api_error 1*",
        ]
    )
    assert len(anthropic_server.requests) == 3  # the first try and two retries
    assert not project.path.joinpath("prompt_recordings").exists()


def test_spend_limit_is_not_retried_and_stops_the_run(
    project: pytest.Pytester, anthropic_server: AnthropicServer
) -> None:
    anthropic_server.inject(Fault.spend_limit())
    result = project.runpytest("--prompt=current", "--prompteval-concurrency=1")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "RateLimitError: status 429, *monthly spend limit* no later call can succeed, "
            "stopping the run",
            "*Interrupted: RateLimitError*",
        ]
    )
    assert len(anthropic_server.requests) == 1


def test_ordinary_rate_limit_is_retried_after_retry_after(
    project: pytest.Pytester, anthropic_server: AnthropicServer
) -> None:
    anthropic_server.inject(Fault.rate_limited(retry_after=0.05))
    project.inline_run("--prompt=current", "-k", "loop_001").assertoutcome(passed=1)
    assert len(anthropic_server.requests) == 2


def test_a_malformed_body_is_retried_and_a_persistent_one_fails_clearly(
    project: pytest.Pytester, anthropic_server: AnthropicServer
) -> None:
    anthropic_server.inject(Fault(kind="malformed"))
    project.inline_run("--prompt=current", "-k", "loop_001").assertoutcome(passed=1)
    assert len(anthropic_server.requests) == 2

    anthropic_server.inject(*[Fault(kind="malformed")] * 3)
    result = project.runpytest("--prompt=current", "-k", "inline_001")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "MalformedResponseError: status 200, request_id req_fault_000004: malformed "
            "response body: *(3 attempts)"
        ]
    )
    assert "Traceback" not in result.stdout.str()


def test_model_override_and_record_all(
    project: pytest.Pytester, anthropic_server: AnthropicServer
) -> None:
    project.inline_run("--prompt=current", "-k", "loop_001")
    reprec = project.inline_run(
        "--prompt=current",
        "-k",
        "loop_001",
        "--prompteval-model=claude-sonnet-4-6",
        "--prompteval-record=all",
    )
    assert results(reprec)["loop_001"]["model"] == "claude-sonnet-4-6"
    assert [r.body["model"] for r in anthropic_server.requests] == [
        "claude-haiku-4-5",
        "claude-sonnet-4-6",
    ]
    project.inline_run("--prompt=current", "-k", "loop_001", "--prompteval-record=all")
    assert len(anthropic_server.requests) == 3  # "all" records again even when a file exists


def test_live_run_freezes_gc_only_at_its_end(project: pytest.Pytester) -> None:
    """In its own process (the freeze is once per process): while the items run only what
    collection made is frozen; once the run closes its client, what is alive is spared the
    exit's collection."""
    project.makeconftest(
        "import gc, pytest\n"
        "def pytest_sessionfinish(session):\n"
        "    print('\\nduring the run:', gc.get_freeze_count())\n"
        "@pytest.hookimpl(trylast=True)\n"
        "def pytest_unconfigure(config):\n"
        "    print('at the end:', gc.get_freeze_count())\n"
    )
    result = project.runpytest_subprocess("--prompt=current", "-s")
    result.assert_outcomes(passed=2)
    counts = {
        line.split(":")[0]: int(line.split(":")[1])
        for line in result.outlines
        if line.startswith(("during the run:", "at the end:"))
    }
    assert 0 < counts["during the run"] < counts["at the end"]
    assert counts["at the end"] > 100_000


REQUEST = Request.create("claude-haiku-4-5", [Message("user", ("hi",))], None, max_tokens=10)
CONTEXT = CallContext(
    Case(id="c", input={}, path=Path("c.yaml"), line=1), PromptVersion("v", Path("v.yaml")), 0
)


def provider_with_gate(waits: list[float]) -> AnthropicProvider:
    provider = AnthropicProvider(sleep=waits.append)
    provider.gate = RateGate(8)
    return provider


def test_server_errors_resets_and_malformed_bodies_are_retried_without_slowing_the_run(
    anthropic_server: AnthropicServer,
) -> None:
    waits: list[float] = []
    provider = provider_with_gate(waits)
    anthropic_server.inject(Fault(status=500, retry_after=None), Fault(kind="reset"))
    assert provider.complete(REQUEST, CONTEXT).text.startswith("Scripted answer")
    anthropic_server.inject(Fault(kind="malformed"), Fault(status=503, retry_after=0.25))
    assert provider.complete(REQUEST, CONTEXT).request_id == "req_000002"
    assert provider.gate is not None and provider.gate.limit == 8  # calls in flight unchanged
    assert len(waits) == 4
    assert 0.15 <= waits[0] <= 0.2 and 0.3 <= waits[1] <= 0.4  # backoff: 0.2 s, then 0.4 s
    assert waits[3] == 0.25  # the retry-after the server sent
    provider.close()


def test_rate_limited_and_overloaded_answers_shrink_the_calls_in_flight(
    anthropic_server: AnthropicServer,
) -> None:
    waits: list[float] = []
    provider = provider_with_gate(waits)
    anthropic_server.inject(Fault.rate_limited(retry_after=0.001), Fault.overloaded())
    provider.complete(REQUEST, CONTEXT)
    assert provider.gate is not None and provider.gate.limit == 3  # 8 halved twice, 1 regained
    assert waits == []  # the gate's pause, not a sleep holding the call
    provider.close()


def test_a_call_failing_after_retries_raises_api_error_with_class_status_and_request_id(
    anthropic_server: AnthropicServer,
) -> None:
    provider = provider_with_gate([])
    anthropic_server.inject(*[Fault.overloaded()] * 3)
    with pytest.raises(ApiError) as failed:
        provider.complete(REQUEST, CONTEXT)
    error = failed.value
    assert (error.error_class, error.status, error.request_id) == (
        "OverloadedError",
        529,
        "req_fault_000003",
    )
    anthropic_server.inject(*[Fault(kind="reset")] * 3)
    with pytest.raises(ApiError, match=r"APIConnectionError: .*\(3 attempts\)") as failed:
        provider.complete(REQUEST, CONTEXT)
    assert failed.value.status is None and failed.value.request_id is None
    provider.close()


def test_the_api_can_say_not_to_retry(anthropic_server: AnthropicServer) -> None:
    provider = provider_with_gate([])
    anthropic_server.inject(Fault(status=500, headers={"x-should-retry": "false"}))
    with pytest.raises(ApiError, match=r"status 500.*\(1 attempt\)"):
        provider.complete(REQUEST, CONTEXT)
    assert len(anthropic_server.requests) == 1
    provider.close()


def test_retry_policy() -> None:
    assert [should_retry(s, {}) for s in (400, 404, 408, 409, 429, 500, 529)] == [
        False,
        False,
        True,
        True,
        True,
        True,
        True,
    ]
    assert should_retry(400, {"x-should-retry": "true"})
    assert backoff(3, {}, 0.0) == pytest.approx(0.8) and backoff(9, {}, 0.0) == 8.0
    assert backoff(1, {}, 0.999) > 0.15
    assert backoff(1, {"retry-after": "3"}, 0.5) == 3.0
    assert backoff(1, {"retry-after": "9000"}, 0.5) == 60.0
