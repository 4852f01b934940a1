"""The statistics against reference computations (scipy, numpy, hand calculation)."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as scipy_stats

from pytest_prompteval.core.stats import (
    attainable_level,
    bounded_mean_interval,
    format_p,
    holm,
    holm_log,
    mcnemar_detectable,
    mcnemar_exact,
    mcnemar_log_p,
    mcnemar_power_curve,
    minimum_detectable,
    pass_at_k,
    pass_fail_table,
    percentile,
    proportion_trend,
    sign_flip_test,
    spread,
    t_quantile,
    wilson_interval,
)

from .verdict_data import exact_mcnemar_power


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


@given(st.lists(st.floats(-1, 1), min_size=1, max_size=25), st.sampled_from([0.05, 0.025, 0.01]))
def test_the_interval_excludes_zero_exactly_when_p_is_under_its_level(
    diffs: list[float], alpha: float
) -> None:
    test = sign_flip_test(diffs)
    low, high = test.interval(alpha)
    assert -1 <= low <= high <= 1
    assert (low > 0 or high < 0) == (test.p < alpha)


def test_unchanged_cases_are_data_and_keep_the_interval_open() -> None:
    # 20 unchanged cases printed +0.0% [+0.0%, +0.0%]: shifting zeros gave them one sign.
    low, high = sign_flip_test([0.0] * 20).interval()
    assert (round(low, 3), round(high, 3)) == (-0.137, 0.137)
    # Bonett and Price's adjusted interval for paired proportions (one pseudo-pair each way).
    flips = [1.0] * 7 + [-1.0] * 2 + [0.0] * 11
    p12, p21, n = 8 / 22, 3 / 22, 22
    half = scipy_stats.t.ppf(0.975, n - 1) * math.sqrt((p12 + p21 - (p12 - p21) ** 2) / (n - 1))
    assert bounded_mean_interval(flips) == pytest.approx((p12 - p21 - half, p12 - p21 + half))
    # the example once printed +0.180 [+0.120, +0.240] beside p=0.062
    low, high = sign_flip_test([0.1, 0.2, 0.1, 0.3, 0.2]).interval()
    assert low < 0 < high


def test_t_quantile_matches_scipy() -> None:
    for df in (1, 2, 3, 7, 30, 60, 61, 1000, 100_001):
        for q in (0.8, 0.975, 0.99688, 0.9999):
            assert t_quantile(q, df) == pytest.approx(scipy_stats.t.ppf(q, df), rel=1e-6)


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


def test_the_trend_pairs_re_runs_by_case() -> None:
    # 30 cases always pass, 30 always fail, 6 go from passing to failing over three runs: as
    # independent draws of one pass rate (36, 33, 30 of 66) no trend (p=0.30); paired by
    # case, only the 6 that change say anything, and they all decline.
    cases = [[(1, 1)] * 3] * 30 + [[(0, 1)] * 3] * 30
    cases += [[(1, 1), (1, 1), (0, 1)]] * 3 + [[(1, 1), (0, 1), (0, 1)]] * 3
    trend = proportion_trend(cases)
    assert trend is not None and trend.slope == pytest.approx(-0.5)
    # each case's S = -1, hypergeometric variance 2/3: z = -6 / sqrt(4) = -3
    assert trend.z == pytest.approx(-3.0) and trend.p == pytest.approx(0.0027, abs=1e-4)
    # one case is the ordinary Cochran-Armitage test with the permutation variance
    passed, totals = [5, 9, 14, 18], [20, 20, 20, 20]
    one = proportion_trend([list(zip(passed, totals, strict=True))])
    assert one is not None
    x, n = np.arange(4), np.array(totals)
    p_bar = sum(passed) / 80
    t = np.sum(x * (np.array(passed) - n * p_bar))
    var = p_bar * (1 - p_bar) * (np.sum(n * x**2) - np.sum(n * x) ** 2 / 80) * 80 / 79
    assert one.p == pytest.approx(scipy_stats.chi2.sf(t * t / var, 1), rel=1e-9)
    assert proportion_trend([[(1, 1)] * 3] * 5) is None  # nothing varies


def test_wilson_interval_matches_its_formula() -> None:
    low, high = wilson_interval(14, 20)
    z = scipy_stats.norm.ppf(0.975)
    centre = (0.7 + z * z / 40) / (1 + z * z / 20)
    half = z * math.sqrt(0.7 * 0.3 / 20 + z * z / 1600) / (1 + z * z / 20)
    assert (low, high) == pytest.approx((centre - half, centre + half))
    assert wilson_interval(0, 10)[0] == pytest.approx(0, abs=1e-12)
    assert wilson_interval(10, 10)[1] == pytest.approx(1)


def test_minimum_detectable_difference_at_the_level_used() -> None:
    # (t_{1-a/2} + t_{0.8}) * sd / sqrt(n) with n - 1 degrees of freedom, a the level the exact
    # test attains under alpha (a multiple of 2 / 2**n); at least that where the level leaves
    # the test few patterns to reject (10 pairs at 0.025: 12 a side) and its power is simulated
    for n, alpha, attained in (
        (20, 0.05, 26214 / 2**19),
        (10, 0.025, 12 / 512),
        (50, 0.05 / 8, 0.05 / 8),
    ):
        assert attainable_level(alpha, n) == pytest.approx(attained, rel=1e-6)
        expected = (
            (scipy_stats.t.ppf(1 - attained / 2, n - 1) + scipy_stats.t.ppf(0.8, n - 1))
            * 0.2
            / math.sqrt(n)
        )
        stated = minimum_detectable(0.2, n, alpha=alpha)
        assert stated is not None
        if n == 10:
            assert stated >= expected * (1 - 2e-4)
        else:
            assert stated == pytest.approx(expected, rel=2e-4)
    assert minimum_detectable(0.2, 2) is None
    # 7 pairs cannot reach 0.05 / 7: the smallest p is 2 / 2**7 = 0.0156
    assert minimum_detectable(0.2, 7, alpha=0.05 / 7) is None


@pytest.mark.parametrize(
    ("n", "discordant", "alpha"), [(20, 0.5, 0.05), (50, 0.3, 0.05), (40, 0.6, 0.0125)]
)
def test_the_stated_mcnemar_power_is_exact(n: int, discordant: float, alpha: float) -> None:
    # The default endpoint (pass rate, one sample) is McNemar's exact test, discrete in the
    # discordant pairs: "80% power" by the t formula was 68% at 20 cases and 74% at 50.
    effect = mcnemar_detectable(n, discordant, alpha=alpha)
    assert effect is not None
    assert exact_mcnemar_power(n, discordant, effect, alpha) == pytest.approx(0.8, abs=1e-3)
    assert mcnemar_power_curve(n, discordant, alpha)(effect) == pytest.approx(
        exact_mcnemar_power(n, discordant, effect, alpha), abs=1e-9
    )
    # beyond the exact sum, the normal approximation keeps at least the power it states
    assert 0.8 <= mcnemar_power_curve(1025, 0.3)(mcnemar_detectable(1025, 0.3) or 1) <= 0.81
    # 20 cases of which 30% change: even all in one direction is found under 80% of runs
    assert mcnemar_detectable(20, 0.3) is None


def test_mcnemar_keeps_its_log_where_the_p_value_underflows() -> None:
    # 1,200 cases, 1,100 newly failing: p = 2 / 2**1100 underflows to 0.0, its log does not
    assert mcnemar_exact(1100, 0) == 0.0
    assert mcnemar_log_p(1100, 0) == pytest.approx(math.log(2) - 1100 * math.log(2))
    assert format_p(mcnemar_log_p(1100, 0)) == "1.5e-331"
    # from about 1,075 one-sided pairs the float underflows; below, log and float agree
    assert mcnemar_exact(1074, 0) > 0 and mcnemar_exact(1076, 0) == 0.0
    for flips in ((3, 0), (400, 630), (50, 10)):
        expected = scipy_stats.binomtest(flips[0], sum(flips), 0.5).pvalue
        assert math.exp(mcnemar_log_p(*flips)) == pytest.approx(expected, rel=1e-9)


@given(st.lists(st.floats(1e-300, 1), min_size=1, max_size=12))
def test_holm_in_log_space_matches_holm(p_values: list[float]) -> None:
    logs = holm_log([math.log(p) for p in p_values])
    assert [math.exp(x) for x in logs] == pytest.approx(holm(p_values), rel=1e-9)


def test_holm_in_log_space_orders_p_values_a_float_cannot_hold() -> None:
    logs = holm_log([-800.0, -900.0, math.log(0.04)])
    assert logs == pytest.approx([-800.0 + math.log(2), -900.0 + math.log(3), math.log(0.04)])


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        # multiples of 1/1024 and 1/8 add up exactly in floats, so ties are ties for scipy too
        st.one_of(
            st.just(0.0),
            st.integers(-1024, 1024).map(lambda k: k / 1024),
            st.integers(-8, 8).map(lambda k: k / 8),
        ),
        min_size=2,
        max_size=13,
    )
)
def test_sign_flip_p_equals_the_full_enumeration(diffs: list[float]) -> None:
    test = sign_flip_test(diffs)
    # every one of the 2**n sign patterns, zeros included (scipy enumerates them all)
    reference = scipy_stats.permutation_test(
        (np.array(diffs),),
        np.sum,
        permutation_type="samples",
        n_resamples=math.inf,
    ).pvalue
    assert test.method == "exact"
    assert test.p == pytest.approx(min(1.0, reference), rel=1e-9, abs=1e-12)


def test_sign_flip_is_exact_on_tied_differences_at_any_size() -> None:
    # 19 of 20 cases drop by 0.3, one is unchanged: once p = 0.73 from the bootstrap
    test = sign_flip_test([-0.3] * 19 + [0.0])
    assert test.p == pytest.approx(2 / 2**19) and test.method == "exact"
    assert test.interval()[1] < 0  # the interval agrees: once [-0.303, +1.000]
    nine_of_ten = sign_flip_test([-0.3] * 9 + [0.0])
    assert nine_of_ten.p == pytest.approx(2 / 2**9)  # once 0.72
    # pass shares k/5 are counted exactly by convolution, whatever the number of cases
    shares = [0.2, -0.4, 0.0, 0.6, 0.2, 0.0, 0.4] * 30
    lattice = sign_flip_test(shares)
    assert lattice.method == "exact" and 0 < lattice.p < 1e-4


def test_ties_neither_inflate_nor_deflate_the_level() -> None:
    # 3 regressions, 7 unchanged: once "worse" at p = 0.041; the exact test gives McNemar's
    assert sign_flip_test([-0.2, -0.5, -0.3] + [0.0] * 7).p == pytest.approx(0.25)
    # The exact false-verdict rate under "no difference" (every sign pattern equally likely),
    # counted over all patterns: once 10.4% at 10 cases and 6.9% at 12 with most ties.
    rng = random.Random(3)
    for n, changed in ((10, 3), (12, 4), (10, 10), (200, 8)):
        sizes = [round(rng.uniform(0.05, 0.6), 3) for _ in range(changed)]
        rejected = sum(
            sign_flip_test([s * (1 if bits >> i & 1 else -1) for i, s in enumerate(sizes)]
                           + [0.0] * (n - changed)).p < 0.05
            for bits in range(2**changed)
        )  # fmt: skip
        assert rejected / 2**changed <= 0.05, (n, changed)


def test_monte_carlo_beyond_the_exhaustive_size_states_its_error() -> None:
    rng = random.Random(5)
    for mean, draws in ((0.02, range(50, 4999)), (0.15, range(4999, 5000))):
        diffs = [rng.gauss(mean, 0.3) for _ in range(60)]
        test = sign_flip_test(diffs)
        # far from any level: it stops after 50 patterns as extreme; near one, all 4,999
        assert test.method == "Monte Carlo" and test.patterns in draws
        reference = scipy_stats.permutation_test(
            (np.array(diffs),), np.mean, permutation_type="samples", n_resamples=99999,
            random_state=1,
        ).pvalue  # fmt: skip
        assert abs(test.p - reference) < 4 * test.monte_carlo_error + 0.001
        assert test.describe().startswith(f"sign-flip test, Monte Carlo over {test.patterns}")
        assert sign_flip_test(diffs).p == test.p  # seeded: the same run gives the same verdict


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.one_of(st.just(0.0), st.floats(-1, 1)), min_size=2, max_size=30),
    st.sampled_from([0.05, 0.025, 0.00625]),
)
def test_the_inverted_interval_excludes_zero_exactly_when_p_is_under_its_level(
    diffs: list[float], alpha: float
) -> None:
    test = sign_flip_test(diffs)
    low, high = test.interval(alpha)
    assert low <= test.mean <= high
    assert (low > 0 or high < 0) == (test.p < alpha)


def test_non_finite_differences_are_refused() -> None:
    with pytest.raises(ValueError, match="finite"):
        sign_flip_test([0.1, math.nan])


def test_the_stated_power_holds_at_the_holm_level() -> None:
    # Once (1.96 + 0.84) sd / sqrt(n) at 5% while the verdict was taken at the Holm level:
    # 62-65% power, not 80%. Now: at the level Holm tests a lone difference of two at.
    rng = random.Random(8)
    n, level = 20, 0.025
    effect = minimum_detectable(1.0, n, alpha=level)
    assert effect is not None
    runs = 300
    found = sum(
        sign_flip_test([rng.gauss(effect, 1.0) for _ in range(n)], bounds=(-9, 9)).p < level
        for _ in range(runs)
    )
    assert 0.72 <= found / runs <= 0.88  # 80% within about 3 standard errors


def test_the_stated_power_holds_where_the_exact_test_can_barely_reject() -> None:
    # 10 pairs at 0.00625 (0.05 over 8 comparisons): the sign-flip test rejects only the 3 most
    # extreme of 512 sign patterns a side, and the t formula's difference was found in 72%.
    rng = random.Random(3)
    n, level = 10, 0.00625
    effect = minimum_detectable(1.0, n, alpha=level)
    assert effect is not None
    runs = 1000
    found = sum(
        sign_flip_test([rng.gauss(effect, 1.0) for _ in range(n)], bounds=(-9, 9)).p < level
        for _ in range(runs)
    )
    assert found / runs >= 0.76  # 80% less 3 standard errors


SIZES = (1, 2, 1024, 1025, 10_000, 100_000)


@pytest.mark.parametrize("n", SIZES)
def test_every_statistic_holds_at_any_number_of_cases(n: int) -> None:
    # 2.0 ** (n - 1) overflowed from 1,025 paired cases and took every report down with it.
    rng = random.Random(n)
    assert 0 <= attainable_level(0.05, n) <= 0.05
    detectable = minimum_detectable(0.2, n)
    if n < 3:
        assert detectable is None
    else:
        assert detectable is not None and 0 < detectable < 1
    for diffs in (
        [rng.choice((-1.0, 0.0, 0.0, 1.0)) for _ in range(n)],  # pass/fail flips
        [rng.randint(-5, 5) / 5 for _ in range(n)],  # pass shares of 5 samples
        [rng.gauss(0, 0.2) for _ in range(n)],  # scores (p far from 0: few draws)
    ):
        test = sign_flip_test(diffs)
        low, high = test.interval()
        assert -1 <= low <= high <= 1 and math.isfinite(test.log_p)
        assert (low <= 0 <= high) == (test.p >= 0.05)
    assert math.isfinite(mcnemar_log_p(n, 0)) and mcnemar_log_p(n, n) == 0.0
    assert len(holm_log([-float(i) for i in range(n)])) == n
    assert pass_at_k(n, n // 2, 1) == pytest.approx((n // 2) / n)
    assert 0 <= wilson_interval(n // 2, n)[0] <= 0.5 <= wilson_interval(n // 2, n)[1]
