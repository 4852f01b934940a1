"""The statistics against reference computations (scipy, numpy, hand calculation)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats as scipy_stats

from pytest_prompteval.core.stats import (
    bootstrap_mean_ci,
    mcnemar_exact,
    paired_permutation_p,
    pass_at_k,
    percentile,
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


def test_permutation_p_by_hand() -> None:
    # Sign flips of [1, 2, 3]: sums 6, 4, 2, 0, 0, -2, -4, -6; |sum| >= 6 in 2 of 8.
    assert paired_permutation_p([1.0, 2.0, 3.0]) == 0.25
    assert paired_permutation_p([0.0, 0.0]) == 1.0
    # Many pairs: the sampled test agrees with scipy's exact-enough permutation test.
    rng = np.random.default_rng(1)
    diffs = list(rng.normal(0.3, 1.0, size=30))
    ours = paired_permutation_p(diffs, resamples=20_000)
    reference = scipy_stats.permutation_test(
        (np.array(diffs),),
        np.mean,
        permutation_type="samples",
        n_resamples=20_000,
        random_state=2,
    ).pvalue
    assert ours == pytest.approx(reference, abs=0.02)


def test_bootstrap_interval_matches_scipy_percentile_bootstrap() -> None:
    assert bootstrap_mean_ci([0.2] * 7) == (pytest.approx(0.2), pytest.approx(0.2))
    diffs = [0.12, -0.05, 0.3, 0.08, 0.0, 0.21, -0.1, 0.15, 0.05, 0.09, 0.18, -0.02]
    low, high = bootstrap_mean_ci(diffs, resamples=20_000)
    reference = scipy_stats.bootstrap(
        (np.array(diffs),), np.mean, n_resamples=20_000, method="percentile", random_state=3
    ).confidence_interval
    assert low == pytest.approx(reference.low, abs=0.01)
    assert high == pytest.approx(reference.high, abs=0.01)
    assert low < float(np.mean(diffs)) < high
