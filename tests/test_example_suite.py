"""The project's own example suite: offline from committed recordings, identical under xdist."""

from __future__ import annotations

import json
import socket

import pytest

from .conftest import copy_example_suite


def test_example_suite_replays_offline_without_a_key(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy_example_suite(pytester)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)

    def no_network(*args: object) -> None:
        raise AssertionError(f"replay opened a connection to {args}")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    result = pytester.runpytest("--prompt=current", "--compare", "v1_baseline")
    result.assert_outcomes(passed=10)
    result.stdout.fnmatch_lines(
        [
            "*prompteval summary*",
            "version * items * passed * pass rate * score * pass@1 * in tok * out tok * cost $*",
            "current * 5 * 5 * 100.0% *",
            "v1_baseline * 5 * 5 * 100.0% *",
            "current: cost: $0.0000 spent: all 5 calls replayed from recordings, which cost "
            "$0.0036 to record",
        ]
    )


@pytest.mark.parametrize("plugin", ["xdist", "pytest_jsonreport"])
def test_example_suite_runs_without_the_optional_plugins(
    pytester: pytest.Pytester, plugin: str
) -> None:
    """The README's first command installs neither pytest-xdist nor pytest-json-report."""
    copy_example_suite(pytester)
    result = pytester.runpytest(
        "--prompt=current", "--compare", "v1_baseline", "-p", f"no:{plugin}"
    )
    result.assert_outcomes(passed=10)


def test_json_report_and_summary_are_the_same_under_xdist(
    pytester: pytest.Pytester, xdist_args: list[str]
) -> None:
    copy_example_suite(pytester)
    result = pytester.runpytest(
        "--prompt=current",
        "--compare=v1_baseline",
        "--json-report",
        "--json-report-file=report.json",
        *xdist_args,
    )
    result.assert_outcomes(passed=10)
    summary = [line for line in result.outlines if line.startswith(("current", "v1_baseline"))]
    report = json.loads(pytester.path.joinpath("report.json").read_text())
    tests = {t["nodeid"]: t["metadata"]["prompteval"] for t in report["tests"]}
    assert len(tests) == 10
    first = tests["prompt_cases/basic_optimizations.yaml::sum_loop_001[current]"]
    for field in (
        "case_id",
        "prompt",
        "sample",
        "model",
        "passed",
        "score",
        "dimensions",
        "missing_topics",
        "incorrect_claims",
        "input_tokens",
        "output_tokens",
        "cost_usd",
        "latency_ms",
        "scorer",
        "response",
    ):
        assert field in first, field
    assert (first["case_id"], first["prompt"], first["model"]) == (
        "sum_loop_001",
        "current",
        "claude-haiku-4-5",
    )
    # Same figures with and without workers: compare against the in-process run.
    if xdist_args:
        plain = pytester.runpytest("--prompt=current", "--compare=v1_baseline")
        assert summary == [
            line for line in plain.outlines if line.startswith(("current", "v1_baseline"))
        ]
    assert len(summary) == 4
