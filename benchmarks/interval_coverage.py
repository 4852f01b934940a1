"""Coverage of the interval a comparison prints for the mean paired difference
(``SignFlipTest.interval``: Student's t with one pseudo-pair at each bound, made to agree
with the exact test's p-value), beside Student's t on the differences alone.

    python benchmarks/interval_coverage.py [--datasets 2000]

Differences: normal, skewed, pass/fail flips, pass shares of 5 samples, and suites where
most cases never change (temperature 0): 80% / 90% unchanged with flips, 90% unchanged with
scores, 95% unchanged with the rest +1. Prints the share of datasets whose interval holds
the true mean (nominal 95%) at 5 to 400 cases. Needs the test extra (scipy).
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
from collections.abc import Callable

from scipy import stats

from pytest_prompteval.core.stats import sign_flip_test

Draw = Callable[[random.Random], float]


def _ties(share: float, draw: Draw) -> Draw:
    return lambda rng: 0.0 if rng.random() < share else draw(rng)


def _shares(rng: random.Random) -> float:
    return (
        sum(rng.random() < 0.6 for _ in range(5)) - sum(rng.random() < 0.5 for _ in range(5))
    ) / 5


DISTRIBUTIONS: dict[str, Draw] = {
    "normal": lambda rng: rng.gauss(0.1, 0.2),
    "skewed": lambda rng: min(1.0, rng.expovariate(5) - 0.1),
    "flips": lambda rng: rng.choices((-1.0, 0.0, 1.0), (0.25, 0.4, 0.35))[0],
    "shares of 5": _shares,
    "80% unchanged": _ties(0.8, lambda rng: rng.choices((-1.0, 1.0), (0.3, 0.7))[0]),
    "90% unchanged": _ties(0.9, lambda rng: rng.choices((-1.0, 1.0), (0.3, 0.7))[0]),
    "90% unch. scores": _ties(0.9, lambda rng: max(-1.0, min(1.0, rng.gauss(0.3, 0.3)))),
    "95% unch., +1": _ties(0.95, lambda rng: 1.0),
}
SIZES = (5, 10, 20, 50, 100, 400)


def _true_mean(draw: Draw) -> float:
    rng = random.Random(0)
    return statistics.fmean(draw(rng) for _ in range(400_000))


def _student(data: list[float]) -> tuple[float, float]:
    n, mean = len(data), statistics.fmean(data)
    half = stats.t.ppf(0.975, n - 1) * statistics.stdev(data) / math.sqrt(n)
    return mean - half, mean + half


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=int, default=2000)
    args = parser.parse_args()
    se = math.sqrt(0.05 * 0.95 / args.datasets)
    print(f"coverage %, {args.datasets} datasets per cell (95% measured to +-{200 * se:.1f}):")
    print("printed interval (Student t on the differences alone)")
    print(f"{'differences':<18}" + "".join(f"{f'{n} cases':>16}" for n in SIZES))
    for name, draw in DISTRIBUTIONS.items():
        mean = _true_mean(draw)
        row = ""
        for n in SIZES:
            rng = random.Random(f"{name}-{n}")
            ours = student = 0
            for _ in range(args.datasets):
                data = [draw(rng) for _ in range(n)]
                low, high = sign_flip_test(data).interval()
                ours += low <= mean <= high
                t_low, t_high = _student(data) if len(set(data)) > 1 else (data[0], data[0])
                student += t_low <= mean <= t_high
            row += f"{100 * ours / args.datasets:>9.1f} ({100 * student / args.datasets:>4.1f})"
        print(f"{name:<18}{row}")


if __name__ == "__main__":
    main()
