"""Statistics as pure functions: agreement between two scorers, spread of repeated judgements."""

from __future__ import annotations

import math
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
