"""Providers used directly, as a project's own tests would, against the loopback server."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_prompteval import Case, PromptVersion, Request
from pytest_prompteval.core.errors import ApiError, PromptevalError, StopRun
from pytest_prompteval.core.request import Message
from pytest_prompteval.providers.anthropic import AnthropicProvider
from pytest_prompteval.providers.base import CallContext
from pytest_prompteval.providers.python_callable import CallableProvider
from pytest_prompteval.testing import AnthropicServer, Fault

REQUEST = Request.create("claude-haiku-4-5", [Message("user", ("hi",))], None, max_tokens=10)
CONTEXT = CallContext(
    Case(id="c", input={}, path=Path("c.yaml"), line=1), PromptVersion("v", Path("v.yaml")), 0
)


def test_after_a_spend_limit_no_further_request_is_sent(
    anthropic_server: AnthropicServer,
) -> None:
    provider = AnthropicProvider()
    anthropic_server.inject(Fault.spend_limit())
    with pytest.raises(StopRun, match="monthly spend limit"):
        provider.complete(REQUEST, CONTEXT)
    with pytest.raises(StopRun, match="not sent, an earlier call failed"):
        provider.complete(REQUEST, CONTEXT)
    assert len(anthropic_server.requests) == 1
    provider.close()


def test_bad_key_stops_and_other_client_errors_fail_the_item(
    anthropic_server: AnthropicServer,
) -> None:
    anthropic_server.inject(
        Fault(status=400, error_type="invalid_request_error", message="max_tokens too big"),
        Fault(status=401, error_type="authentication_error", message="invalid x-api-key"),
    )
    provider = AnthropicProvider()
    with pytest.raises(ApiError, match=r"BadRequestError: status 400.*max_tokens too big") as e:
        provider.complete(REQUEST, CONTEXT)
    assert not isinstance(e.value, StopRun)
    with pytest.raises(StopRun, match="AuthenticationError: status 401"):
        provider.complete(REQUEST, CONTEXT)
    assert len(anthropic_server.requests) == 2
    provider.close()


def test_unreachable_server_is_an_api_error(monkeypatch: pytest.MonkeyPatch) -> None:
    with AnthropicServer() as server:
        url = server.url
    monkeypatch.setenv("ANTHROPIC_BASE_URL", url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    provider = AnthropicProvider(max_retries=0)
    with pytest.raises(ApiError, match="APIConnectionError"):
        provider.complete(REQUEST, CONTEXT)
    provider.close()


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("python:nomodule_xyz:fn", "cannot import nomodule_xyz"),
        ("python:json:nothing", "json has no callable 'nothing'"),
        ("python:json", "expected python:package.module:function"),
    ],
)
def test_callable_provider_spec_errors(spec: str, message: str) -> None:
    with pytest.raises(PromptevalError, match=message):
        CallableProvider(spec)


def test_bad_provider_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.mkdir("prompts").joinpath("v.yaml").write_text("user_prompt: x\n")
    result = pytester.runpytest("--prompt=v", "--prompteval-provider=python:nomodule_xyz:fn")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: provider 'python:nomodule_xyz:fn': cannot import*"])


def test_a_provider_module_that_does_not_load_is_a_usage_error(
    pytester: pytest.Pytester,
) -> None:
    pytester.mkdir("prompts").joinpath("v.yaml").write_text("user_prompt: x\n")
    pytester.makepyfile(answers="def answer(request):\n    return 'unterminated\n")
    pytester.makeini("[pytest]\npythonpath = .\n")
    result = pytester.runpytest("--prompt=v", "--prompteval-provider=python:answers:answer")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: provider 'python:answers:answer': importing answers raised SyntaxError: "
            "unterminated string literal (detected at line 2) (answers.py, line 2)*"
        ]
    )
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()


def test_latency_and_usage_are_measured(anthropic_server: AnthropicServer) -> None:
    anthropic_server.latency = 0.2
    anthropic_server.responder = lambda request: "four words of text"
    provider = AnthropicProvider()
    response = provider.complete(REQUEST, CONTEXT)
    provider.close()
    assert response.text == "four words of text"
    assert response.latency_ms >= 200
    assert response.input_tokens > 0 and response.output_tokens == len("four words of text") // 4
    assert response.request_id == "req_000001" and response.message_id == "msg_test_000001"


def test_recording_without_a_key_stops_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    with pytest.raises(StopRun, match="ANTHROPIC_API_KEY is not set"):
        AnthropicProvider().complete(REQUEST, CONTEXT)
