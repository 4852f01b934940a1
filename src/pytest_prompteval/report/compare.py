"""Paired comparison of two sets of results on the cases they share.

Per case: the score is the mean over its samples, and the case passes when most of its
samples pass. Cases with an error under either version are left out (and counted), since
an API fault says nothing about the prompt.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_prompteval.core.stats import (
    bootstrap_mean_ci,
    mcnemar_exact,
    paired_permutation_p,
    pass_at_k,
)
from pytest_prompteval.report.summary import Result, case_key, per_case_counts

ALPHA = 0.05


@dataclass(frozen=True)
class CaseView:
    score: float
    passed: bool


@dataclass
class Comparison:
    baseline: str
    other: str
    paired: int = 0
    excluded: int = 0
    mean_diff: float | None = None
    ci: tuple[float, float] | None = None
    p_value: float | None = None
    mcnemar_p: float | None = None
    regressions: list[str] = field(default_factory=list)
    improvements: list[str] = field(default_factory=list)
    pass_at_k: dict[int, tuple[float, tuple[float, float]]] = field(default_factory=dict)

    @property
    def significant(self) -> bool:
        return (
            self.p_value is not None
            and self.ci is not None
            and self.p_value < ALPHA
            and (self.ci[0] > 0 or self.ci[1] < 0)
        )

    @property
    def verdict(self) -> str:
        if not self.paired or self.mean_diff is None or self.ci is None:
            return f"{self.other} vs {self.baseline}: no cases in common"
        figures = (
            f"{self.mean_diff:+.3f} [{self.ci[0]:+.3f}, {self.ci[1]:+.3f}], p={self.p_value:.2g}"
        )
        if not self.significant:
            return f"no significant difference, {self.other} vs {self.baseline}: {figures}"
        word = "better" if self.mean_diff > 0 else "worse"
        return f"{self.other} {word} than {self.baseline}: {figures}"

    def to_json(self) -> dict[str, Any]:
        return {
            "baseline": self.baseline,
            "other": self.other,
            "paired": self.paired,
            "excluded": self.excluded,
            "mean_diff": self.mean_diff,
            "ci95": self.ci,
            "p_value": self.p_value,
            "mcnemar_p": self.mcnemar_p,
            "regressions": self.regressions,
            "improvements": self.improvements,
            "pass_at_k": {
                f"pass@{k}": {"diff": d, "ci95": ci} for k, (d, ci) in self.pass_at_k.items()
            },
            "significant": self.significant,
            "verdict": self.verdict,
        }


def _cases(results: Iterable[Result]) -> tuple[dict[tuple[str, str], CaseView], set[Any]]:
    grouped: dict[tuple[str, str], list[Result]] = {}
    for r in results:
        grouped.setdefault(case_key(r), []).append(r)
    views, errored = {}, set()
    for key, items in grouped.items():
        if any(r["error_type"] or r["score"] is None for r in items):
            errored.add(key)
            continue
        passed = sum(bool(r["passed"]) for r in items)
        views[key] = CaseView(statistics.fmean(r["score"] for r in items), passed * 2 > len(items))
    return views, errored


def _resamples(n: int) -> int:
    # Bound the pure-Python bootstrap's work for very large suites.
    return max(1000, min(10_000, 2_000_000 // max(n, 1)))


def compare(
    baseline: Sequence[Result],
    other: Sequence[Result],
    names: tuple[str, str],
    ks: Sequence[int] = (1,),
) -> Comparison:
    base_views, base_err = _cases(baseline)
    other_views, other_err = _cases(other)
    shared = sorted(set(base_views) & set(other_views))
    result = Comparison(baseline=names[0], other=names[1], paired=len(shared))
    result.excluded = len((set(base_views) | base_err) & (set(other_views) | other_err)) - len(
        shared
    )
    if not shared:
        return result
    diffs = [other_views[k].score - base_views[k].score for k in shared]
    result.mean_diff = statistics.fmean(diffs)
    result.ci = bootstrap_mean_ci(diffs, resamples=_resamples(len(diffs)))
    result.p_value = paired_permutation_p(diffs)
    result.regressions = [
        f"{f}::{c}" for f, c in shared if base_views[f, c].passed and not other_views[f, c].passed
    ]
    result.improvements = [
        f"{f}::{c}" for f, c in shared if other_views[f, c].passed and not base_views[f, c].passed
    ]
    result.mcnemar_p = mcnemar_exact(len(result.regressions), len(result.improvements))
    base_counts, other_counts = per_case_counts(baseline), per_case_counts(other)
    for k in ks:
        usable = [key for key in shared if base_counts[key][0] >= k and other_counts[key][0] >= k]
        if not usable:
            continue
        kdiffs = [
            pass_at_k(*other_counts[key], k) - pass_at_k(*base_counts[key], k) for key in usable
        ]
        result.pass_at_k[k] = (
            statistics.fmean(kdiffs),
            bootstrap_mean_ci(kdiffs, resamples=_resamples(len(kdiffs))),
        )
    return result
