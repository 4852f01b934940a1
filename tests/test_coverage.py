"""The comparison's interval covers the true mean paired difference: seeded simulation of the
interval it prints (``SignFlipTest.interval``), with the differences where the inverted
sign-flip test fell to 57% (90% unchanged cases at 10 cases) and the others measured in
benchmarks/interval_coverage.py."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

from pytest_prompteval.core.stats import sign_flip_test

Draw = Callable[[random.Random], float]


def _ties(share: float, draw: Draw) -> Draw:
    return lambda rng: 0.0 if rng.random() < share else draw(rng)


#: name: (one paired difference, its true mean)
DISTRIBUTIONS: dict[str, tuple[Draw, float]] = {
    "normal": (lambda rng: rng.gauss(0.1, 0.2), 0.1),
    "flips": (lambda rng: rng.choices((-1.0, 0.0, 1.0), (0.25, 0.4, 0.35))[0], 0.1),
    "80% unchanged": (_ties(0.8, lambda rng: rng.choices((-1.0, 1.0), (0.3, 0.7))[0]), 0.08),
    "90% unchanged": (_ties(0.9, lambda rng: rng.choices((-1.0, 1.0), (0.3, 0.7))[0]), 0.04),
    "95% unchanged, rest +1": (_ties(0.95, lambda rng: 1.0), 0.05),
}
DATASETS = 400  # a 95% coverage is measured to +-1.1 points (one standard error)


@pytest.mark.parametrize("n", [10, 20, 60])
@pytest.mark.parametrize("name", sorted(DISTRIBUTIONS))
def test_the_printed_interval_covers_the_true_mean(name: str, n: int) -> None:
    rng = random.Random(f"{name}-{n}")
    draw, mean = DISTRIBUTIONS[name]
    covered = 0
    for _ in range(DATASETS):
        low, high = sign_flip_test([draw(rng) for _ in range(n)]).interval()
        covered += low <= mean <= high
    coverage = 100 * covered / DATASETS
    assert coverage >= 93, f"{name} at {n} cases: {coverage:.1f}%"
