"""Statistics as pure functions: agreement between two scorers, spread of repeated judgements."""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Sequence
from dataclasses import dataclass


def ranks(values: Sequence[float]) -> list[float]:
    """1-based ranks, ties sharing the mean of the ranks they span."""
    order = sorted(range(len(values)), key=values.__getitem__)
    result = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            result[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return result


def pearson(x: Sequence[float], y: Sequence[float]) -> float | None:
    if len(x) != len(y) or len(x) < 2:
        return None
    mx, my = statistics.fmean(x), statistics.fmean(y)
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y, strict=True))
    sxx = sum((a - mx) ** 2 for a in x)
    syy = sum((b - my) ** 2 for b in y)
    if sxx == 0 or syy == 0:
        return None  # a constant series has no correlation
    return max(-1.0, min(1.0, sxy / math.sqrt(sxx * syy)))


def spearman(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Spearman's rank correlation (Pearson on tie-averaged ranks); None when undefined."""
    if len(x) != len(y) or len(x) < 2:
        return None
    return pearson(ranks(x), ranks(y))


@dataclass(frozen=True)
class Agreement:
    n: int
    spearman: float | None
    mean_abs_diff: float | None
    pass_agreement: float | None


def agreement(
    automatic: Sequence[float], judge: Sequence[float], thresholds: Sequence[float]
) -> Agreement:
    """How far the automatic scores can be trusted, measured on the judged items: rank
    correlation, mean absolute difference, and how often both give the same pass/fail
    against each item's threshold."""
    n = len(automatic)
    if n == 0:
        return Agreement(0, None, None, None)
    triples = list(zip(automatic, judge, thresholds, strict=True))
    return Agreement(
        n=n,
        spearman=spearman(automatic, judge),
        mean_abs_diff=statistics.fmean(abs(a - j) for a, j, _ in triples),
        pass_agreement=sum((a >= t) == (j >= t) for a, j, t in triples) / n,
    )


def spread(values: Sequence[float]) -> float:
    """Range of repeated measurements of one thing: 0 for a single one."""
    return max(values) - min(values) if values else 0.0


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k, 1 - C(n-c, k) / C(n, k), as a product that neither overflows nor
    loses precision: 1 - prod_{i=n-c+1}^{n} (1 - k / i)."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n (n={n}, c={c}, k={k})")
    if n - c < k:
        return 1.0
    product = 1.0
    for i in range(n - c + 1, n + 1):
        product *= 1.0 - k / i
    return 1.0 - product


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (numpy's default), q in [0, 100]."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("percentile of no values")
    position = (len(ordered) - 1) * q / 100
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def bootstrap_mean_ci(
    differences: Sequence[float],
    *,
    resamples: int = 10_000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of paired differences (cases resampled)."""
    n = len(differences)
    if n == 0:
        raise ValueError("bootstrap of no values")
    rng = random.Random(seed)
    means = [sum(differences[rng.randrange(n)] for _ in range(n)) / n for _ in range(resamples)]
    tail = (1 - confidence) / 2 * 100
    return percentile(means, tail), percentile(means, 100 - tail)


def binomial_cdf(k: int, n: int, p: float = 0.5) -> float:
    return sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k + 1))


def mcnemar_exact(only_first: int, only_second: int) -> float:
    """Two-sided exact McNemar p-value from the discordant pairs: items that pass under one
    version only. 1.0 when there are none."""
    discordant = only_first + only_second
    if discordant == 0:
        return 1.0
    return min(1.0, 2 * binomial_cdf(min(only_first, only_second), discordant))


def paired_permutation_p(
    differences: Sequence[float], *, resamples: int = 10_000, seed: int = 0
) -> float:
    """Two-sided p-value of a mean paired difference by random sign flips (exact when there
    are few enough pairs to enumerate)."""
    n = len(differences)
    if n == 0:
        return 1.0
    observed = abs(sum(differences))
    tolerance = 1e-12 * max(1.0, observed)
    if n <= 16:
        hits = total = 0
        for mask in range(2**n):
            flipped = sum(-d if mask >> i & 1 else d for i, d in enumerate(differences))
            hits += abs(flipped) >= observed - tolerance
            total += 1
        return hits / total
    rng = random.Random(seed)
    hits = sum(
        abs(sum(d if rng.random() < 0.5 else -d for d in differences)) >= observed - tolerance
        for _ in range(resamples)
    )
    return (hits + 1) / (resamples + 1)
