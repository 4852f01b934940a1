"""The statistics against reference computations (scipy, numpy, hand calculation)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from scipy import stats as scipy_stats

from pytest_prompteval.core.stats import (
    holm,
    mcnemar_exact,
    minimum_detectable,
    pass_at_k,
    pass_fail_table,
    percentile,
    proportion_trend,
    spread,
    studentized_bootstrap,
    wilson_interval,
)


@given(
    st.integers(1, 60).flatmap(
        lambda n: st.tuples(st.just(n), st.integers(0, n), st.integers(1, n))
    )
)
def test_pass_at_k_equals_the_binomial_formula(nck: tuple[int, int, int]) -> None:
    n, c, k = nck
    expected = 1.0 if n - c < k else 1 - math.comb(n - c, k) / math.comb(n, k)
    assert pass_at_k(n, c, k) == pytest.approx(expected, abs=1e-12)


def test_pass_at_k_is_stable_where_float_binomials_overflow() -> None:
    value = pass_at_k(2000, 3, 1000)
    exact = 1 - math.comb(1997, 1000) / math.comb(2000, 1000)  # exact integers, then divide
    assert value == pytest.approx(exact, abs=1e-12)
    assert pass_at_k(10, 0, 5) == 0.0 and pass_at_k(10, 10, 1) == 1.0
    with pytest.raises(ValueError):
        pass_at_k(3, 1, 4)


@given(st.integers(0, 40), st.integers(0, 40))
def test_mcnemar_exact_matches_scipy_binomtest(only_first: int, only_second: int) -> None:
    n = only_first + only_second
    expected = 1.0 if n == 0 else scipy_stats.binomtest(only_first, n, 0.5).pvalue
    assert mcnemar_exact(only_first, only_second) == pytest.approx(expected, rel=1e-9)


@given(st.lists(st.floats(-100, 100), min_size=1, max_size=40), st.floats(0, 100))
def test_percentile_matches_numpy(values: list[float], q: float) -> None:
    assert percentile(values, q) == pytest.approx(float(np.percentile(values, q)), abs=1e-9)


def test_mcnemar_works_in_log_space_at_any_size() -> None:
    assert mcnemar_exact(515, 515) == 1.0
    assert mcnemar_exact(400, 630) == pytest.approx(
        scipy_stats.binomtest(400, 1030, 0.5).pvalue, rel=1e-9
    )
    assert mcnemar_exact(5, 0) == 0.0625  # 5 regressions, no improvement: 2 / 2**5


@given(st.lists(st.floats(0, 1), min_size=1, max_size=12))
def test_holm_matches_its_step_down_definition(p_values: list[float]) -> None:
    adjusted = holm(p_values)
    m = len(p_values)
    order = sorted(range(m), key=p_values.__getitem__)
    # The step-down maximum, computed directly from its definition.
    for rank, i in enumerate(order):
        expected = max(min(1.0, (m - r) * p_values[order[r]]) for r in range(rank + 1))
        assert adjusted[i] == pytest.approx(expected)
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])


@given(st.lists(st.floats(-1, 1), min_size=2, max_size=25), st.sampled_from([0.05, 0.025, 0.01]))
# bootstrap t's that tie the observed one but for rounding
@example([0.0, 0.0, 0.478515625, 0.0, 0.0, 0.478515625], 0.05)
def test_the_interval_excludes_zero_exactly_when_p_is_under_its_level(
    diffs: list[float], alpha: float
) -> None:
    test = studentized_bootstrap(diffs, resamples=399)
    low, high = test.interval(alpha)
    assert (low > 0 or high < 0) == (test.p < alpha)


def test_interval_of_the_issue_example_agrees_with_its_p_value() -> None:
    # [.1,.2,.1,.3,.2] once printed +0.180 [+0.120, +0.240] beside p=0.062.
    test = studentized_bootstrap([0.1, 0.2, 0.1, 0.3, 0.2])
    low, high = test.interval()
    assert test.mean == pytest.approx(0.18)
    assert (round(low, 3), round(high, 3), round(test.p, 4)) == (0.058, 0.292, 0.0375)
    # No spread: the exact sign-flip inversion (a point when p < alpha, else unbounded).
    flat = studentized_bootstrap([0.0] * 10)
    assert (flat.p, flat.interval()) == (1.0, (0.0, 0.0))
    assert studentized_bootstrap([0.0] * 5).interval() == (-math.inf, math.inf)
    same = studentized_bootstrap([0.15] * 12)
    assert same.p == pytest.approx(2 / 2**12) and same.interval() == (0.15, 0.15)
    assert studentized_bootstrap([0.15] * 5).interval() == (-math.inf, math.inf)


def test_bootstrap_t_matches_scipy_studentized_bootstrap() -> None:
    rng = np.random.default_rng(4)
    diffs = list(rng.normal(0.1, 0.2, size=30))
    low, high = studentized_bootstrap(diffs).interval()
    reference = scipy_stats.bootstrap(
        (np.array(diffs),), np.mean, n_resamples=9999, method="BCa", random_state=3
    ).confidence_interval
    # Different methods, same data: they agree to well under the interval's width.
    assert low == pytest.approx(reference.low, abs=0.02)
    assert high == pytest.approx(reference.high, abs=0.02)


def test_kappa_beside_percent_agreement() -> None:
    # Automatic passes 18/20, the judge 20/20: 90% agreement, kappa 0.
    table = pass_fail_table([True] * 18 + [False] * 2, [True] * 20)
    assert (table.both_pass, table.first_only, table.second_only, table.both_fail) == (
        18,
        0,
        2,
        0,
    )
    assert table.percent_agreement == 0.9 and table.kappa == 0.0
    assert table.describe("automatic", "judge") == (
        "pass/fail agree 90%, Cohen's kappa 0.00 (both pass 18, automatic only 0, "
        "judge only 2, both fail 0)"
    )
    first = [True, True, False, False, True, False, True, True]
    second = [True, False, False, True, True, False, True, False]
    # By hand: observed 5/8, chance 5/8 * 4/8 + 3/8 * 4/8 = 1/2, kappa (5/8 - 1/2) / (1/2).
    assert pass_fail_table(first, second).kappa == pytest.approx(0.25)


def test_spread_is_a_standard_deviation_not_a_range() -> None:
    assert spread([0.5]) == 0.0
    assert spread([0.2, 0.4, 0.6]) == pytest.approx(float(np.std([0.2, 0.4, 0.6], ddof=1)))


def test_trend_matches_cochran_armitage() -> None:
    # 14/20 then 13/20 is no trend: p far from significant.
    trend = proportion_trend([14, 13], [20, 20])
    assert trend is not None and trend.p > 0.5 and trend.slope == pytest.approx(-0.05)
    # Against the chi-square form of the Cochran-Armitage test (scipy's chi2 for the p-value).
    passed, totals = [5, 9, 14, 18], [20, 20, 20, 20]
    trend = proportion_trend(passed, totals)
    assert trend is not None
    x = np.arange(4)
    p_bar = sum(passed) / sum(totals)
    t = np.sum(x * (np.array(passed) - np.array(totals) * p_bar))
    var = (
        p_bar
        * (1 - p_bar)
        * (np.sum(np.array(totals) * x**2) - np.sum(np.array(totals) * x) ** 2 / 80)
    )
    assert trend.p == pytest.approx(scipy_stats.chi2.sf(t * t / var, 1), rel=1e-9)


def test_wilson_interval_matches_its_formula() -> None:
    low, high = wilson_interval(14, 20)
    z = scipy_stats.norm.ppf(0.975)
    centre = (0.7 + z * z / 40) / (1 + z * z / 20)
    half = z * math.sqrt(0.7 * 0.3 / 20 + z * z / 1600) / (1 + z * z / 20)
    assert (low, high) == (pytest.approx(centre - half), pytest.approx(centre + half))
    assert wilson_interval(0, 10)[0] == pytest.approx(0, abs=1e-12)
    assert wilson_interval(10, 10)[1] == pytest.approx(1)


def test_minimum_detectable_difference() -> None:
    # (1.96 + 0.84) * sd / sqrt(n)
    assert minimum_detectable(0.2, 20) == pytest.approx(
        (scipy_stats.norm.ppf(0.975) + scipy_stats.norm.ppf(0.8)) * 0.2 / math.sqrt(20)
    )
    assert minimum_detectable(0.2, 1) is None
