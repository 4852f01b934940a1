"""--prompteval-estimate against the loopback server: only token-counting calls, figures, budget."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_prompteval.report.gates import GATE_FAILED


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.mkdir("prompts").joinpath("v.yaml").write_text(
        "user_prompt: Explain.\nmodel_config: {model: claude-haiku-4-5, max_tokens: 200}\n"
    )
    cases = "".join(f"- id: c{i}\n  input: {{n: {i}}}\n" for i in range(1, 4))
    pytester.mkdir("prompt_cases").joinpath("c.yaml").write_text("cases:\n" + cases)
    return pytester


def paths(server: Any) -> list[str]:
    return [r.path.split("?")[0] for r in server.requests]


def test_estimate_counts_tokens_and_makes_no_generation_call(
    project: pytest.Pytester, anthropic_server: Any
) -> None:
    project.runpytest("--prompt=v", "-k", "c1").assert_outcomes(passed=1, deselected=2)
    anthropic_server.requests.clear()
    runs = sorted((project.path / "prompt_results").iterdir())

    result = project.runpytest("--prompt=v", "--prompteval-estimate")

    assert paths(anthropic_server) == ["/v1/messages/count_tokens"] * 2
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        [
            "*prompteval estimate*",
            "version * replayed * tokens * new * in tok * out tok * cost $",
            "v * 1 * 2 * 400 *",
            "total: 2 new calls, $0.00*; 2 token-counting calls made, no generation calls",
            "2 new calls priced at max_tokens output: an upper bound",
        ]
    )
    assert sorted((project.path / "prompt_results").iterdir()) == runs  # no run history

    anthropic_server.requests.clear()
    again = project.runpytest("--prompt=v", "--prompteval-estimate")
    assert paths(anthropic_server) == []  # the counts are kept like recordings
    again.stdout.fnmatch_lines(["total: 2 new calls, *; 0 token-counting calls made, *"])


def test_estimate_over_the_budget_refuses_to_start(
    project: pytest.Pytester, anthropic_server: Any
) -> None:
    result = project.runpytest(
        "--prompt=v", "--prompteval-estimate", "--prompteval-max-cost=0.000001"
    )
    assert result.ret == GATE_FAILED
    result.stdout.fnmatch_lines(
        ["*prompteval estimate $0.00* exceeds --prompteval-max-cost 1e-06: the run would not *"]
    )
    assert set(paths(anthropic_server)) == {"/v1/messages/count_tokens"}


def test_estimate_with_xdist_is_a_usage_error(project: pytest.Pytester) -> None:
    result = project.runpytest("--prompt=v", "--prompteval-estimate", "-n", "2")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --prompteval-estimate runs no items: use it without -n*"])


def test_a_model_no_table_knows_is_estimated_at_the_highest_known_price(
    project: pytest.Pytester, anthropic_server: Any
) -> None:
    # a branch naming a model no table prices cannot slip under --prompteval-max-cost
    project.path.joinpath("prompts", "v.yaml").write_text(
        "user_prompt: Explain.\nmodel_config: {model: claude-unknown-9, max_tokens: 200}\n"
    )
    result = project.runpytest("--prompt=v", "--prompteval-estimate", "--prompteval-max-cost=0.001")
    assert result.ret == GATE_FAILED
    result.stdout.fnmatch_lines(
        [
            "3 new calls to models missing from the price table: priced at the highest known "
            "prices",
            "*prompteval estimate $0.0* exceeds --prompteval-max-cost 0.001: the run would not *",
        ]
    )
