"""Cases with several samples: pass^k, min_pass verdicts and flaky cases (pure functions).

pass@k is the chance that at least one of k samples passes; pass^k the chance that all k do,
which is what a user who runs the prompt k times and needs every answer right gets.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass

from pytest_prompteval.core.minpass import MinPass, needed
from pytest_prompteval.core.result import ItemResult
from pytest_prompteval.report import figures
from pytest_prompteval.report.summary import counts_in_denominators, mean_pass_at_k, outcome_of

#: error types of the infrastructure, not the prompt: such samples are not scored
Z95 = 1.959963984540054


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Unbiased pass^k from n samples of which c passed: C(c, k) / C(n, k), as a product
    that neither overflows nor loses precision: prod_{i=0}^{k-1} (c - i) / (n - i)."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass^k needs 0 <= c <= n and 1 <= k <= n (n={n}, c={c}, k={k})")
    product = 1.0
    for i in range(k):
        product *= (c - i) / (n - i)
    return max(product, 0.0)


def wilson(passed: int, total: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a pass rate: sound at 0/n and n/n, unlike the normal one."""
    if total <= 0:
        raise ValueError("a Wilson interval needs at least one sample")
    rate = passed / total
    denominator = 1 + z * z / total
    centre = (rate + z * z / (2 * total)) / denominator
    half = z * math.sqrt(rate * (1 - rate) / total + z * z / (4 * total * total)) / denominator
    # at 0/n and n/n the bound is exactly 0 or 1; the formula only gets there up to rounding
    low = 0.0 if passed == 0 else max(0.0, centre - half)
    high = 1.0 if passed == total else min(1.0, centre + half)
    return low, high


def verdict_decided(passed: int, drawn: int, samples: int, min_pass: MinPass) -> bool:
    """Whether more samples can no longer change the verdict under min_pass. The verdict
    of the samples drawn so far (``needed(min_pass, drawn)``) is then the full run's."""
    need = needed(min_pass, samples)
    return passed >= need or passed + (samples - drawn) < need


class SampleTally:
    """Scored samples so far per case, for ``--prompteval-stop-early`` (one process)."""

    def __init__(self) -> None:
        self._counts: dict[Hashable, tuple[int, int]] = {}

    def add(self, case: Hashable, passed: bool) -> None:
        done, good = self._counts.get(case, (0, 0))
        self._counts[case] = (done + 1, good + passed)

    def decided(self, case: Hashable, samples: int, min_pass: MinPass) -> bool:
        done, good = self._counts.get(case, (0, 0))
        return bool(done) and verdict_decided(good, done, samples, min_pass)


@dataclass(frozen=True)
class CaseSamples:
    version: str
    case: str  # "file::case_id"
    scored: int  # samples with a verdict (infrastructure errors excluded)
    passed: int
    errored: int
    min_pass: MinPass | None

    @property
    def flaky(self) -> bool:
        return 0 < self.passed < self.scored

    @property
    def needed(self) -> int | None:
        """Out of the samples drawn, errored ones included: an error is no pass, so it can
        never lower what the others must reach (4 errored and 1 passing is not 4 of 5)."""
        drawn = self.scored + self.errored
        return None if self.min_pass is None else needed(self.min_pass, drawn)

    @property
    def verdict(self) -> bool | None:
        """The case's verdict under min_pass; None without min_pass, or while the errored
        samples could still decide it either way (``undecided``)."""
        need = self.needed
        if need is None or not self.scored or self.undecided:
            return None
        return self.passed >= need

    @property
    def undecided(self) -> bool:
        """Errored samples leave the verdict open: too few passed, but enough could have."""
        need = self.needed
        return need is not None and self.passed < need <= self.passed + self.errored

    @property
    def interval(self) -> tuple[float, float] | None:
        """The Wilson interval of its pass rate; None when no sample was scored (all
        errored), which every table writes as ``-``."""
        return wilson(self.passed, self.scored) if self.scored else None


def case_samples(results: Iterable[ItemResult]) -> list[CaseSamples]:
    """Per version and case, the sample counts (glue over the result records)."""
    grouped: dict[tuple[str, str], list[ItemResult]] = {}
    for r in results:
        grouped.setdefault((r.prompt, f"{r.file}::{r.case_id}"), []).append(r)
    cases = []
    for (version, case), items in sorted(grouped.items()):
        errored = sum(1 for r in items if outcome_of(r) == "error")
        scored = [r for r in items if counts_in_denominators(r)]
        cases.append(
            CaseSamples(
                version,
                case,
                len(scored),
                sum(bool(r.passed) for r in scored),
                errored,
                items[0].min_pass,
            )
        )
    return cases


def mean_pass_hat_k(cases: Iterable[CaseSamples], k: int) -> float | None:
    values = [pass_hat_k(c.scored, c.passed, k) for c in cases if c.scored >= k]
    return sum(values) / len(values) if values else None


def sample_lines(cases: Sequence[CaseSamples], ks: Sequence[int]) -> list[str]:
    """pass^k beside pass@k per version, then each flaky case with its Wilson interval and,
    under min_pass, its verdict. Empty when no case has more than one sample."""
    if not any(c.scored + c.errored > 1 for c in cases):
        return []
    lines = []
    for version in dict.fromkeys(c.version for c in cases):
        mine = [c for c in cases if c.version == version]
        shown = []
        for k in ks:
            at = mean_pass_at_k({c.case: (c.scored, c.passed) for c in mine}, k)
            hat = mean_pass_hat_k(mine, k)
            if at is not None and hat is not None:
                shown.append(f"pass@{k} {figures.share(at)}  pass^{k} {figures.share(hat)}")
        flaky = sum(c.flaky for c in mine)
        lines.append(f"{version}: {'; '.join(shown) or 'too few samples'}; {flaky} flaky cases")
    for c in cases:
        if c.flaky or c.undecided:
            verdict = (
                f", min_pass {c.min_pass}: undecided, {c.errored} samples errored"
                if c.undecided
                else ""
                if c.verdict is None
                else (f", min_pass {c.min_pass}: {'passes' if c.verdict else 'fails'}")
            )
            lines.append(
                f"  flaky {c.case} [{c.version}]: {c.passed}/{c.scored} passed, "
                f"95% CI {figures.interval(c.interval, 'share')}{verdict}"
            )
    return lines
