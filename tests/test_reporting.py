"""Summary, history, comparison, gates and CI formats of a run."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import xmlschema

from pytest_prompteval.core.history import load_run

from .conftest import copy_example_suite, generated_project

SCHEMA = Path(__file__).with_name("data") / "junit-prompteval.xsd"
RUN = ["--prompt=current", "--compare=v1_baseline"]


def summary_lines(result: pytest.RunResult) -> list[str]:
    """Everything from the summary header to the results paths, minus the paths."""
    lines = result.outlines
    start = next(i for i, line in enumerate(lines) if "prompteval summary" in line)
    end = next(i for i, line in enumerate(lines) if line.startswith("prompteval results:"))
    return lines[start:end]


def stored(directory: Path) -> list[dict[str, Any]]:
    runs = []
    for path in sorted(directory.glob("*.json")):
        data = json.loads(path.read_text())
        del data["meta"]  # timestamps and the command line
        runs.append(data)
    return runs


def test_the_same_figures_and_results_without_xdist_and_with_2_and_4_workers(
    pytester: pytest.Pytester,
) -> None:
    copy_example_suite(pytester)
    outputs, files = [], []
    for workers in ("0", "2", "4"):
        result = pytester.runpytest(*RUN, "-n", workers, f"--prompteval-results=runs{workers}")
        result.assert_outcomes(passed=10)
        outputs.append(summary_lines(result))
        files.append(stored(pytester.path / f"runs{workers}"))
    assert outputs[0] == outputs[1] == outputs[2]
    assert files[0] == files[1] == files[2]
    assert len(files[0]) == 2 and len(files[0][0]["results"]) == 5


def test_summary_blocks(pytester: pytest.Pytester) -> None:
    copy_example_suite(pytester)
    result = pytester.runpytest(*RUN, "--prompteval-pass-k=1")
    result.stdout.fnmatch_lines(
        [
            "*prompteval summary*",
            "version * items * passed * failed * errored * skipped * pass rate * score * pass@1 *",
            "current * 5 * 5 * 0 * 0 * 0 * 100.0% * 0.908 * 100.0% *",
            "*scores by dimension*",
            "accuracy * 1.000 * 0.767",
            "*accuracy by category*",
            "loop_optimization * 1/1 100.0% * 1/1 100.0%",
            "*accuracy by difficulty*",
            "beginner * 3/3 100.0% * 3/3 100.0%",
            "*accuracy by quality*",
            "*comparison*",
            # the --prompt version against its reference: current scores higher
            "no verdict possible, current vs v1_baseline: 5 paired cases, and exact paired tests "
            "need at least 6 to reach p < 0.05; pass@1 +0.0% [[]-53.4%, +53.4%[]] (95%), "
            "McNemar exact p=1; mean score +0.096 [[]-0.477, +0.615[]] (95%), p=0.25 (secondary, "
            "not gating)",
            "  5 paired cases; too few for any verdict (at least 6 needed)",
            "  decided on pass@1 (prompteval_gate_metric), McNemar exact, one comparison: no "
            "multiplicity correction",
            "  pass@1: +0.0% [[]-53.4%, +53.4%[]] over the 5 cases with n >= 1 samples in both",
            "  per case: each case counts the share of its samples that pass (k/n)*",
        ]
    )


def test_history_baseline_and_gates(pytester: pytest.Pytester) -> None:
    copy_example_suite(pytester)
    pytester.runpytest("--prompt=v1_baseline").assert_outcomes(passed=5)
    (baseline,) = sorted(pytester.path.joinpath("prompt_results").glob("*_v1_baseline.json"))
    run = load_run(baseline)
    assert not run.partial and run.version == "v1_baseline" and len(run.results) == 5
    assert run.meta["prompt_sha256"] and run.meta["plugin_version"]
    assert run.summary["mean_score"] == pytest.approx(0.812, abs=1e-3)

    # current is better than the stored baseline: the regression gate passes...
    ok = pytester.runpytest(
        "--prompt=current", f"--prompteval-baseline={baseline}", "--prompteval-max-regression=0.01"
    )
    assert ok.ret == 0
    ok.stdout.fnmatch_lines(["*current vs baseline *_v1_baseline.json:*mean score +0.096 [[]*]*"])
    # ...while v1_baseline against current's run fails it, and fail-under fails too.
    (current,) = sorted(pytester.path.joinpath("prompt_results").glob("*_current.json"))
    bad = pytester.runpytest(
        "--prompt=v1_baseline",
        f"--prompteval-baseline={current}",
        "--prompteval-max-regression=0.05",
        "--prompteval-fail-under=0.9",
    )
    assert bad.ret == pytest.ExitCode.TESTS_FAILED
    bad.stdout.fnmatch_lines(
        [
            "prompteval gate failed: mean score of v1_baseline is 0.812, under "
            "--prompteval-fail-under 0.9",
            "prompteval gate failed: v1_baseline scores 0.096 below baseline *_current.json on "
            "paired cases, more than --prompteval-max-regression 0.05",
        ]
    )
    missing = pytester.runpytest("--prompt=current", "--prompteval-baseline=nope.json")
    assert missing.ret == pytest.ExitCode.USAGE_ERROR
    missing.stderr.fnmatch_lines(
        ["ERROR: --prompteval-baseline 'nope.json': no such file; expected a results file*"]
    )


SLOW_APP = """
import time

def answer(request, *, case, prompt, sample):
    time.sleep(0.15)
    return "The loop optimization keeps a pointer in rdi and exits early when n is zero."
"""


def test_a_killed_run_keeps_every_finished_item(pytester: pytest.Pytester) -> None:
    generated_project(pytester, 40, prompt="user_prompt: x\n")
    pytester.makepyfile(slowapp=SLOW_APP)
    env = {**os.environ, "PYTHONPATH": str(pytester.path)}
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "--prompt=v",
            "--prompteval-provider=python:slowapp:answer",
            "--prompteval-concurrency=1",
        ],
        cwd=pytester.path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    results = pytester.path / "prompt_results"
    deadline = time.monotonic() + 60
    journal: Path | None = None
    while time.monotonic() < deadline:
        journals = list(results.glob("*.jsonl")) if results.exists() else []
        if journals and len(journals[0].read_text().splitlines()) >= 6:
            journal = journals[0]
            break
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert journal is not None, "the run never wrote its journal"
    run = load_run(journal)
    assert run.partial and run.version == "v"
    assert 5 <= len(run.results) < 40
    assert all(r.passed and r.response for r in run.results)
    # The comparison reads it like any stored run.
    pytester.syspathinsert()
    compared = pytester.runpytest(
        "--prompt=v",
        f"--prompteval-baseline={journal}",
        "--prompteval-provider=python:slowapp:answer",
        "-k",
        "c00 or c01 or c02",
    )
    compared.stdout.fnmatch_lines(
        ["*v vs baseline *.jsonl: 3 paired cases*mean score +0.000*", "  3 paired cases*"]
    )


def test_junit_xml_validates_and_carries_properties(pytester: pytest.Pytester) -> None:
    copy_example_suite(pytester)
    result = pytester.runpytest(*RUN, "--junitxml=junit.xml", "-o", "junit_family=xunit1")
    result.assert_outcomes(passed=10)
    schema = xmlschema.XMLSchema(SCHEMA)
    document = pytester.path / "junit.xml"
    schema.validate(document)
    tree: Any = schema.to_dict(document)
    suite = tree["testsuite"][0]
    suite_props = {p["@name"]: p["@value"] for p in suite["properties"]["property"]}
    assert suite_props["prompteval.current.pass@1"] == "1.000000"
    assert suite_props["prompteval.v1_baseline.category.loop_optimization"] == "1.000000"
    case = next(c for c in suite["testcase"] if c["@name"] == "sum_loop_001[current]")
    props = {p["@name"]: p["@value"] for p in case["properties"]["property"]}
    assert props["prompteval.prompt"] == "current" and props["prompteval.passed"] == "True"
    assert float(props["prompteval.score"]) > 0.7
    assert props["prompteval.category"] == "loop_optimization"
    assert int(props["prompteval.input_tokens"]) > 0 and float(props["prompteval.cost_usd"]) > 0


def test_json_report_carries_metadata_and_summary(pytester: pytest.Pytester) -> None:
    copy_example_suite(pytester)
    pytester.runpytest(*RUN, "--json-report", "--json-report-file=r.json")
    report = json.loads(pytester.path.joinpath("r.json").read_text())
    section = report["prompteval"]
    assert section["versions"]["current"]["pass_at_k"] == {"pass@1": 1.0}
    assert section["versions"]["v1_baseline"]["groups"]["difficulty"]["beginner"] == {
        "passed": 3,
        "total": 3,
    }
    (comparison,) = section["comparisons"]
    assert comparison["paired"] == 5 and comparison["mean_diff"] == pytest.approx(0.096, abs=1e-3)
    assert all("prompteval" in t["metadata"] for t in report["tests"])


def test_html_report_is_self_contained(pytester: pytest.Pytester) -> None:
    copy_example_suite(pytester)
    result = pytester.runpytest(*RUN, "--prompteval-html=report.html")
    result.stdout.fnmatch_lines(["prompteval report: report.html"])
    page = pytester.path.joinpath("report.html").read_text()
    assert page.startswith("<!DOCTYPE html>")
    for external in ("<script", "http://", "https://", "@import", "<link"):
        assert external not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert page.count("<svg") == 3
    assert "sum_loop_001" in page and "Accuracy per category" in page
    assert "no verdict possible, current vs v1_baseline" in page


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def test_html_report_renders_in_headless_chromium(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        if os.environ.get("PROMPTEVAL_REQUIRE_CHROMIUM"):
            pytest.fail("chromium is required here (PROMPTEVAL_REQUIRE_CHROMIUM is set)")
        pytest.skip("chromium is not installed (.ci/run installs it)")
    copy_example_suite(pytester)
    pytester.runpytest(*RUN, "--prompteval-html=report.html").assert_outcomes(passed=10)
    shot = tmp_path / "report.png"
    done = subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={tmp_path / 'profile'}",
            f"--screenshot={shot}",
            "--window-size=1280,1600",
            (pytester.path / "report.html").as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert shot.exists(), done.stderr[-2000:]
    data = shot.read_bytes()
    assert _png_size(data) == (1280, 1600)
    assert len(data) > 50_000  # text, tables and charts, not a blank page


PRICED_APP = """
from pytest_prompteval import Response

CALLS = []

def answer(request, *, case, prompt, sample):
    CALLS.append(case.id)
    # claude-haiku-4-5 at $5 per million output tokens: 2,000 tokens cost $0.01
    return Response(text="The loop optimization.", model="claude-haiku-4-5",
                    output_tokens=2000)
"""


def test_cost_budget_stops_new_calls_and_skips_the_rest(
    pytester: pytest.Pytester, xdist_args: list[str]
) -> None:
    generated_project(
        pytester, 10, prompt="user_prompt: x\nmodel_config: {model: claude-haiku-4-5}\n"
    )
    pytester.makepyfile(pricedapp=PRICED_APP)
    pytester.makeini("[pytest]\npythonpath = .\n")
    result = pytester.runpytest(
        "--prompt=v",
        "--prompteval-provider=python:pricedapp:answer",
        "--prompteval-max-cost=0.025",
        "--prompteval-concurrency=1",  # with calls sent ahead, all in flight may go over
        "-rs",
        *xdist_args,
    )
    outcomes = result.parseoutcomes()
    recorded = len(list(pytester.path.joinpath("prompt_recordings").glob("*.json")))
    # $0.01 a call: the third call reaches the budget; workers may each have one in flight.
    assert recorded == outcomes["passed"]
    assert 3 <= recorded <= (3 if not xdist_args else 4)
    assert outcomes["skipped"] == 10 - recorded
    result.stdout.fnmatch_lines(
        [
            f"v * 10 * {recorded} * 0 * 0 * {10 - recorded} * 100.0% *",
            f"v: skipped {10 - recorded} (cost budget spent), in no denominator",
            "SKIPPED [[]*] prompt_cases/c.yaml:*: cost budget spent: $0.0*0 of "
            "--prompteval-max-cost $0.025; no new call started",
        ]
    )
