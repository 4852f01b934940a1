"""The project's own example suite: offline from committed recordings, identical under xdist."""

from __future__ import annotations

import json
import shutil
import socket

import pytest

from .conftest import ROOT, copy_example_suite


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


STRUCTURED = ROOT / "examples" / "structured"


def test_structured_output_example_replays_offline(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, xdist_args: list[str]
) -> None:
    """examples/structured (docs/guides/structured.md): a triage prompt answering JSON,
    checked by json_field and json_schema alone, compared offline from its recordings."""
    shutil.copytree(STRUCTURED, pytester.path, dirs_exist_ok=True)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)

    def no_network(*args: object) -> None:
        raise AssertionError(f"replay opened a connection to {args}")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    result = pytester.runpytest(
        "--prompt=v2", "--compare", "v1", "--prompteval-markdown=summary.md", *xdist_args
    )
    result.assert_outcomes(passed=22, failed=6)
    result.stdout.fnmatch_lines(
        [
            "v2 * 14 * 13 * 1 * 0 * 0 * 92.9% * 0.982 *",
            "v1 * 14 * 9 * 5 * 0 * 0 * 64.3% * 0.839 *",
            "*accuracy by field*",
            "field * v2 * v1",
            "priority * 12/13 92.3% * 10/13 76.9%",
            "needs_human * 5/5 100.0% * 3/5 60.0%",
            "category * 9/9 100.0% * 8/9 88.9%",
            "summary * 2/2 100.0% * 2/2 100.0%",
            "sentiment * 4/4 100.0% * 4/4 100.0%",
            "confidence * 1/1 100.0% * 1/1 100.0%",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "v2: cost: $0.0000 spent: all 14 calls replayed from recordings*",
            "v1: failed assertions: json_field 6, json_schema 1",
            "v1: cost: $0.0000 spent: all 14 calls replayed from recordings*",
        ]
    )
    # JSON answers: no item is scored by the seed's explain dimensions
    assert "scores by dimension" not in result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            'dark_mode [[]v2[]]: failed assert json_field: priority: expected "low", got "normal"',
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "checkout_broken [[]v1[]]: failed assert json_schema: schema: priority: expected enum "
            '[[]"urgent", "high", "normal", "low"[]], got "Urgent"',
        ]
    )
    markdown = pytester.path.joinpath("summary.md").read_text()
    assert "| `needs_human` | 5/5 100.0% | 3/5 60.0% |" in markdown


AGENT = ROOT / "examples" / "agent"


def test_agent_example_replays_offline_without_running_its_tools(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, xdist_args: list[str]
) -> None:
    """examples/agent (docs/guides/agents.md): tools, scripted results, a turn, a Python
    tool, trajectory assertions; replayed from its recordings with no network and without
    running the project's tool."""
    shutil.copytree(AGENT, pytester.path, dirs_exist_ok=True)
    conftest = pytester.path / "conftest.py"
    conftest.write_text(conftest.read_text().replace("return {", "raise AssertionError  # {"))
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)

    def no_network(*args: object) -> None:
        raise AssertionError(f"replay opened a connection to {args}")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    result = pytester.runpytest("--prompt=support", *xdist_args)
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(
        [
            "support: agent: 3 conversations; per conversation 2.7 steps, 1.3 tool calls, 0.3 "
            "tool errors; 0 hit max_steps; pass@1 100.0%, pass^1 100.0%",
            "support: cost: $0.0000 spent: all 8 calls replayed from recordings*",
        ]
    )
