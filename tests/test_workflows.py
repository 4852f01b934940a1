"""Companion workflows: analyze stored runs (a partial one too) and human review by stdin."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_prompteval.core.result import ItemResult
from pytest_prompteval.testing import tool_use
from pytest_prompteval.workflows.analyze import analyze, render_text, trend_word

from .conftest import copy_example_suite, prompteval
from .verdict_data import item


@pytest.fixture
def history(pytester: pytest.Pytester) -> Path:
    """Two runs of each example version, and the journal of an interrupted third one."""
    copy_example_suite(pytester)
    for _ in range(2):
        pytester.runpytest("--prompt=current", "--compare=v1_baseline").assert_outcomes(passed=10)
    results = pytester.path / "prompt_results"
    (first,) = sorted(results.glob("*_current.json"))[:1]
    lines = json.loads(first.read_text())
    journal = results / "29991231_235959_current.jsonl"
    header = {**lines["meta"], "started_at": "2999-12-31T23:59:59"}
    journal.write_text(
        json.dumps({"header": header, "partial": True})
        + "\n"
        + "".join(json.dumps(r) + "\n" for r in lines["results"][:2])
        + '{"cut short'
    )
    return results


def test_analyze_reports_trends_best_version_and_partial_runs(
    pytester: pytest.Pytester, history: Path
) -> None:
    done = prompteval(pytester.path, "analyze", "--html", "trend.html")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == [
        "version",
        "runs",
        "latest",
        "score",
        "latest",
        "pass",
        "pass",
        "(last",
        "5)",
        "trend",
    ]
    current = next(line.split() for line in lines if line.startswith("current"))
    assert current[:2] == ["current", "3"]
    best = lines.index(next(x for x in lines if x.startswith("best version")))
    assert lines[best].startswith("best version (latest run's mean score): current 0.908 95% [0.")
    # "best" beside the runner-up: five cases cannot tell them apart.
    assert lines[best + 1].startswith("  no verdict possible, current vs v1_baseline: 5 paired")
    assert any("29991231_235959_current.jsonl is partial" in line for line in lines)
    page = pytester.path.joinpath("trend.html").read_text()
    assert "<svg" in page and "<script" not in page and page.count("<polyline") == 2
    data = json.loads(prompteval(pytester.path, "analyze", "--json").stdout)
    # Two complete runs with the same results: a test, not a slope, and nothing to see.
    assert data["versions"]["v1_baseline"]["trend"] == {
        "runs": 2,
        "cases": 5,
        "slope_per_run": None,
        "p_value": None,
    }
    assert len(data["versions"]["current"]["runs"]) == 3


def test_review_by_scripted_input_resumes_and_feeds_analyze(
    pytester: pytest.Pytester, history: Path
) -> None:
    results = sorted(history.glob("*_v1_baseline.json"))[-1]
    # Rate the first result fully, skip the second, then quit.
    first = prompteval(
        pytester.path,
        "review",
        str(results),
        "--reviewer",
        "ana",
        stdin="4\n5\n3\n2\nclear enough\ns\nq\n",
    )
    assert first.returncode == 0, first.stderr
    assert "5 of 5 results to review (0 reviewed before)" in first.stdout
    assert "--- answer ---" in first.stdout and "stopped; 1 reviewed now, saved." in first.stdout
    saved = json.loads(results.with_name(results.name + ".review.json").read_text())
    rated, skipped = saved["reviews"][0], saved["reviews"][1]
    assert rated["ratings"] == {
        "correctness": 4,
        "completeness": 5,
        "edge_case_handling": 3,
        "code_quality": 2,
    }
    assert rated["human_score"] == pytest.approx((4 * 0.4 + 5 * 0.3 + 3 * 0.3) / 5)
    assert rated["comment"] == "clear enough" and rated["reviewer"] == "ana"
    assert skipped["skipped"] is True
    # Resuming asks only for what is left; a bad rating is asked again.
    again = prompteval(
        pytester.path,
        "review",
        str(results),
        stdin="9\n2\n2\n2\n2\n\n1\n1\n1\n1\n\n5\n5\n5\n5\nfine\n",
    )
    assert "3 of 5 results to review (2 reviewed before)" in again.stdout
    assert "a whole number from 1 to 5" in again.stdout
    assert "all reviewed; 3 in this session." in again.stdout
    analysis = prompteval(pytester.path, "analyze").stdout
    assert "v1_baseline: 4 human reviews; human vs automatic Spearman" in analysis


def test_analyze_without_runs(tmp_path: Path) -> None:
    done = prompteval(tmp_path, "analyze")
    assert done.returncode == 1 and "no stored runs in prompt_results" in done.stdout


def test_improve_against_the_loopback_server(
    pytester: pytest.Pytester, history: Path, anthropic_server: Any
) -> None:
    answer = {
        "suggestions": [
            {
                "issue": "misses early exits",
                "current_text": "Explain the assembly",
                "suggested_text": "Name every early exit",
                "rationale": "missing topic",
                "priority": "medium",
            },
            {
                "issue": "overconfident claims",
                "current_text": "You are an expert",
                "suggested_text": "Use qualified language",
                "rationale": "incorrect claims",
                "priority": "high",
            },
        ],
        "expected_impact": "0.81 -> 0.88",
        "improved_system_prompt": "You are an expert in {arch}. Use qualified language.",
        "improved_user_prompt": "Explain the {arch} assembly output.",
    }
    anthropic_server.responder = lambda request: tool_use(request, answer)
    done = prompteval(
        pytester.path, "improve", "--prompt", "v1_baseline", "--create-improved", "--output", "v2"
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.index("[high] overconfident claims") < out.index("[medium] misses early exits")
    assert "Expected impact: 0.81 -> 0.88" in out
    (request,) = [r.body for r in anthropic_server.requests]
    assert request["tool_choice"]["type"] == "tool"
    assert "failure_patterns" in request["messages"][0]["content"][0]["text"]
    assert "constant_folding" in request["messages"][0]["content"][0]["text"]  # a missed topic
    improved = pytester.path / "prompts" / "v2.yaml"
    assert "Use qualified language" in improved.read_text()
    # The new version runs as any other (its request is new: no recording, so it fails
    # offline with the message saying how to record it), and is never overwritten.
    again = prompteval(
        pytester.path, "improve", "--prompt", "v1_baseline", "--create-improved", "--output", "v2"
    )
    assert again.returncode == 2 and "exists already" in again.stderr
    assert len(anthropic_server.requests) == 1  # the second run replayed the recording


def _store(directory: Path, name: str, results: list[ItemResult], partial: bool = False) -> Path:
    path = directory / f"{name}.json"
    meta = {"prompt_version": "v", "started_at": name}
    stored = [r.to_json() for r in results]
    path.write_text(json.dumps({"meta": meta, "results": stored, "partial": partial}))
    return path


def _run(passed: int, total: int, extra: int = 0) -> list[ItemResult]:
    return [item("v", f"c{i:02}", 0.9 if i < passed else 0.1) for i in range(total)] + [
        item("v", f"new{i}", 0.9) for i in range(extra)
    ]


def test_analyze_trend_is_a_test_over_comparable_complete_runs(tmp_path: Path) -> None:
    # 14/20 then 13/20 was "declining"; a partial run and cases added later change nothing.
    _store(tmp_path, "1", _run(14, 20))
    _store(tmp_path, "2", _run(13, 20, extra=10))
    _store(tmp_path, "3", _run(2, 5), partial=True)
    report = analyze(tmp_path, window=5)
    data = report["versions"]["v"]
    assert data["trend"] == {
        "runs": 2,
        "cases": 20,
        # paired by case: only c13 changed (one case going from pass to fail, z = -1)
        "slope_per_run": pytest.approx(-1.0),
        "p_value": pytest.approx(0.3173, abs=1e-4),
    }
    assert trend_word(data["trend"]) == "no trend (p=0.32)"
    # The pooled pass rate over complete runs, by the summary's denominators: 37 of 50.
    assert data["windowed_pass_rate"] == pytest.approx(37 / 50)
    lines = render_text(report, 5)
    assert lines[1].split()[-3:] == ["no", "trend", "(p=0.32)"]
    assert lines[3] == "best version (latest run's mean score): v 0.713 95% [0.570, 0.830]"
    # A real decline is called one, with its p-value.
    _store(tmp_path, "4", _run(4, 20))
    assert trend_word(analyze(tmp_path, 5)["versions"]["v"]["trend"]).startswith("declining (p=")


def test_analyze_agreement_never_takes_the_judge_score_for_an_automatic_0(tmp_path: Path) -> None:
    result = dataclasses.replace(
        item("v", "c00", 0.9, scorer="hybrid", judge_score=0.9), automatic_score=0.0
    )
    path = _store(tmp_path, "1", [result])
    review = {"file": "c.yaml", "case_id": "c00", "sample": 0, "human_score": 0.2}
    path.with_name(path.name + ".review.json").write_text(json.dumps({"reviews": [review]}))
    agreement = analyze(tmp_path, 5)["versions"]["v"]["agreement"]
    assert agreement["human_vs_automatic_mean_abs_diff"] == pytest.approx(0.2)
    assert agreement["human_vs_automatic_pass_fail"] == {
        "both_pass": 0,
        "human_only": 0,
        "other_only": 0,
        "both_fail": 1,
        "percent_agreement": 1.0,
        "kappa": None,
    }
    assert agreement["human_vs_judge_pass_fail"]["other_only"] == 1
