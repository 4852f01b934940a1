"""Claude through the real SDK against the loopback server: record, replay, retries, faults."""

from __future__ import annotations

import json
import socket
from typing import Any

import pytest

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


def test_overload_and_reset_are_retried_by_the_sdk(
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
        ["InternalServerError: status 500, request_id req_fault: boom", "*api_error 1*"]
    )
    assert len(anthropic_server.requests) == 3  # the first try and the SDK's two retries
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


def test_malformed_body_fails_the_item_clearly(
    project: pytest.Pytester, anthropic_server: AnthropicServer
) -> None:
    anthropic_server.inject(Fault(kind="malformed"))
    result = project.runpytest("--prompt=current", "-k", "loop_001")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*malformed response body*"])
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


def test_live_client_freezes_long_lived_objects_out_of_gc(project: pytest.Pytester) -> None:
    """In its own process (the freeze is once per process): after the first call the SDK's
    objects are frozen, so full collections no longer rescan them."""
    project.makeconftest(
        "import gc\n"
        "def pytest_sessionfinish(session):\n"
        "    print('\\nfrozen objects:', gc.get_freeze_count())\n"
    )
    result = project.runpytest_subprocess("--prompt=current", "-s")
    result.assert_outcomes(passed=2)
    frozen = next(line for line in result.outlines if line.startswith("frozen objects:"))
    assert int(frozen.split(":")[1]) > 100_000
