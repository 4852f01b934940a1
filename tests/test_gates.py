"""Whole ``pytest --prompt=b --compare a --prompteval-exit=gates`` runs of issue #23: the gate
never ships the worse version, and never fails the better one."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pytest_prompteval.report import gates
from pytest_prompteval.report.gates import GATE_FAILED, PASSED

APP = """
def answer(request, *, case, prompt, sample):
    scores = case.raw["scores"][prompt.version]
    return str(scores[sample] if isinstance(scores, list) else scores)
"""
# the item's score is this one's: a case that gives only assertions is scored by them alone
CONFTEST = """
import pytest_prompteval

@pytest_prompteval.scorer("echo")
def echo(case, request, response):
    return float(response.text)
"""
PROVIDER = "--prompteval-provider=python:app:answer"
GATES = ("--prompt=b", "--compare=a", PROVIDER, "--prompteval-exit=gates")


def write_cases(pytester: pytest.Pytester, scores: list[tuple[Any, Any]], **extra: Any) -> None:
    """One case per (a's echo, b's echo); a list is one value per sample."""
    lines = ["cases:"]
    for i, (a, b) in enumerate(scores):
        samples = max(len(v) if isinstance(v, list) else 1 for v in (a, b))
        lines += [
            f"- id: case{i:03}",
            f"  input: {{n: {i}}}",
            "  threshold: 0.7",
            f"  samples: {samples}",
            f"  scores: {json.dumps({'a': a, 'b': b})}",
            "  assert: [{type: echo}]",
        ]
        lines += [f"  {k}: {v}" for k, v in extra.items()]
    pytester.path.joinpath("prompt_cases", "c.yaml").write_text("\n".join(lines) + "\n")


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(app=APP)
    pytester.makeconftest(CONFTEST)
    pytester.makeini(
        "[pytest]\npythonpath = .\nprompteval_case_fields = scores\nprompteval_results = none\n"
    )
    prompts = pytester.mkdir("prompts")
    for version in ("a", "b"):
        prompts.joinpath(f"{version}.yaml").write_text(f"user_prompt: version {version}\n")
    pytester.mkdir("prompt_cases")
    return pytester


def no_new_failure_rule(pytester: pytest.Pytester) -> None:
    """The significance gate alone: new failures allowed."""
    pytester.makeini(
        "[pytest]\npythonpath = .\nprompteval_case_fields = scores\nprompteval_results = none\n"
        "prompteval_max_new_failures = 100000\n"
    )


def test_a_regression_whose_p_value_underflows_fails_the_gate(project: pytest.Pytester) -> None:
    # Finding 1: 1,100 cases newly failing; p = 2**-1099 once read as 0.0 -> "or 1.0" -> exit 0.
    no_new_failure_rule(project)
    write_cases(project, [(0.9, 0.1)] * 1100)
    result = project.runpytest(*GATES, "-n", "2")
    assert result.ret == GATE_FAILED
    result.stdout.fnmatch_lines(
        [
            "prompteval gate failed: significant regression of b against a: b worse than a on "
            "pass@1: 1100 regressions, 0 improvements; pass@1 -100.0% [[]-100.0%, -99.*%[]] "
            "(95%), McNemar exact p=1.5e-331; mean score -0.800 *"
        ]
    )


def test_the_gate_blames_the_version_the_verdict_says_is_worse(
    project: pytest.Pytester, xdist_args: list[str]
) -> None:
    # Finding 3: b newly fails 10 cases by a hair while gaining score on 10 others: the mean
    # score difference is +0.015, under the minimum effect, and once decided the direction.
    no_new_failure_rule(project)
    write_cases(project, [(0.72, 0.69)] * 10 + [(0.60, 0.66)] * 10)
    worse = project.runpytest(*GATES, *xdist_args)
    assert worse.ret == GATE_FAILED
    worse.stdout.fnmatch_lines(
        [
            "prompteval gate failed: significant regression of b against a: b worse than a on "
            "pass@1: 10 regressions, 0 improvements; pass@1 -50.0% *McNemar exact p=0.002; "
            "mean score +0.015 * (secondary, not gating)"
        ]
    )
    # the roles swapped: a is the better side, and its gate passes
    better = project.runpytest("--prompt=a", "--compare=b", PROVIDER, "--prompteval-exit=gates")
    assert better.ret == PASSED
    assert "gate failed" not in better.stdout.str()


def test_a_regression_is_never_hidden_as_mixed(
    project: pytest.Pytester, xdist_args: list[str]
) -> None:
    # Finding 5: 6 cases newly fail (5/5 -> 0/5), none improves, the mean score goes up: once
    # "mixed", no gate, exit 0.
    write_cases(project, [([0.72] * 5, [0.69] * 5)] * 6 + [([0.75] * 5, [1.0] * 5)] * 9)
    result = project.runpytest(*GATES, "--prompteval-markdown=pr.md", *xdist_args)
    assert result.ret == GATE_FAILED
    result.stdout.fnmatch_lines(
        [
            "prompteval gate failed: significant regression of b against a: b worse than a on "
            "pass@1: 6 regressions, 0 improvements; pass@1 -40.0% *p=0.031; "
            "mean score +0.138 *(secondary, not gating)",
            # and the new-failures rule (default 0 in gates mode) lists each case with its line
            "prompteval gate failed: b newly fails 6 cases that pass under a (more than "
            "prompteval_max_new_failures 0): c.yaml::case000 (prompt_cases/c.yaml:2) 5/5 → 0/5, "
            "c.yaml::case001 (prompt_cases/c.yaml:8) 5/5 → 0/5, *",
        ]
    )
    markdown = project.path.joinpath("pr.md").read_text()
    # the comparison is b (the --prompt version) against a: b's losses are its regressions
    assert (
        "**Regressions**\n\n- [`case000`](prompt_cases/c.yaml#L2) "
        "`prompt_cases/c.yaml:2` 5/5 → 0/5" in markdown
    )
    assert "b newly fails 6 cases that pass under a" in markdown


def test_one_newly_failing_case_fails_the_gate_by_default_and_the_limit_is_an_ini(
    project: pytest.Pytester,
) -> None:
    # 5/5 -> 0/5: far from significant for the suite, still a case that reliably fails now
    write_cases(project, [([0.9] * 5, [0.1] * 5)] + [([0.9] * 5, [0.9] * 5)] * 9)
    result = project.runpytest(*GATES)
    assert result.ret == GATE_FAILED
    result.stdout.fnmatch_lines(
        [
            "prompteval gate failed: b newly fails 1 cases that pass under a (more than "
            "prompteval_max_new_failures 0): c.yaml::case000 (prompt_cases/c.yaml:2) 5/5 → 0/5"
        ]
    )
    assert "significant regression" not in result.stdout.str()
    project.makeini(
        "[pytest]\npythonpath = .\nprompteval_case_fields = scores\nprompteval_results = none\n"
        "prompteval_max_new_failures = 1\n"
    )
    assert project.runpytest(*GATES).ret == PASSED
    project.makeini("[pytest]\npythonpath = .\nprompteval_max_new_failures = some\n")
    bad = project.runpytest(*GATES)
    bad.stderr.fnmatch_lines(["*ini prompteval_max_new_failures 'some': expected a whole number*"])


def test_different_sample_counts_compare_per_sample_and_say_so(project: pytest.Pytester) -> None:
    # Finding 6: a baseline file recorded with 1 sample per case, b run with 5, with the same
    # per-sample behaviour (60% of samples pass). By majority vote b passes all 25 cases and
    # the baseline 15: once "better", and the reverse is as wrong.
    three_of_five = [0.9, 0.9, 0.9, 0.1, 0.1]
    write_cases(project, [([0.9], [0.9])] * 15 + [([0.1], [0.9])] * 10)
    project.runpytest("--prompt=a", PROVIDER, "--prompteval-results=runs")
    (stored,) = project.path.joinpath("runs").glob("*_a.json")
    write_cases(project, [([0.9], three_of_five)] * 25)
    result = project.runpytest(
        "--prompt=b", PROVIDER, f"--prompteval-baseline={stored}", "--prompteval-exit=gates"
    )
    result.stdout.fnmatch_lines(
        [
            f"no significant difference, b vs baseline {stored.name}: 0 regressions, 10 "
            "improvements; pass@1 +0.0% [[]*[]] (95%), p=1; *",
            f"  samples per case differ (baseline {stored.name} 1, b 5): each case counts its "
            "share of passing samples, which the counts do not bias",
        ]
    )
    assert result.ret == PASSED


def test_a_non_finite_score_in_a_baseline_file_is_a_usage_error(
    project: pytest.Pytester,
) -> None:
    # Finding 8: NaN in a baseline file once crashed sessionfinish (a traceback, exit 1, which
    # gates mode reads as "gate failed").
    write_cases(project, [(0.9, 0.9)] * 6)
    project.runpytest("--prompt=a", PROVIDER, "--prompteval-results=runs").assert_outcomes(passed=6)
    (stored,) = project.path.joinpath("runs").glob("*_a.json")
    data = json.loads(stored.read_text())
    data["results"][3]["score"] = float("nan")
    stored.write_text(json.dumps(data))
    result = project.runpytest("--prompt=b", PROVIDER, f"--prompteval-baseline={stored}",
                               "--prompteval-exit=gates")  # fmt: skip
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            f"ERROR: --prompteval-baseline: runs/{stored.name}: results[3] (case 'case003'): "
            "score nan is not a number from 0 to 1"
        ]
    )
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


def test_an_equal_run_of_1030_cases_passes_the_gate_with_its_json_report(
    project: pytest.Pytester,
) -> None:
    # 1,030 cases overflowed the power figure: a traceback in pytest_json_modifyreport, exit 1
    # and no report, so the gate blocked an equal version.
    no_new_failure_rule(project)
    write_cases(project, [(0.9, 0.1), (0.1, 0.9)] * 5 + [(0.9, 0.9)] * 1020)
    result = project.runpytest(*GATES, "-n", "2", "--json-report", "--json-report-file=r.json")
    assert result.ret == PASSED, result.stdout.str()[-2000:]
    report = json.loads(project.path.joinpath("r.json").read_text())
    assert report["prompteval"]["comparisons"][0]["paired"] == 1030


def test_a_flaky_case_drawn_the_other_way_is_no_new_failure(project: pytest.Pytester) -> None:
    # 5/5 -> 2/5 is what a case passing 80% of its samples does in 1 run of
    # 20: with 10% such cases the shipped recipe blocked identical versions in 25% of runs at
    # 20 cases. Its own exact test says it may well be chance: listed, not newly failing.
    write_cases(project, [([0.9] * 5, [0.9, 0.9, 0.1, 0.1, 0.1])] + [([0.9] * 5, [0.9] * 5)] * 9)
    result = project.runpytest(*GATES)
    result.stdout.fnmatch_lines(
        [
            "*1 regressions, 0 improvements*",
            "*1 of the 1 changed verdicts rest on too few samples to tell (each case's exact "
            "test at Tarone's level over the paired cases): they do not count as newly failing "
            "for prompteval_max_new_failures",
        ]
    )
    assert result.ret == PASSED, result.stdout.str()[-1500:]


def test_no_gate_code_reads_as_another_pytest_status() -> None:
    """A gate code that is also a pytest status means what pytest's means (a CI step reading
    6 as too many warnings must not be told there was no verdict)."""
    ours = {
        "PASSED": gates.PASSED,
        "GATE_FAILED": gates.GATE_FAILED,
        "NO_VERDICT": gates.NO_VERDICT,
    }
    same = {"PASSED": pytest.ExitCode.OK, "GATE_FAILED": pytest.ExitCode.TESTS_FAILED}
    for name, code in ours.items():
        clash = [e for e in pytest.ExitCode if e == code]
        assert clash == ([same[name]] if name in same else []), (name, code, clash)
