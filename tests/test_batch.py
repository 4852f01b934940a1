"""The Message Batches API against the loopback server: one batch, results as recordings,
only failed results fail their items, Ctrl-C cancels."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_prompteval.core.cases import Case
from pytest_prompteval.core.prompts import PromptVersion
from pytest_prompteval.core.request import Message, Request
from pytest_prompteval.providers.anthropic import AnthropicProvider
from pytest_prompteval.providers.base import CallContext
from pytest_prompteval.providers.batches import run_batch
from pytest_prompteval.providers.store import Store
from pytest_prompteval.testing import AnthropicServer

from .conftest import generated_project, item_results

GOOD = " The loop optimization unrolls the loop; an early exit skips it when n is zero."


@pytest.fixture
def project(pytester: pytest.Pytester, anthropic_server: AnthropicServer) -> pytest.Pytester:
    anthropic_server.responder = lambda request: GOOD
    generated_project(
        pytester, 5, prompt="user_prompt: Explain.\nmodel_config: {model: claude-haiku-4-5}\n"
    )
    return pytester


def paths(server: AnthropicServer) -> list[str]:
    return [r.path.split("?")[0] for r in server.requests]


def test_one_batch_answers_the_run_at_half_price(
    project: pytest.Pytester, anthropic_server: AnthropicServer
) -> None:
    reprec = project.inline_run("--prompt=v", "--prompteval-batch", "--prompteval-batch-poll=0.01")
    reprec.assertoutcome(passed=5)
    calls = paths(anthropic_server)
    assert "/v1/messages" not in calls  # no single calls: everything went in the batch
    assert calls.count("/v1/messages/batches") == 1
    (batch,) = anthropic_server.batches.values()
    assert len(batch["requests"]) == 5
    results = item_results(reprec)
    assert all(r["replayed"] is False for r in results)
    recordings = [
        json.loads(p.read_text()) for p in project.path.joinpath("prompt_recordings").glob("*.json")
    ]
    assert len(recordings) == 5 and all(r["response"]["batch"] for r in recordings)
    # Half price: the same tokens through single calls cost twice as much.
    single = project.inline_run("--prompt=v", "--prompteval-record=all")
    batch_cost = sum(r["cost_usd"] for r in results)
    assert sum(r["cost_usd"] for r in item_results(single)) == pytest.approx(2 * batch_cost)


def test_only_failed_results_fail_their_items(
    project: pytest.Pytester, anthropic_server: AnthropicServer
) -> None:
    from pytest_prompteval.core.cases import load_case_file
    from pytest_prompteval.core.prompts import build_request, load_prompt, template_variables

    prompt = load_prompt(project.path / "prompts" / "v.yaml")
    cases = load_case_file(project.path / "prompt_cases" / "c.yaml").cases
    keys = [build_request(c, prompt, template_variables(c), "m").key(0) for c in cases]
    anthropic_server.batch_errored = {keys[1]}
    anthropic_server.batch_expired = {keys[3]}
    anthropic_server.batch_polls_to_end = 2
    result = project.runpytest("--prompt=v", "--prompteval-batch", "--prompteval-batch-poll=0.01")
    result.assert_outcomes(passed=3, errors=2)
    result.stdout.fnmatch_lines_random(
        [
            "prompteval: message batch msgbatch_test_0001: 5 requests sent",
            "prompteval: batch msgbatch_test_0001 ended: 3 succeeded, 1 errored, 0 processing",
            "batch request errored: invalid_request_error: injected batch error",
            "batch request expired (the batch did not answer it)",
        ]
    )
    assert "/v1/messages" not in paths(anthropic_server)


def test_ctrl_c_cancels_the_batch(
    anthropic_server: AnthropicServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    anthropic_server.batch_polls_to_end = 1000
    provider = AnthropicProvider()
    store = Store(tmp_path, "new", provider)
    request = Request.create("claude-haiku-4-5", [Message("user", ("hi",))], None, max_tokens=10)
    polls: list[Any] = []

    def interrupted_sleep(seconds: float) -> None:
        polls.append(seconds)
        if len(polls) == 2:
            raise KeyboardInterrupt

    monkeypatch.setattr("pytest_prompteval.providers.batches.time.sleep", interrupted_sleep)
    lines: list[str] = []
    with pytest.raises(KeyboardInterrupt):
        case = Case(id="c", input={}, path=tmp_path / "c.yaml", line=1)
        context = CallContext(case, PromptVersion("v", tmp_path / "v.yaml"), 0)
        run_batch(store, provider, [(request, context)], lines.append, poll=0.01)
    provider.close()
    assert any(p.endswith("/cancel") for p in paths(anthropic_server))
    assert lines[-1].endswith("cancelled")
    assert polls == [0.01, 0.02]  # the wait doubles between checks


def test_batch_with_xdist_is_a_usage_error(project: pytest.Pytester) -> None:
    result = project.runpytest("--prompt=v", "--prompteval-batch", "-n", "2")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--prompteval-batch sends one batch per run*"])


CODE_CASE = """
cases:
- id: clamp_001
  entry_point: clamp
  input: {task: "Write clamp(x, low, high)."}
  tests:
  - {args: [5, 0, 10], expected: 5}
  - {args: [-3, 0, 10], expected: 0}
"""
WRONG = "```python\ndef clamp(x, low, high):\n    return x\n```"
RIGHT = "```python\ndef clamp(x, low, high):\n    return max(low, min(x, high))\n```"


def fixed_when_told(request: dict[str, Any]) -> str:
    return RIGHT if "failed" in json.dumps(request["messages"]).lower() else WRONG


def test_strategies_extra_calls_go_into_batches_in_rounds(
    pytester: pytest.Pytester, anthropic_server: AnthropicServer
) -> None:
    anthropic_server.responder = fixed_when_told
    prompts = pytester.mkdir("prompts")
    for name, strategy in (
        ("refine", "{name: refine, attempts: 2}"),
        ("verify", "{name: self_verify, attempts: 3}"),
        ("best_of_3", "{name: best_of_n, n: 3}"),
    ):
        prompts.joinpath(f"{name}.yaml").write_text(
            f"system_prompt: Strategy {name}.\nuser_prompt: '{{task}}'\n"
            f"model_config: {{model: claude-haiku-4-5}}\nstrategy: {strategy}\n"
        )
    pytester.mkdir("prompt_cases").joinpath("code.yaml").write_text(CODE_CASE)
    args = ["--prompt=refine", "--compare=verify", "--compare=best_of_3"]
    result = pytester.runpytest(*args, "--prompteval-batch", "--prompteval-batch-poll=0.01")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "prompteval: message batch msgbatch_test_0001: 5 requests sent",
            "prompteval: batch round 2: strategies' and agents' next calls",
            "prompteval: message batch msgbatch_test_0002: 2 requests sent",
        ]
    )
    assert "/v1/messages" not in paths(anthropic_server)  # every call went in a batch
    first, second = anthropic_server.batches.values()
    assert len(first["requests"]) == 5  # refine's and verify's first, best_of_3's three
    assert all("failed" in json.dumps(r["params"]).lower() for r in second["requests"])
    replay = pytester.inline_run(*args, "--prompteval-record=none")
    attempts = {r["prompt"]: (r["answer_calls"], r["passed"]) for r in item_results(replay)}
    assert attempts == {"refine": (2, True), "verify": (2, True), "best_of_3": (3, False)}
