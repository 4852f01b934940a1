"""Paired comparison of two sets of results on the cases they share.

Per case and version, over its scored samples (a failure the prompt caused scores 0): the
score is their mean and the pass rate the share of them that pass (k/n), so two versions
run with different numbers of samples compare fairly. A sample with an infrastructure
error is left out on its own. A case is paired when both versions scored at least one of
its samples; the others are listed (run by one version only, or errored under one).

Two endpoints are tested on the paired cases by the exact sign-flip test of their per-case
differences (for one sample a side, the pass rate's is McNemar's exact test): the declared
primary one (ini ``prompteval_gate_metric``: ``pass_rate``, the default, or ``score``)
decides the verdict and the gate; the other is reported beside it, never combined with it.
The primary p-values of every comparison of the run are one Holm family, the secondary
ones another (see ``correct``).

A side run with ``--prompteval-stop-early`` drew fewer samples of a case once its verdict
was decided, which biases the share of the samples drawn (optional stopping: a case at a
true pass rate of 0.5 shows 0.415 on average under min_pass 4 of 5). Such comparisons are
decided on each case's min_pass verdict alone, which stopping leaves as the full run's; the
mean score and pass@k are then not compared.
"""

from __future__ import annotations

import functools
import math
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_prompteval.core.minpass import MinPass, needed
from pytest_prompteval.core.stats import (
    ALPHA,
    MIN_PAIRS,
    SignFlipTest,
    fisher_log_p,
    fisher_min_log_p,
    holm_log,
    mcnemar_detectable,
    minimum_detectable,
    pass_at_k,
    sign_flip_test,
    tarone_log_level,
)
from pytest_prompteval.report import figures
from pytest_prompteval.report.summary import (
    Result,
    case_key,
    case_passes,
    outcome_of,
    per_case_counts,
    scored_value,
)

#: the exact power sum is the one slow figure, and the notes, json and pages all ask for it
_mcnemar_detectable = functools.lru_cache(maxsize=64)(mcnemar_detectable)
#: scores, pass shares and pass@k lie in [0, 1], so their paired differences in [-1, 1]
DIFFERENCE_RANGE = (-1.0, 1.0)
ENDPOINT_NAMES = {
    # the mean over cases of each case's share of passing samples: the summary's pass@1, not
    # its pass rate (passing items over items, which weighs cases by their samples)
    "pass_rate": "pass@1",
    "score": "mean score",
    "verdicts": "cases passing min_pass",
}
TIE_RULE = (
    "each case counts the share of its samples that pass (k/n), so different sample counts "
    "do not bias the test; for regressions a case passes under its min_pass, else when more "
    "than half of its samples pass (a 2/4 tie fails)"
)


@dataclass(frozen=True)
class CaseView:
    score: float
    passed: int  # samples that passed
    scored: int  # samples that ran
    verdict: bool  # the case's own pass: min_pass, else more than half
    #: fewer samples drawn than planned under min_pass: --prompteval-stop-early stopped it
    stopped: bool = False

    @property
    def share(self) -> float:
        return self.passed / self.scored

    @property
    def counts(self) -> str:
        return f"{self.passed}/{self.scored}"


@dataclass
class Endpoint:
    """One endpoint's test on the paired cases, with its Holm-adjusted p-value (as a log)."""

    name: str  # pass_rate | score
    test: SignFlipTest
    log_p_adjusted: float = 0.0
    #: the level the interval is shown at: the one Holm decided this test at
    interval_alpha: float = ALPHA
    family: int = 1
    #: McNemar's exact test (one sample a side): the sign-flip test of -1/0/+1 flips
    mcnemar: bool = False

    @property
    def label(self) -> str:
        return ENDPOINT_NAMES[self.name]

    @property
    def diff(self) -> float:
        return self.test.mean

    @property
    def significant(self) -> bool:
        return self.log_p_adjusted < math.log(ALPHA)

    @property
    def direction(self) -> int:
        """+1 / -1 when the adjusted test rejects, by the sign of this endpoint's own
        difference; 0 when it does not."""
        if not self.significant or abs(self.diff) <= 1e-12:
            return 0
        return 1 if self.diff > 0 else -1

    @property
    def interval(self) -> tuple[float, float]:
        return self.test.interval(self.interval_alpha)

    @property
    def kind(self) -> str:
        """How its figures are written: a pass rate as a share, a score as a score."""
        return "score" if self.name == "score" else "share"

    def write(self, value: float | None, signed: bool = True) -> str:
        return (figures.share if self.kind == "share" else figures.score)(value, signed)

    def figures(self) -> str:
        level = f"{100 * (1 - self.interval_alpha):.3g}%"
        name = "McNemar exact p" if self.mcnemar else "p"
        return (
            f"{self.label} {self.write(self.diff)} "
            f"{figures.interval(self.interval, self.kind, signed=True)} ({level}), "
            f"{name}={figures.p_value(self.log_p_adjusted)}"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "diff": self.diff,
            "ci": self.interval,
            "ci_level": 1 - self.interval_alpha,
            "p_value": self.test.p,
            "log_p": self.test.log_p,
            "p_value_adjusted": math.exp(self.log_p_adjusted),
            "log_p_adjusted": self.log_p_adjusted,
            "holm_family": self.family,
            "test": "McNemar exact" if self.mcnemar else self.test.describe(),
            "monte_carlo_error": self.test.monte_carlo_error,
        }


@dataclass
class Comparison:
    baseline: str
    other: str
    paired: int = 0
    min_effect: float = 0.0
    primary: str = "pass_rate"
    score: Endpoint | None = None
    pass_rate: Endpoint | None = None
    regressions: list[str] = field(default_factory=list)
    improvements: list[str] = field(default_factory=list)
    #: the changed cases whose samples differ by their own exact test (see ``_changes``):
    #: only these newly fail for the gate
    reliable: list[str] = field(default_factory=list)
    #: per case that changed: (baseline's passed/scored, other's passed/scored)
    changes: dict[str, tuple[str, str]] = field(default_factory=dict)
    #: samples per case, at most, per version: (baseline, other)
    samples: tuple[int, int] = (1, 1)
    #: items not scored (infrastructure errors) per version: (baseline, other)
    errored: tuple[int, int] = (0, 0)
    #: cases run by both whose samples all errored under one version
    excluded: list[str] = field(default_factory=list)
    only_baseline: list[str] = field(default_factory=list)
    only_other: list[str] = field(default_factory=list)
    #: pass@k difference per k over the cases with at least k samples in both, and how many
    pass_at_k: dict[int, tuple[SignFlipTest, int]] = field(default_factory=dict)

    @property
    def on_verdicts(self) -> bool:
        """Decided on the cases' min_pass verdicts: a side stopped drawing early."""
        return self.pass_rate is not None and self.pass_rate.name == "verdicts"

    @property
    def endpoints(self) -> tuple[Endpoint | None, Endpoint | None]:
        """(primary, secondary)."""
        if self.primary == "score" and not self.on_verdicts:
            return self.score, self.pass_rate
        return self.pass_rate, self.score

    @property
    def decisive(self) -> Endpoint | None:
        return self.endpoints[0]

    @property
    def mean_diff(self) -> float | None:
        return None if self.score is None else self.score.diff

    @property
    def pass_rate_diff(self) -> float:
        return self.pass_rate.diff if self.pass_rate is not None else 0.0

    @property
    def detectable(self) -> float | None:
        """The smallest primary difference these paired cases find with 80% power at the
        level Holm tests a lone real difference at (alpha / family); None with too few of
        them, or when every difference is the same."""
        endpoint = self.decisive
        if endpoint is None or self.paired < MIN_PAIRS or endpoint.test.sd == 0:
            return None
        alpha = ALPHA / max(1, endpoint.family)
        if endpoint.mcnemar:  # exact: the test is discrete in the discordant pairs
            return _mcnemar_detectable(self.paired, self.changed_share, alpha=alpha)
        return minimum_detectable(endpoint.test.sd, self.paired, alpha=alpha)

    @property
    def changed_share(self) -> float:
        """The share of paired cases whose primary figure changed (McNemar's discordant
        pairs when it is a pass/fail flip)."""
        endpoint = self.decisive
        if endpoint is None or not self.paired:
            return 0.0
        return sum(abs(x) > 1e-12 for x in endpoint.test.differences) / self.paired

    @property
    def outcome(self) -> str:
        """better | worse (the primary endpoint, significant after Holm and at least the
        minimum effect) | none | impossible."""
        endpoint = self.decisive
        if endpoint is None or self.paired < MIN_PAIRS:
            return "impossible"
        if endpoint.direction == 0 or abs(endpoint.diff) < self.min_effect:
            return "none"
        return "better" if endpoint.direction > 0 else "worse"

    @property
    def significant(self) -> bool:
        return self.outcome in ("better", "worse")

    def worse_side(self) -> str | None:
        """The version the primary endpoint's verdict says is worse, if any."""
        outcome = self.outcome
        if outcome == "worse":
            return self.other
        return self.baseline if outcome == "better" else None

    def new_failures(self, version: str) -> list[tuple[str, str, str]]:
        """(case, passed/scored before, after) of the cases ``version`` fails and the other
        side passes, by each case's own verdict, reliably (its own exact test)."""
        reliable = set(self.reliable)
        if version == self.other:
            return [(case, *self.changes[case]) for case in self.regressions if case in reliable]
        return [
            (case, after, before)
            for case in self.improvements
            if case in reliable
            for before, after in [self.changes[case]]
        ]

    def figures(self) -> str:
        primary, secondary = self.endpoints
        assert primary is not None
        text = primary.figures() + (
            f" (Holm over {primary.family} comparisons)" if primary.family > 1 else ""
        )
        if secondary is not None:
            text += f"; {secondary.figures()} (secondary, not gating)"
        return text

    @property
    def verdict(self) -> str:
        pair = f"{self.other} vs {self.baseline}"
        primary = self.decisive
        if primary is None:
            return f"{pair}: no cases in common"
        figures = self.figures()
        outcome = self.outcome
        if outcome == "impossible":
            return (
                f"no verdict possible, {pair}: {self.paired} paired cases, and exact paired "
                f"tests need at least {MIN_PAIRS} to reach p < 0.05; {figures}"
            )
        changes = f"{len(self.regressions)} regressions, {len(self.improvements)} improvements"
        if outcome == "none":
            if primary.significant:
                return (
                    f"no meaningful difference (under the minimum effect {self.min_effect:g}), "
                    f"{pair}: {changes}; {figures}"
                )
            return f"no significant difference, {pair}: {changes}; {figures}"
        return (
            f"{self.other} {outcome} than {self.baseline} on {primary.label}: {changes}; {figures}"
        )

    def power(self, primary: Endpoint) -> str:
        """What the paired cases can detect on the primary endpoint."""
        detectable = self.detectable
        if self.paired < MIN_PAIRS:
            return f"too few for any verdict (at least {MIN_PAIRS} needed)"
        if primary.test.sd == 0:
            return f"every paired {primary.label} difference is the same"
        if detectable is None:
            return (
                f"too few to reach the Holm level {ALPHA / primary.family:.3g} with the "
                "exact test"
                + (
                    f" with 80% power, {figures.share(self.changed_share, False)} of them changing"
                    if primary.mcnemar
                    else ""
                )
            )
        level = ALPHA / max(1, primary.family)
        given = (
            f", exact McNemar with {figures.share(self.changed_share, False)} of them changing"
            if primary.mcnemar
            else ""
        )
        return (
            f"smallest {primary.label} difference they detect (80% power at the Holm "
            f"level {level:.3g}{given}): {primary.write(detectable, signed=False)}"
        )

    def notes(self) -> list[str]:
        """What the verdict leaves out or cannot see, one line each."""
        lines = []
        primary, secondary = self.endpoints
        if primary is not None:
            power = self.power(primary)
            lines.append(f"{self.paired} paired cases; {power}")
            if self.on_verdicts:
                lines.append(
                    "--prompteval-stop-early drew fewer samples of some cases: compared on "
                    "each case's min_pass verdict, which stopping leaves as the full run's "
                    "(the share of the samples drawn is biased by when they stopped); mean "
                    "score and pass@k not compared"
                )
            lines.append(
                f"decided on {primary.label} (prompteval_gate_metric), "
                + ("McNemar exact" if primary.mcnemar else primary.test.describe())
                + (
                    f", Holm over the {primary.family} comparisons of the run"
                    if primary.family > 1
                    else ", one comparison: no multiplicity correction"
                )
            )
            if (
                secondary is not None
                and secondary.direction
                and (secondary.direction != primary.direction)
            ):
                word = "up" if secondary.direction > 0 else "down"
                lines.append(
                    f"{secondary.label} significantly {word} (secondary, not gating): "
                    f"{secondary.figures()}"
                )
        unsure = len(self.changes) - len(self.reliable)
        if unsure:
            lines.append(
                f"{unsure} of the {len(self.changes)} changed verdicts rest on too few samples "
                "to tell (each case's exact test at Tarone's level over the paired cases): "
                "they do not count as newly failing for prompteval_max_new_failures"
            )
        base_samples, other_samples = self.samples
        if base_samples != other_samples:
            lines.append(
                f"samples per case differ ({self.baseline} {base_samples}, {self.other} "
                f"{other_samples}): each case counts its share of passing samples, which the "
                "counts do not bias"
            )
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

    def change_lines(
        self, cases: Sequence[str], where: Callable[[str], str] = lambda case: case
    ) -> list[str]:
        """``case (file:line) 5/5 → 3/5``: passing samples before and after."""
        return [f"{where(case)} {' → '.join(self.changes[case])}" for case in cases]

    def to_json(self) -> dict[str, Any]:
        return {
            "baseline": self.baseline,
            "other": self.other,
            "paired": self.paired,
            "min_effect": self.min_effect,
            "gate_metric": self.primary,
            "decided_on_verdicts": self.on_verdicts,
            "score": None if self.score is None else self.score.to_json(),
            "pass_rate": None if self.pass_rate is None else self.pass_rate.to_json(),
            "mean_diff": self.mean_diff,
            "pass_rate_diff": self.pass_rate_diff if self.paired else None,
            "detectable_difference": self.detectable,
            "regressions": self.regressions,
            "improvements": self.improvements,
            "reliable_changes": self.reliable,
            "changes": {case: list(counts) for case, counts in self.changes.items()},
            "samples": {self.baseline: self.samples[0], self.other: self.samples[1]},
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


def _label(key: tuple[str, str]) -> str:
    return f"{key[0]}::{key[1]}"


def _verdict(passed: int, scored: int, errored: int, min_pass: MinPass | None) -> bool:
    if min_pass is None:
        return case_passes(passed, scored)
    return passed >= needed(min_pass, scored + errored)


def _cases(results: Iterable[Result]) -> tuple[dict[tuple[str, str], CaseView], set[Any], int]:
    """Per case, the view over its scored samples; the cases whose samples all errored; the
    number of errored items."""
    scored: dict[tuple[str, str], list[Result]] = {}
    lost: dict[tuple[str, str], int] = {}
    drawn: dict[tuple[str, str], int] = {}
    errored = 0
    for r in results:
        drawn[case_key(r)] = drawn.get(case_key(r), 0) + 1
        outcome = outcome_of(r)
        if outcome == "skipped":
            continue
        if outcome == "error":
            errored += 1
            lost[case_key(r)] = lost.get(case_key(r), 0) + 1
            continue
        scored.setdefault(case_key(r), []).append(r)
    views = {}
    for key, items in scored.items():
        passed = sum(outcome_of(r) == "passed" for r in items)
        min_pass = items[0].min_pass
        views[key] = CaseView(
            statistics.fmean(scored_value(r) for r in items),
            passed,
            len(items),
            _verdict(passed, len(items), lost.get(key, 0), min_pass),
            stopped=min_pass is not None and drawn[key] < items[0].samples,
        )
    return views, set(lost) - set(views), errored


def compare(
    baseline: Sequence[Result],
    other: Sequence[Result],
    names: tuple[str, str],
    ks: Sequence[int] = (1,),
    min_effect: float = 0.0,
    primary: str = "pass_rate",
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
        primary=primary,
        samples=(
            max((v.scored for v in base_views.values()), default=1),
            max((v.scored for v in other_views.values()), default=1),
        ),
        errored=(base_errors, other_errors),
        excluded=[_label(k) for k in sorted((base_all & other_all) - set(shared))],
        only_baseline=[_label(k) for k in sorted(base_all - other_all)],
        only_other=[_label(k) for k in sorted(other_all - base_all)],
    )
    if not shared:
        return result
    pairs = [(base_views[k], other_views[k]) for k in shared]
    if any(b.stopped or o.stopped for b, o in pairs):
        result.pass_rate = Endpoint(
            "verdicts",
            sign_flip_test([o.verdict - b.verdict for b, o in pairs], bounds=DIFFERENCE_RANGE),
            mcnemar=True,
        )
        _changes(result, shared, pairs)
        correct([result])
        return result
    result.score = Endpoint(
        "score",
        sign_flip_test([o.score - b.score for b, o in pairs], bounds=DIFFERENCE_RANGE),
    )
    result.pass_rate = Endpoint(
        "pass_rate",
        sign_flip_test([o.share - b.share for b, o in pairs], bounds=DIFFERENCE_RANGE),
        mcnemar=all(b.scored == o.scored == 1 for b, o in pairs),
    )
    _changes(result, shared, pairs)
    counts = per_case_counts(baseline), per_case_counts(other)
    result.pass_at_k.update(_pass_at_k(result.pass_rate.test, shared, *counts, ks))
    correct([result])
    return result


def _pass_at_k(
    pass_rate: SignFlipTest,
    shared: Sequence[tuple[str, str]],
    base_counts: dict[tuple[str, str], tuple[int, int]],
    other_counts: dict[tuple[str, str], tuple[int, int]],
    ks: Sequence[int],
) -> dict[int, tuple[SignFlipTest, int]]:
    """Each k's pass@k test over the shared cases with k samples or more on both sides, and
    how many there are."""
    found: dict[int, tuple[SignFlipTest, int]] = {}
    for k in ks:
        usable = [key for key in shared if base_counts[key][0] >= k and other_counts[key][0] >= k]
        if k == 1:  # pass@1 of a case is its pass share: the pass-rate test itself
            found[1] = (pass_rate, len(shared))
        elif usable:
            kdiffs = [
                pass_at_k(*other_counts[key], k) - pass_at_k(*base_counts[key], k) for key in usable
            ]
            found[k] = (sign_flip_test(kdiffs, bounds=DIFFERENCE_RANGE), len(usable))
    return found


def _changes(
    result: Comparison,
    shared: Sequence[tuple[str, str]],
    pairs: Sequence[tuple[CaseView, CaseView]],
) -> None:
    """The cases whose own verdict changed, regressions first: what got worse is what a
    reader must see; and those of them that changed reliably: the case's passing samples
    differ by its own exact test (Fisher's) at Tarone's level over the paired cases,
    family-wise 5%, so that draws of a flaky case going the other way are no new failure."""
    counts = [((b.passed, b.scored), (o.passed, o.scored)) for b, o in pairs]
    level = tarone_log_level([fisher_min_log_p(*c) for c in counts])
    for key, (b, o), (before, after) in zip(shared, pairs, counts, strict=True):
        if b.verdict == o.verdict:
            continue
        (result.regressions if b.verdict else result.improvements).append(_label(key))
        result.changes[_label(key)] = (b.counts, o.counts)
        log_p = fisher_log_p(before, after) if b.verdict else fisher_log_p(after, before)
        if log_p <= level:
            result.reliable.append(_label(key))


def correct(comparisons: Sequence[Comparison]) -> None:
    """Holm-adjust the primary endpoints of every comparison as one family (the one that
    decides the gate) and the secondary ones as another, in log space; show each interval
    at the level its adjusted test was decided at, so that it excludes 0 exactly when the
    adjusted p-value is under 0.05."""
    for slot in (0, 1):
        tests = [e for c in comparisons if (e := c.endpoints[slot]) is not None]
        raw = [e.test.log_p for e in tests]
        adjusted = holm_log(raw)
        m = len(tests)
        # Holm compares the j-th smallest p with alpha / (m - j + 1) and stops at the first
        # it keeps; every later test is decided at that stopping level.
        order = sorted(range(m), key=raw.__getitem__)
        log_alpha = math.log(ALPHA)
        stop = next((j for j, i in enumerate(order) if raw[i] >= log_alpha - math.log(m - j)), m)
        for j, i in enumerate(order):
            tests[i].family = m
            tests[i].log_p_adjusted = adjusted[i]
            tests[i].interval_alpha = ALPHA / (m - min(j, stop))
