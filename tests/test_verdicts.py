"""Each misleading verdict of issue #16, rebuilt from its reproduced input, and what is said now."""

from __future__ import annotations

import dataclasses
import math
import random
import statistics
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scipy import stats as scipy_stats

from pytest_prompteval.core.result import ItemResult
from pytest_prompteval.core.stats import agreement, mcnemar_exact
from pytest_prompteval.report.compare import Comparison, compare, correct
from pytest_prompteval.report.gates import comparison_gates
from pytest_prompteval.report.summary import summarize_version
from pytest_prompteval.report.terminal import (
    comparison_block,
    group_rows,
    notes_block,
    table,
    versions_rows,
)

from .verdict_data import exact_mcnemar_power, item


def cases(prompt: str, scores: Sequence[float | None], **kw: Any) -> list[ItemResult]:
    return [item(prompt, f"c{i:02}", s, **kw) for i, s in enumerate(scores)]


def block(c: Comparison) -> list[str]:
    return comparison_block(c, details=False)


def test_prompt_caused_failures_count_as_score_0_and_failed() -> None:
    # B scores 0.75 on 12 cases and hits a template error on 8: once "better, +0.150 (8 left
    # out for errors)"; those are the prompt's failures, so B is worse.
    a = cases("A", [0.6] * 20, threshold=0.5)
    b = cases("B", [0.75] * 12, threshold=0.5) + [
        item("B", f"c{i:02}", None, threshold=0.5, error_type="template") for i in range(12, 20)
    ]
    c = compare(a, b, ("A", "B"))
    assert c.paired == 20 and c.mean_diff == pytest.approx(-0.15)
    assert c.verdict == (
        "B worse than A on pass@1: 8 regressions, 0 improvements; pass@1 -40.0% "
        "[-62.1%, -10.6%] (95%), McNemar exact p=0.0078; mean score -0.150 [-0.347, +0.074] "
        "(95%), p=0.11 (secondary, not gating)"
    )
    assert block(c)[1].startswith("  regressions (8): c.yaml::c12 1/1 → 0/1, c.yaml::c13 1/1")


def test_infrastructure_errors_are_listed_per_version_and_the_verdict_may_change() -> None:
    a = cases("A", [0.6] * 20, threshold=0.5)
    b = cases("B", [0.75] * 17, threshold=0.5) + [
        item("B", f"c{i:02}", None, threshold=0.5, error_type="api_error") for i in range(17, 20)
    ]
    c = compare(a, b, ("A", "B"))
    assert (c.paired, c.errored, c.excluded) == (
        17,
        (0, 3),
        ["c.yaml::c17", "c.yaml::c18", "c.yaml::c19"],
    )
    lines = block(c)
    assert (
        "  not scored (infrastructure errors): A 0 items, B 3 items; 3 cases left out, so the "
        "verdict may change once they run" in lines
    )
    assert (
        "  left out, errored under one version (3): c.yaml::c17, c.yaml::c18, c.yaml::c19" in lines
    )


def test_cases_run_by_one_version_only_are_listed_as_unpaired() -> None:
    # A: 10 cases at 0.9 and 10 at 0.1; B ran the first 10 only.
    a = cases("A", [0.9] * 10 + [0.1] * 10)
    b = cases("B", [0.95] * 10)
    c = compare(a, b, ("A", "B"))
    assert c.paired == 10 and c.only_baseline == [f"c.yaml::c{i}" for i in range(10, 20)]
    assert c.only_other == []
    assert any(line.startswith("  unpaired, run by A only (10): c.yaml::c10") for line in block(c))


def test_one_errored_sample_never_removes_its_siblings() -> None:
    a = [item("A", f"c{i:02}", 0.5, sample=s) for i in range(8) for s in range(3)]
    b = [item("B", f"c{i:02}", 0.9, sample=s) for i in range(8) for s in range(3)]
    b[0] = item("B", "c00", None, sample=0, error_type="api_error")
    c = compare(a, b, ("A", "B"))
    assert c.paired == 8 and c.excluded == [] and c.errored == (0, 1)
    # c00 is paired on its two scored samples; pass@3 needs three, so it is not covered there.
    c3 = compare(a, b, ("A", "B"), ks=(1, 3))
    assert c3.pass_at_k[1][1] == 8 and c3.pass_at_k[3][1] == 7


def test_score_and_pass_fail_disagreeing_is_no_better() -> None:
    # 15 cases 0.80 -> 0.85, 5 cases 0.72 -> 0.68, threshold 0.7: once "B better, +0.027".
    # The declared endpoint (pass rate) decides; the score, up, is reported beside it.
    a = cases("A", [0.80] * 15 + [0.72] * 5)
    b = cases("B", [0.85] * 15 + [0.68] * 5)
    c = compare(a, b, ("A", "B"))
    assert c.outcome == "none" and not c.significant
    assert c.verdict == (
        "no significant difference, B vs A: 5 regressions, 0 improvements; pass@1 -25.0% "
        "[-46.2%, +0.7%] (95%), McNemar exact p=0.062; mean score +0.028 [+0.000, +0.163] "
        "(95%), p=0.012 (secondary, not gating)"
    )
    lines = block(c)
    assert lines[1] == (
        "  regressions (5): c.yaml::c15 1/1 → 0/1, c.yaml::c16 1/1 → 0/1, c.yaml::c17 1/1 → "
        "0/1, c.yaml::c18 1/1 → 0/1, c.yaml::c19 1/1 → 0/1"
    )
    assert (
        "  mean score significantly up (secondary, not gating): mean score +0.028 "
        "[+0.000, +0.163] (95%), p=0.012" in lines
    )


def test_five_cases_can_give_no_verdict_and_the_interval_agrees_with_p() -> None:
    # [.1,.2,.1,.3,.2] once printed +0.180 [+0.120, +0.240] beside "no significant difference".
    a = cases("A", [0.5] * 5)
    b = cases("B", [0.6, 0.7, 0.6, 0.8, 0.7])
    c = compare(a, b, ("A", "B"))
    assert c.outcome == "impossible"
    assert c.verdict == (
        "no verdict possible, B vs A: 5 paired cases, and exact paired tests need at least 6 "
        "to reach p < 0.05; pass@1 +60.0% [-29.9%, +100.0%] (95%), McNemar exact p=0.25; "
        "mean score +0.180 [-0.415, +0.672] (95%), p=0.062 (secondary, not gating)"
    )
    assert "  5 paired cases; too few for any verdict (at least 6 needed)" in block(c)


def test_zero_difference_and_differences_under_the_minimum_effect_are_never_better() -> None:
    same = compare(cases("A", [0.8] * 20), cases("B", [0.8] * 20), ("A", "B"))
    assert same.verdict.startswith(
        "no significant difference, B vs A: 0 regressions, 0 improvements; pass@1 +0.0% "
        "[-13.7%, +13.7%] (95%), McNemar exact p=1"
    )
    a, b = cases("A", [0.8] * 20), cases("B", [0.81] * 20)
    tiny = compare(a, b, ("A", "B"), min_effect=0.02, primary="score")
    assert tiny.outcome == "none"
    assert tiny.verdict.startswith(
        "no meaningful difference (under the minimum effect 0.02), B vs A: 0 regressions, 0 "
        "improvements; mean score +0.010 [+0.000, +0.146] (95%), p=1.9e-06"
    )


def test_power_is_stated_at_the_holm_level() -> None:
    a = cases("A", [0.80] * 15 + [0.72] * 5)
    b = cases("B", [0.85] * 15 + [0.68] * 5)
    c = compare(a, b, ("A", "B"), primary="score")
    # (t_0.975 + t_0.8 with 19 degrees of freedom) x sd / sqrt(20): one comparison, level 0.05
    sd = statistics.stdev([0.05] * 15 + [-0.04] * 5)
    expected = (scipy_stats.t.ppf(0.975, 19) + scipy_stats.t.ppf(0.8, 19)) * sd / math.sqrt(20)
    assert c.detectable == pytest.approx(expected, rel=1e-4)
    assert (
        "  20 paired cases; smallest mean score difference they detect (80% power at the Holm "
        "level 0.05): 0.026" in block(c)
    )
    # three comparisons: a lone real difference is tested at 0.05 / 3, so it must be larger
    others = [compare(a, b, ("A", f"B{i}"), primary="score") for i in range(3)]
    correct(others)
    holm_level = (scipy_stats.t.ppf(1 - 0.05 / 6, 19) + scipy_stats.t.ppf(0.8, 19)) * sd
    assert others[0].detectable == pytest.approx(holm_level / math.sqrt(20), rel=1e-4)
    assert "(80% power at the Holm level 0.0167)" in block(others[0])[2]


def test_holm_across_several_compared_versions() -> None:
    # Eight versions that are truly equal: alone, v3 looks better than v0 (p=0.018); across
    # the seven comparisons that decide the gate it is not.
    rng = random.Random(7)
    base = cases("v0", [round(rng.random(), 2) for _ in range(20)])
    comparisons = [
        compare(
            base,
            cases(f"v{v}", [round(rng.random(), 2) for _ in range(20)]),
            ("v0", f"v{v}"),
            primary="score",
        )
        for v in range(1, 8)
    ]
    assert [c.outcome for c in comparisons].count("better") == 1
    correct(comparisons)
    v3 = comparisons[2]
    assert [c.outcome for c in comparisons] == ["none"] * 7
    assert v3.score is not None
    assert v3.score.test.p == pytest.approx(0.0182, abs=5e-5)
    assert math.exp(v3.score.log_p_adjusted) == pytest.approx(0.127, abs=5e-4)
    assert v3.verdict.startswith("no significant difference, v3 vs v0: 1 regressions")
    assert "p=0.13 (Holm over 7 comparisons); pass@1" in v3.verdict
    low, high = v3.score.interval
    assert low < 0 < high  # shown at the level Holm decided it: it holds 0, as the verdict says


def test_one_denominator_rule_in_every_table() -> None:
    # 20 items: 12 ran (8 passed), 6 skipped for the budget, 2 errored; a difficulty that never
    # ran. Once 60% / "2/20 10%" / "0/15 0%" / 21.1%.
    results = (
        [item("v", f"p{i}", 0.9, category="x", difficulty="easy") for i in range(8)]
        + [item("v", f"f{i}", 0.3, category="x", difficulty="easy") for i in range(3)]
        + [item("v", "t0", None, category="x", difficulty="easy", error_type="template")]
        + [
            item("v", f"s{i}", None, category="x", difficulty="hard", error_type="budget")
            for i in range(6)
        ]
        + [item("v", f"e{i}", None, category="x", error_type="api_error") for i in range(2)]
    )
    s = summarize_version("v", results, (1,))
    assert (s.items, s.ran, s.passed, s.failed, s.errored, s.skipped) == (20, 12, 8, 4, 2, 6)
    assert s.pass_rate == pytest.approx(8 / 12)
    assert s.mean_score == pytest.approx((8 * 0.9 + 3 * 0.3 + 0) / 12)
    assert s.pass_at_k[1] == pytest.approx(8 / 12)
    assert s.groups["category"] == {"x": (8, 12)}
    assert s.groups["difficulty"] == {"easy": (8, 12)}  # "hard" never ran: no row
    assert table(versions_rows([s]))[1].split()[:8] == [
        "v",
        "20",
        "8",
        "4",
        "2",
        "6",
        "66.7%",
        "0.675",
    ]
    assert table(group_rows([s], "category"))[1].split() == ["x", "8/12", "66.7%"]
    notes = notes_block([s])
    assert "v: 2 errored, not scored (in no denominator)" in notes
    assert "v: skipped 6 (cost budget spent), in no denominator" in notes


def test_pass_at_k_says_which_cases_it_covers() -> None:
    # One case with 1 sample (failed), one with 5 (2 passed): pass@1 and pass@5 once covered
    # different cases silently.
    results = [item("v", "short", 0.1)] + [
        item("v", "long", 0.9 if s < 2 else 0.1, sample=s) for s in range(5)
    ]
    s = summarize_version("v", results, (1, 5))
    assert s.pass_at_k_cases == {1: (2, 2), 5: (1, 2)}
    assert s.case_pass_at_k["c.yaml::short"] == {1: 0.0, 5: None}
    assert table(versions_rows([s]))[1].split()[8:12] == ["20.0%", "100.0%", "(1/2", "cases)"]
    assert "v: pass@5: 1 cases with n < 5 samples, not covered" in notes_block([s])


def test_ties_between_samples_fail_and_the_rule_is_stated() -> None:
    a = [item("A", f"c{i}", 0.9, sample=s) for i in range(6) for s in range(4)]
    b = [item("B", f"c{i}", 0.9 if s < 2 else 0.1, sample=s) for i in range(6) for s in range(4)]
    c = compare(a, b, ("A", "B"))
    assert len(c.regressions) == 6  # 2 of 4 samples passing is a failed case
    assert c.change_lines(c.regressions)[0] == "c.yaml::c0 4/4 → 2/4"
    assert c.pass_rate_diff == -0.5  # the test sees the shares, not the tie rule
    assert any(
        line.startswith("  per case: each case counts the share of its samples")
        for line in block(c)
    )


def test_agreement_shows_kappa_and_the_table() -> None:
    # Automatic passes 18/20, the judge 20/20: once just "pass/fail agree 90%".
    a = agreement([0.9] * 18 + [0.5] * 2, [0.9] * 20, [0.7] * 20)
    assert a.pass_fail is not None and a.pass_fail.kappa == 0.0
    assert a.pass_fail.describe("automatic", "judge") == (
        "pass/fail agree 90%, Cohen's kappa 0.00 (both pass 18, automatic only 0, judge only 2, "
        "both fail 0)"
    )


def test_judge_spread_is_a_standard_deviation_with_its_repeats() -> None:
    results = [
        item("v", "c0", 0.8, judge_score=0.8, judge_repeats=[0.7, 0.8, 0.9]),
        item("v", "c1", 0.5, judge_score=0.5, judge_repeats=[0.5, 0.5, 0.5]),
    ]
    s = summarize_version("v", results, (1,))
    assert s.judge_spread == pytest.approx(0.05) and s.judge_repeats == 3
    assert "v: judge spread: mean standard deviation 0.050 over 3 repeats" in notes_block([s])


def test_mcnemar_at_1030_discordant_pairs() -> None:
    assert mcnemar_exact(515, 515) == 1.0
    assert 0 < mcnemar_exact(450, 580) < 1e-4


def test_per_solved_case_counts_calls_made_and_is_always_shown_for_code() -> None:
    ran = [
        item("v", f"c{i}", 1.0, scorer="execution", answer_calls=3, tests_passed=1, tests_total=1)
        for i in range(2)
    ]
    stopped = [
        item("v", f"s{i}", None, error_type="budget", outcome="skipped", scorer="execution")
        for i in range(8)
    ]
    s = summarize_version("v", ran + stopped, [1])
    assert (s.answer_calls, s.passed, s.skipped) == (6, 2, 8)  # skipped items made no call
    assert any("per solved case: 3.0 attempts" in line for line in notes_block([s]))


def exact_sign_flip_p(diffs: list[Fraction]) -> float:
    """Every sign pattern, in exact arithmetic: the reference the property is judged by."""
    observed = abs(sum(diffs, Fraction(0)))
    patterns = 1 << len(diffs)
    hits = sum(
        abs(sum((d if bits >> i & 1 else -d for i, d in enumerate(diffs)), Fraction(0))) >= observed
        for bits in range(patterns)
    )
    return hits / patterns


# per case: the scores of each version's samples, in twentieths (exact in fractions)
SAMPLES = st.lists(st.integers(0, 20), min_size=1, max_size=3)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(SAMPLES, SAMPLES), min_size=6, max_size=13),
    st.sampled_from(["pass_rate", "score"]),
    st.sampled_from([0.0, 0.02]),
)
@example([([20], [0])] * 8 + [([12], [20])] * 4, "pass_rate", 0.0)
def test_the_gate_never_passes_a_significantly_worse_version_nor_fails_the_better(
    pairs: list[tuple[list[int], list[int]]], primary: str, min_effect: float
) -> None:
    # "b" is the --prompt version, compared with "a" (the comparison is b against a)
    results = {
        version: [
            item(version, f"c{i:02}", k / 20, threshold=0.5, sample=s)
            for i, pair in enumerate(pairs)
            for s, k in enumerate(pair[side])
        ]
        for side, version in ((0, "a"), (1, "b"))
    }
    comparison = compare(results["b"], results["a"], ("b", "a"), (), min_effect, primary)
    failures = comparison_gates([comparison], "b", max_new_failures=10**9)

    def value(scores: list[int]) -> Fraction:
        if primary == "score":
            return Fraction(sum(scores), 20 * len(scores))
        return Fraction(sum(k >= 10 for k in scores), len(scores))

    diffs = [value(b) - value(a) for a, b in pairs]  # b minus a: negative is b worse
    p = exact_sign_flip_p(diffs)
    mean = sum(diffs) / len(diffs)
    if p < 0.05 and mean <= -min_effect and mean < 0:
        assert failures, (p, float(mean), comparison.verdict)
    if not (p < 0.05 and mean < 0):
        assert not failures, (p, float(mean), failures)


def test_different_sample_counts_do_not_bias_the_pass_rate_test() -> None:
    # 1 sample against 5, the same per-sample pass chance per case, 200 cases: by majority
    # vote once "better" in 26.3% of runs and "worse" in 28.3%.
    rng = random.Random(6)
    false = 0
    runs = 60
    for _ in range(runs):
        chances = [rng.random() for _ in range(200)]
        one = [
            item("A", f"c{i:03}", float(rng.random() < p), threshold=0.5)
            for i, p in enumerate(chances)
        ]
        five = [
            item("B", f"c{i:03}", float(rng.random() < p), threshold=0.5, sample=s)
            for i, p in enumerate(chances)
            for s in range(5)
        ]
        c = compare(one, five, ("A", "B"), (), 0.02)
        false += c.significant
    assert false <= 8  # 5% of 60 is 3; majority voting gave about 33
    assert any(line.startswith("  samples per case differ (A 1, B 5)") for line in block(c))


@pytest.mark.parametrize("n", [1025, 10_000])
def test_a_comparison_of_1025_cases_or_more_reports(n: int) -> None:
    # Its power figure overflowed (2.0 ** (n - 1)) in the notes, json, terminal and Markdown.
    rng = random.Random(n)
    base = [item("a", f"c{i}", rng.random()) for i in range(n)]
    other = [item("b", f"c{i}", rng.random()) for i in range(n)]
    c = compare(base, other, ("a", "b"))
    assert c.paired == n and c.detectable is not None and 0 < c.detectable < 0.2
    assert c.to_json()["detectable_difference"] == c.detectable
    assert any("smallest" in line for line in c.notes())
    assert block(c) and c.outcome in ("none", "better", "worse")


def sampled(prompt: str, answers: list[list[bool]], stop_early: bool) -> list[Any]:
    """Each case's samples in order (min_pass 4 of 5); with stop-early, only those drawn
    until the verdict was decided, as ``--prompteval-stop-early`` leaves them."""
    from pytest_prompteval.report.flaky import verdict_decided

    results = []
    for i, draws in enumerate(answers):
        passed = 0
        for s, ok in enumerate(draws):
            if stop_early and verdict_decided(passed, s, 5, 4):
                break
            results.append(
                item(prompt, f"c{i:02}", 0.9 if ok else 0.1, sample=s, samples=5, min_pass=4)
            )
            passed += ok
    return results


def test_stop_early_is_compared_on_verdicts_which_it_does_not_bias() -> None:
    # The same answers, 60 cases x 5 samples: the share of the samples stop-early drew read
    # "b worse, -5.1%, p=0.027" against the full run; the verdicts are the same.
    rng = random.Random(7)
    answers = [[rng.random() < 0.5 for _ in range(5)] for _ in range(60)]
    for stopped in ((False, True), (True, False), (True, True)):
        c = compare(
            sampled("a", answers, stopped[0]), sampled("b", answers, stopped[1]), ("a", "b")
        )
        assert c.pass_rate_diff == 0 and c.outcome == "none" and c.on_verdicts
        assert c.score is None and c.pass_at_k == {}
        assert "cases passing min_pass +0.0%" in c.verdict
        assert any("compared on each case's min_pass verdict" in line for line in c.notes())
    full = compare(sampled("a", answers, False), sampled("b", answers, False), ("a", "b"))
    assert not full.on_verdicts and full.score is not None


def test_the_pass_rate_power_is_exact_mcnemar() -> None:
    # 40 cases, 10 flips up and 10 down: "80% power" by the t formula was not 80% for the
    # exact McNemar test the verdict uses; now its exact power at the figure stated is.
    a = cases("A", [0.8] * 10 + [0.1] * 10 + [0.8] * 20)
    b = cases("B", [0.1] * 10 + [0.8] * 10 + [0.8] * 20)
    c = compare(a, b, ("A", "B"))
    assert c.detectable is not None
    assert exact_mcnemar_power(40, 0.5, c.detectable, 0.05) == pytest.approx(0.8, abs=1e-3)
    assert c.pass_rate is not None and c.pass_rate.mcnemar and c.changed_share == 0.5
    assert any("exact McNemar with 50.0% of them changing" in line for line in block(c))


def test_agent_and_repository_figures_leave_errored_items_out() -> None:
    # "4/6 resolved" where 3/5 ran: an errored item is in no denominator, here neither.
    from pytest_prompteval.core.result import RepoResult, Trajectory

    results = []
    for i, (resolved, error) in enumerate(
        [(True, "api")] + [(True, None)] * 3 + [(False, None)] * 2
    ):
        r = item("v", f"c{i}", 1.0 if resolved else 0.0, error_type=error)
        r = dataclasses.replace(
            r,
            outcome="error" if error else ("passed" if resolved else "failed"),
            repo=RepoResult(resolved, {}, [], [], 1.0, 1.0, ""),
            trajectory=Trajectory(max_steps=3, hit_max_steps=bool(error)),
        )
        results.append(r)
    s = summarize_version("v", results, (1,))
    assert (s.resolved, s.repo_items) == (3, 5)
    assert (s.agent_items, s.hit_max_steps) == (5, 0)


def test_the_comparison_and_the_summary_name_their_two_figures_apart() -> None:
    # With unequal samples the pooled pass rate (passing items over items) and the mean of
    # the per-case shares differ; both were called "pass rate".
    a = cases("A", [0.9] * 6) + [
        item("A", f"c{i:02}", 0.9, sample=s) for i in range(3) for s in (1, 2, 3)
    ]
    b = cases("B", [0.9] * 3 + [0.1] * 3) + [
        item("B", f"c{i:02}", 0.1, sample=s) for i in range(3) for s in (1, 2, 3)
    ]
    c = compare(a, b, ("A", "B"))
    pooled = [summarize_version(v, r, (1,)) for v, r in (("A", a), ("B", b))]
    assert pooled[1].pass_rate - pooled[0].pass_rate == pytest.approx(-0.8)  # type: ignore[operator]
    assert c.pass_rate_diff == pytest.approx(-0.875)
    assert "pass@1 -87.5%" in c.verdict and "pass rate" not in c.verdict + " ".join(c.notes())
