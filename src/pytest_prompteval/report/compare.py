"""Paired comparison of two sets of results on the cases they share.

Per case and version: the score is the mean over its scored samples (a failure the prompt
caused scores 0), and the case passes when more than half of those samples pass, so a 2/4
tie fails. A sample with an infrastructure error is left out on its own: its siblings still
count. A case is paired when both versions scored at least one of its samples; the others
are listed (run by one version only, or errored under one).

Two signals are tested on the paired cases: the mean score difference (studentized
bootstrap) and the pass/fail change (exact McNemar). Their p-values are Holm-corrected
across every comparison of the run, and the verdict weighs both (see ``verdict``).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_prompteval.core.stats import (
    ALPHA,
    MIN_PAIRS,
    MeanTest,
    holm,
    mcnemar_exact,
    minimum_detectable,
    pass_at_k,
    resamples_for,
    studentized_bootstrap,
)
from pytest_prompteval.report.summary import (
    Result,
    case_key,
    case_passes,
    outcome_of,
    per_case_counts,
    scored_value,
)

#: scores and pass@k lie in [0, 1], so their paired differences in [-1, 1]
DIFFERENCE_RANGE = (-1.0, 1.0)
TIE_RULE = "a case passes when more than half of its samples pass (a 2/4 tie fails)"


@dataclass(frozen=True)
class CaseView:
    score: float
    passed: bool


@dataclass
class Comparison:
    baseline: str
    other: str
    paired: int = 0
    min_effect: float = 0.0
    score: MeanTest | None = None
    mcnemar_p: float | None = None
    #: Holm-adjusted p-values and the confidence level the score interval is shown at, set by
    #: ``correct``; one comparison alone is a family of its two tests.
    score_p_adjusted: float | None = None
    pass_p_adjusted: float | None = None
    interval_alpha: float = ALPHA
    family: int = 2
    regressions: list[str] = field(default_factory=list)
    improvements: list[str] = field(default_factory=list)
    #: items not scored (infrastructure errors) per version: (baseline, other)
    errored: tuple[int, int] = (0, 0)
    #: cases run by both whose samples all errored under one version
    excluded: list[str] = field(default_factory=list)
    only_baseline: list[str] = field(default_factory=list)
    only_other: list[str] = field(default_factory=list)
    #: pass@k difference per k over the cases with at least k samples in both, and how many
    pass_at_k: dict[int, tuple[MeanTest, int]] = field(default_factory=dict)

    @property
    def mean_diff(self) -> float | None:
        return None if self.score is None else self.score.mean

    @property
    def ci(self) -> tuple[float, float] | None:
        return None if self.score is None else self.score.interval(self.interval_alpha)

    @property
    def p_value(self) -> float | None:
        return None if self.score is None else self.score.p

    @property
    def pass_rate_diff(self) -> float:
        return (len(self.improvements) - len(self.regressions)) / self.paired if self.paired else 0

    @property
    def detectable(self) -> float | None:
        """The smallest mean score difference these paired cases find with 80% power (None
        with too few of them, or when every difference is the same)."""
        if self.score is None or self.paired < MIN_PAIRS or self.score.sd == 0:
            return None
        return minimum_detectable(self.score.sd, self.paired)

    def _direction(self, value: float, adjusted_p: float | None) -> int:
        """+1 / -1 for a significant difference of at least the minimum effect, else 0."""
        if adjusted_p is None or adjusted_p >= ALPHA or abs(value) < max(self.min_effect, 1e-12):
            return 0
        return 1 if value > 0 else -1

    @property
    def score_direction(self) -> int:
        return self._direction(self.mean_diff or 0.0, self.score_p_adjusted)

    @property
    def pass_direction(self) -> int:
        return self._direction(self.pass_rate_diff, self.pass_p_adjusted)

    @property
    def significant(self) -> bool:
        return self.outcome in ("better", "worse")

    @property
    def outcome(self) -> str:
        """better | worse | mixed (the signals point opposite ways) | none | impossible."""
        if self.score is None or self.paired < MIN_PAIRS:
            return "impossible"
        seen_score = _sign(self.score.mean, self.min_effect)
        seen_pass = _sign(self.pass_rate_diff, 0.0)
        if seen_score and seen_pass and seen_score != seen_pass:
            return "mixed"
        direction = self.score_direction or self.pass_direction
        if direction == 0:
            return "none"
        return "better" if direction > 0 else "worse"

    def figures(self) -> str:
        assert self.score is not None and self.ci is not None
        level = f"{1 - self.interval_alpha:.1%}".replace(".0%", "%")
        return (
            f"mean score {self.score.mean:+.3f} {interval_text(*self.ci)} ({level}), "
            f"p={self.score_p_adjusted:.2g}; pass rate {self.pass_rate_diff:+.1%}, "
            f"McNemar p={self.pass_p_adjusted:.2g}"
            + (f" (Holm over {self.family} tests)" if self.family > 1 else "")
        )

    @property
    def verdict(self) -> str:
        pair = f"{self.other} vs {self.baseline}"
        if self.score is None:
            return f"{pair}: no cases in common"
        figures = self.figures()
        outcome = self.outcome
        if outcome == "impossible":
            return (
                f"no verdict possible, {pair}: {self.paired} paired cases, and exact paired "
                f"tests need at least {MIN_PAIRS} to reach p < 0.05; {figures}"
            )
        changes = f"{len(self.regressions)} regressions, {len(self.improvements)} improvements"
        if outcome == "mixed":
            score_word = "up" if self.score.mean > 0 else "down"
            pass_word = "up" if self.pass_rate_diff > 0 else "down"
            return f"{pair}: mean score {score_word}, pass rate {pass_word}: {changes}; {figures}"
        if outcome == "none":
            adjusted = (self.score_p_adjusted, self.pass_p_adjusted)
            if any(p is not None and p < ALPHA for p in adjusted):
                return (
                    f"no meaningful difference (under the minimum effect {self.min_effect:g}), "
                    f"{pair}: {figures}"
                )
            return f"no significant difference, {pair}: {figures}"
        on = (
            "mean score and pass rate"
            if self.score_direction and self.pass_direction
            else "mean score"
            if self.score_direction
            else "pass rate"
        )
        return f"{self.other} {outcome} than {self.baseline} on {on}: {changes}; {figures}"

    def notes(self) -> list[str]:
        """What the verdict leaves out or cannot see, one line each."""
        lines = []
        if self.score is not None:
            detectable = self.detectable
            if self.paired < MIN_PAIRS:
                power = f"too few for any verdict (at least {MIN_PAIRS} needed)"
            elif detectable is None:
                power = "every paired score difference is the same"
            else:
                power = f"smallest mean score difference they detect (80% power): {detectable:.3f}"
            lines.append(f"{self.paired} paired cases; {power}")
        base_err, other_err = self.errored
        if base_err or other_err:
            lines.append(
                f"not scored (infrastructure errors): {self.baseline} {base_err} items, "
                f"{self.other} {other_err} items"
                + (
                    f"; {len(self.excluded)} cases left out, so the verdict may change once "
                    "they run"
                    if self.excluded
                    else "; the verdict may change once they run"
                )
            )
        return lines

    def to_json(self) -> dict[str, Any]:
        return {
            "baseline": self.baseline,
            "other": self.other,
            "paired": self.paired,
            "min_effect": self.min_effect,
            "mean_diff": self.mean_diff,
            "ci": self.ci,
            "ci_level": 1 - self.interval_alpha,
            "p_value": self.p_value,
            "p_value_adjusted": self.score_p_adjusted,
            "mcnemar_p": self.mcnemar_p,
            "mcnemar_p_adjusted": self.pass_p_adjusted,
            "holm_family": self.family,
            "pass_rate_diff": self.pass_rate_diff if self.paired else None,
            "detectable_difference": self.detectable,
            "regressions": self.regressions,
            "improvements": self.improvements,
            "errored_items": {self.baseline: self.errored[0], self.other: self.errored[1]},
            "excluded_cases": self.excluded,
            "unpaired": {self.baseline: self.only_baseline, self.other: self.only_other},
            "pass_at_k": {
                f"pass@{k}": {"diff": t.mean, "ci95": t.interval(), "cases": covered}
                for k, (t, covered) in self.pass_at_k.items()
            },
            "outcome": self.outcome,
            "significant": self.significant,
            "verdict": self.verdict,
            "tie_rule": TIE_RULE,
        }


def _sign(value: float, dead_band: float) -> int:
    if abs(value) <= max(dead_band, 1e-12):
        return 0
    return 1 if value > 0 else -1


def _label(key: tuple[str, str]) -> str:
    return f"{key[0]}::{key[1]}"


def _cases(results: Iterable[Result]) -> tuple[dict[tuple[str, str], CaseView], set[Any], int]:
    """Per case, the view over its scored samples; the cases whose samples all errored; the
    number of errored items."""
    scored: dict[tuple[str, str], list[Result]] = {}
    seen: set[tuple[str, str]] = set()
    errored = 0
    for r in results:
        outcome = outcome_of(r)
        if outcome == "skipped":
            continue
        seen.add(case_key(r))
        if outcome == "error":
            errored += 1
            continue
        scored.setdefault(case_key(r), []).append(r)
    views = {
        key: CaseView(
            statistics.fmean(scored_value(r) for r in items),
            case_passes(sum(outcome_of(r) == "passed" for r in items), len(items)),
        )
        for key, items in scored.items()
    }
    return views, seen - set(views), errored


def compare(
    baseline: Sequence[Result],
    other: Sequence[Result],
    names: tuple[str, str],
    ks: Sequence[int] = (1,),
    min_effect: float = 0.0,
) -> Comparison:
    base_views, base_lost, base_errors = _cases(baseline)
    other_views, other_lost, other_errors = _cases(other)
    base_all, other_all = set(base_views) | base_lost, set(other_views) | other_lost
    shared = sorted(set(base_views) & set(other_views))
    result = Comparison(
        baseline=names[0],
        other=names[1],
        paired=len(shared),
        min_effect=min_effect,
        errored=(base_errors, other_errors),
        excluded=[_label(k) for k in sorted((base_all & other_all) - set(shared))],
        only_baseline=[_label(k) for k in sorted(base_all - other_all)],
        only_other=[_label(k) for k in sorted(other_all - base_all)],
    )
    if not shared:
        return result
    diffs = [other_views[k].score - base_views[k].score for k in shared]
    result.score = studentized_bootstrap(
        diffs, resamples=resamples_for(len(diffs)), bounds=DIFFERENCE_RANGE
    )
    # Regressions first: what got worse is what a reader must see.
    result.regressions = [
        _label(k) for k in shared if base_views[k].passed and not other_views[k].passed
    ]
    result.improvements = [
        _label(k) for k in shared if other_views[k].passed and not base_views[k].passed
    ]
    result.mcnemar_p = mcnemar_exact(len(result.regressions), len(result.improvements))
    base_counts, other_counts = per_case_counts(baseline), per_case_counts(other)
    for k in ks:
        usable = [key for key in shared if base_counts[key][0] >= k and other_counts[key][0] >= k]
        if usable:
            kdiffs = [
                pass_at_k(*other_counts[key], k) - pass_at_k(*base_counts[key], k) for key in usable
            ]
            test = studentized_bootstrap(
                kdiffs, resamples=resamples_for(len(kdiffs)), bounds=DIFFERENCE_RANGE
            )
            result.pass_at_k[k] = (test, len(usable))
    correct([result])
    return result


def correct(comparisons: Sequence[Comparison]) -> None:
    """Holm-adjust the score and pass/fail p-values of every comparison as one family, and
    show each score interval at the level its adjusted test was decided at, so that the
    interval excludes 0 exactly when the adjusted p-value is under 0.05."""
    tests = [(c, "score") for c in comparisons if c.score is not None] + [
        (c, "pass") for c in comparisons if c.mcnemar_p is not None
    ]
    raw = [c.score.p if kind == "score" and c.score else c.mcnemar_p or 1.0 for c, kind in tests]
    adjusted = holm(raw)
    m = len(tests)
    # Holm compares the j-th smallest p with alpha / (m - j + 1) and stops at the first it
    # keeps; every later test is decided at that stopping level.
    order = sorted(range(m), key=raw.__getitem__)
    stop = next((j for j, i in enumerate(order) if raw[i] >= ALPHA / (m - j)), m)
    for j, i in enumerate(order):
        comparison, kind = tests[i]
        comparison.family = m
        if kind == "score":
            comparison.score_p_adjusted = adjusted[i]
            comparison.interval_alpha = ALPHA / (m - min(j, stop))
        else:
            comparison.pass_p_adjusted = adjusted[i]


def interval_text(low: float, high: float) -> str:
    return f"[{low:+.3f}, {high:+.3f}]"
