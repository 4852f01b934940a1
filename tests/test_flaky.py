"""Several samples per case: pass^k, Wilson intervals, min_pass verdicts and exit codes."""

from __future__ import annotations

from itertools import combinations, product
from xml.etree import ElementTree

import pytest

from pytest_prompteval.core.minpass import needed, parse_min_pass
from pytest_prompteval.core.stats import pass_at_k
from pytest_prompteval.report.flaky import (
    CaseSamples,
    pass_hat_k,
    sample_lines,
    verdict_decided,
    wilson,
)
from pytest_prompteval.report.gates import GATE_FAILED, NO_VERDICT, min_pass_failures

APP = """
from pathlib import Path

def answer(request, *, case, prompt, sample):
    with Path(__file__).with_name("calls.log").open("a") as log:
        log.write(f"{case.id} {sample}\\n")
    return "a loop" if sample < case.raw["vars"]["passes"] else "nothing"
"""
PROVIDER = "--prompteval-provider=python:flakyapp:answer"


def brute_force(n: int, c: int, k: int) -> tuple[float, float]:
    """(pass@k, pass^k) by enumerating every k of the n samples."""
    samples = [True] * c + [False] * (n - c)
    draws = list(combinations(samples, k))
    return (
        sum(any(d) for d in draws) / len(draws),
        sum(all(d) for d in draws) / len(draws),
    )


def test_pass_hat_k_and_pass_at_k_match_brute_force_enumeration() -> None:
    for n in range(1, 9):
        for c in range(n + 1):
            for k in range(1, n + 1):
                at, hat = brute_force(n, c, k)
                assert pass_hat_k(n, c, k) == pytest.approx(hat, abs=1e-12), (n, c, k)
                assert pass_at_k(n, c, k) == pytest.approx(at, abs=1e-12), (n, c, k)


def test_wilson_interval_known_values() -> None:
    assert wilson(5, 10) == pytest.approx((0.2366, 0.7634), abs=1e-4)
    low, high = wilson(0, 10)
    assert low == 0.0 and high == pytest.approx(0.2775, abs=1e-4)
    assert wilson(10, 10)[1] == 1.0


def test_min_pass_counts_and_fractions() -> None:
    assert [parse_min_pass(v) for v in ("4", "0.8", 1, 1.0)] == [4, 0.8, 1, 1.0]
    assert isinstance(parse_min_pass("1"), int) and isinstance(parse_min_pass("1.0"), float)
    for bad in ("0", "1.5", "-1", "x", "0.0", True):
        with pytest.raises(ValueError, match="a count of samples like 4"):
            parse_min_pass(bad)
    assert needed(4, 5) == 4 and needed(4, 3) == 3  # a count is capped at the samples drawn
    assert needed(0.8, 5) == 4 and needed(0.5, 5) == 3 and needed(1.0, 5) == 5
    assert needed(1, 5) == 1 and needed(0.01, 5) == 1


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(flakyapp=APP)
    pytester.makeini("[pytest]\npythonpath = .\n")
    pytester.mkdir("prompts").joinpath("v.yaml").write_text("user_prompt: x\n")
    cases = "".join(
        f"- id: {name}\n  vars: {{passes: {passes}}}\n  samples: 5\n  threshold: 0\n"
        f"  input: {{n: {i}}}\n"
        f"  assert: [{{contains: loop}}]\n{extra}"
        for i, (name, passes, extra) in enumerate(
            [("steady", 5, ""), ("mostly", 4, ""), ("rarely", 2, "")]
        )
    )
    pytester.mkdir("prompt_cases").joinpath("c.yaml").write_text("cases:\n" + cases)
    return pytester


def test_min_pass_decides_the_case_while_every_sample_stays_visible(
    project: pytest.Pytester, xdist_args: list[str]
) -> None:
    result = project.runpytest(
        "--prompt=v", PROVIDER, "--prompteval-min-pass=4", "--junitxml=junit.xml", *xdist_args
    )
    # the failing samples are xfail; the case below its min_pass is one failed test
    result.assert_outcomes(passed=11, xfailed=4, failed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*samples*",
            "v: pass@1 73.3%  pass^1 73.3%; 2 flaky cases",
            "  flaky c.yaml::mostly [v]: 4/5 passed, 95% CI [37.6%, 96.4%], min_pass 4: passes",
            "  flaky c.yaml::rarely [v]: 2/5 passed, 95% CI [11.8%, 76.9%], min_pass 4: fails",
            "prompteval gate failed: case c.yaml::rarely [v]: 2/5 samples passed, min_pass 4 "
            "needs 4",
            "FAILED prompt_cases/c.yaml::rarely[[]v-min_pass] - 2/5 samples passed, min_pass*",
        ]
    )
    # JUnit says so too (it said failures="0": every failing sample was a skip)
    suite = ElementTree.parse(project.path / "junit.xml").getroot()[0]
    assert (suite.get("failures"), suite.get("skipped"), suite.get("tests")) == ("1", "4", "16")
    (failure,) = suite.iter("failure")
    assert failure.get("message") == "2/5 samples passed, min_pass 4 needs 4"
    (verdict,) = [t for t in suite.iter("testcase") if t.find("failure") is not None]
    assert verdict.get("name") == "rarely[v-min_pass]"


def test_a_case_min_pass_wins_over_the_option(project: pytest.Pytester) -> None:
    cases = project.path / "prompt_cases" / "c.yaml"
    cases.write_text(cases.read_text() + "  min_pass: 0.4\n")
    result = project.runpytest("--prompt=v", PROVIDER, "--prompteval-min-pass=4")
    result.assert_outcomes(passed=11, xfailed=4)  # no case below its min_pass: no failure
    assert result.ret == pytest.ExitCode.OK


def test_without_min_pass_every_failed_sample_fails(project: pytest.Pytester) -> None:
    result = project.runpytest("--prompt=v", PROVIDER, "--prompteval-pass-k=1,5")
    result.assert_outcomes(passed=11, failed=4)
    result.stdout.fnmatch_lines(["v: pass@1 73.3%  pass^1 73.3%; pass@5 100.0%  pass^5 33.3%; *"])


def test_exit_gates_follows_the_gates_alone(project: pytest.Pytester) -> None:
    passing = project.runpytest(
        "--prompt=v", PROVIDER, "--prompteval-exit=gates", "--prompteval-fail-under=0.5"
    )
    passing.assert_outcomes(passed=11, failed=4)
    assert passing.ret == 0
    failing = project.runpytest(
        "--prompt=v", PROVIDER, "--prompteval-exit=gates", "--prompteval-fail-under=0.99"
    )
    assert failing.ret == GATE_FAILED
    failing.stdout.fnmatch_lines(["prompteval gate failed: mean score of v is *"])
    project.makeini("[pytest]\npythonpath = .\nprompteval_exit = gates\nprompteval_min_pass = 3\n")
    by_ini = project.runpytest("--prompt=v", PROVIDER)
    assert by_ini.ret == GATE_FAILED
    by_ini.stdout.fnmatch_lines(["*case c.yaml::rarely ?v?: 2/5 samples passed, min_pass 3*"])


def test_exit_gates_still_fails_on_an_ordinary_test(project: pytest.Pytester) -> None:
    project.makepyfile(test_unit="def test_ok():\n    pass\n\ndef test_broken():\n    assert 0\n")
    gates = ("--prompt=v", PROVIDER, "--prompteval-exit=gates", "--prompteval-fail-under=0.5")
    result = project.runpytest(*gates)
    result.assert_outcomes(passed=12, failed=5)
    assert result.ret == GATE_FAILED  # the gates pass; the unit test does not
    passing = project.runpytest(*gates, "-k", "not broken")
    assert passing.ret == 0


def test_exit_gates_when_errors_prevent_a_verdict(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    # no recordings and nothing to call: every item is a missing recording
    result = project.runpytest("--prompt=v", "--prompteval-exit=gates")
    result.assert_outcomes(errors=15)
    result.stdout.fnmatch_lines(["v: errors: missing_recording 15 *", "v: 15 errored, not scored*"])
    # not a gate that failed on what it saw (no verdict is not a failure), nor a pass
    assert "gate failed" not in result.stdout.str()
    assert result.ret == NO_VERDICT


def test_bad_min_pass_values(project: pytest.Pytester) -> None:
    option = project.runpytest("--prompt=v", PROVIDER, "--prompteval-min-pass=1.5")
    assert option.ret == pytest.ExitCode.USAGE_ERROR
    option.stderr.fnmatch_lines(["ERROR: --prompteval-min-pass '1.5': expected a count of *"])
    cases = project.path / "prompt_cases" / "c.yaml"
    cases.write_text(cases.read_text() + "  min_pass: all\n")
    case = project.runpytest("--prompt=v", PROVIDER)
    case.stdout.fnmatch_lines(["prompt_cases/c.yaml:20: case 'rarely' field 'min_pass': expected*"])
    assert "Traceback" not in case.stdout.str()


def test_stopping_early_never_changes_a_verdict() -> None:
    """Every pass/fail sequence of up to 6 samples, every min_pass: the verdict of the samples
    drawn when the verdict is decided is the verdict of all of them."""
    for samples in range(1, 7):
        for min_pass in (1, 2, 3, 4, 6, 0.5, 0.8, 1.0):
            for sequence in product((True, False), repeat=samples):
                full = CaseSamples("v", "c", samples, sum(sequence), 0, min_pass).verdict
                drawn = next(
                    n
                    for n in range(1, samples + 1)
                    if verdict_decided(sum(sequence[:n]), n, samples, min_pass)
                )
                early = CaseSamples("v", "c", drawn, sum(sequence[:drawn]), 0, min_pass)
                assert early.verdict == full, (sequence, min_pass)


def test_stop_early_saves_calls_with_the_same_verdicts(project: pytest.Pytester) -> None:
    args = ("--prompt=v", PROVIDER, "--prompteval-min-pass=3", "--prompteval-results=none")
    full = project.runpytest(*args, "--prompteval-record=all")
    full.assert_outcomes(passed=11, xfailed=4, failed=1)
    log = project.path / "calls.log"
    assert len(log.read_text().splitlines()) == 15
    log.unlink()
    early = project.runpytest(*args, "--prompteval-record=all", "--prompteval-stop-early")
    # steady and mostly pass their first 3 samples: decided; rarely (2 pass, 3 fail): all 5
    early.assert_outcomes(passed=8, xfailed=3, skipped=4, failed=1)
    early.stdout.fnmatch_lines(["--prompteval-stop-early: 4 samples not drawn (calls saved)"])
    assert len(log.read_text().splitlines()) == 11
    gate = "prompteval gate failed: case c.yaml::rarely ?v?: * min_pass 3 needs 3"
    full.stdout.fnmatch_lines([gate])
    early.stdout.fnmatch_lines([gate])
    assert "mostly" not in "".join(line for line in early.outlines if "gate failed" in line)
    assert early.ret == full.ret == pytest.ExitCode.TESTS_FAILED


@pytest.mark.parametrize(
    ("passed", "errored", "min_pass", "verdict", "undecided"),
    [
        (1, 4, 4, None, True),  # once: 1 passing of 1 scored met min_pass 4
        (1, 4, 0.8, None, True),
        (4, 1, 4, True, False),  # four passed: an error cannot undo it
        (0, 2, 4, False, False),  # 3 failed of 5: even passing errored ones would miss 4
        (1, 0, 4, True, False),  # a single sample drawn, none errored: min(4, 1)
    ],
)
def test_errored_samples_never_lower_min_pass(
    passed: int, errored: int, min_pass: float, verdict: bool | None, undecided: bool
) -> None:
    scored = (5 - errored) if (passed, errored) != (1, 0) else 1
    case = CaseSamples("v", "c.yaml::c", scored, passed, errored, min_pass)
    assert (case.verdict, case.undecided) == (verdict, undecided)
    assert bool(min_pass_failures([case])) == (verdict is False)
    if undecided:
        assert sample_lines([case], (1,))[-1].endswith(
            f"min_pass {min_pass}: undecided, {errored} samples errored"
        )
