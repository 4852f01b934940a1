"""Cases with several samples: pass^k, min_pass verdicts and flaky cases (pure functions).

pass@k is the chance that at least one of k samples passes; pass^k the chance that all k do,
which is what a user who runs the prompt k times and needs every answer right gets.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

#: error types of the infrastructure, not the prompt: such samples are not scored
INFRASTRUCTURE_ERRORS = frozenset({"api_error", "api_stop", "missing_recording", "budget"})
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
    return max(0.0, centre - half), min(1.0, centre + half)


MinPass = int | float  # an int is a count of samples, a float a fraction of them


def parse_min_pass(value: str | int | float) -> MinPass:
    """``4`` (at least four samples pass) or ``0.8`` (at least 80 % of them)."""
    allowed = "a count of samples like 4, or a fraction like 0.8 (greater than 0, at most 1.0)"
    if isinstance(value, bool):
        raise ValueError(allowed)
    if isinstance(value, str):
        try:
            value = float(value) if any(ch in value for ch in ".eE") else int(value)
        except ValueError:
            raise ValueError(allowed) from None
    if isinstance(value, int):
        if value < 1:
            raise ValueError(allowed)
        return value
    if not (math.isfinite(value) and 0 < value <= 1):
        raise ValueError(allowed)
    return value


def needed(min_pass: MinPass, samples: int) -> int:
    """Samples that must pass out of ``samples``: a count is capped at the samples drawn, a
    fraction rounds up."""
    if isinstance(min_pass, int):
        return min(min_pass, samples)
    return max(1, math.ceil(min_pass * samples - 1e-9))


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
        return None if self.min_pass is None else needed(self.min_pass, self.scored)

    @property
    def verdict(self) -> bool | None:
        """The case's verdict under min_pass; None without min_pass or any scored sample."""
        need = self.needed
        return None if need is None or not self.scored else self.passed >= need

    @property
    def interval(self) -> tuple[float, float]:
        return wilson(self.passed, self.scored)


def case_samples(results: Iterable[Mapping[str, Any]]) -> list[CaseSamples]:
    """Per version and case, the sample counts (glue over the result records)."""
    grouped: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for r in results:
        grouped.setdefault((r["prompt"], f"{r['file']}::{r['case_id']}"), []).append(r)
    cases = []
    for (version, case), items in sorted(grouped.items()):
        errored = sum(1 for r in items if r.get("error_type") in INFRASTRUCTURE_ERRORS)
        scored = [r for r in items if r.get("error_type") not in INFRASTRUCTURE_ERRORS]
        cases.append(
            CaseSamples(
                version,
                case,
                len(scored),
                sum(bool(r["passed"]) for r in scored),
                errored,
                items[0].get("min_pass"),
            )
        )
    return cases


def mean_pass_hat_k(cases: Iterable[CaseSamples], k: int) -> float | None:
    values = [pass_hat_k(c.scored, c.passed, k) for c in cases if c.scored >= k]
    return sum(values) / len(values) if values else None
