"""Coverage of 95% intervals for a mean paired difference: the simulation behind the choice of
the studentized bootstrap in ``core/stats.py``.

    python benchmarks/interval_coverage.py [--datasets 1000] [--resamples 999]

For 5, 20 and 100 cases and normal, skewed (exponential) and -1/0/+1 differences with true
mean 0.1, prints the share of datasets whose interval holds the true mean, for the
percentile bootstrap, BCa and Student's t (scipy, on the same datasets) and ours. Needs the
test extra (numpy, scipy).
"""

from __future__ import annotations

import argparse
import random

import numpy as np
from scipy import stats

from pytest_prompteval.core.stats import studentized_bootstrap

TRUE_MEAN = 0.1
DISTRIBUTIONS = {
    "normal": lambda rng: rng.gauss(TRUE_MEAN, 0.2),
    "skewed": lambda rng: rng.expovariate(5) - 0.2 + TRUE_MEAN,
    "flips": lambda rng: rng.choices((-1.0, 0.0, 1.0), (0.25, 0.4, 0.35))[0],
}


def _scipy(data: list[float], method: str, resamples: int, seed: int) -> tuple[float, float]:
    if len(set(data)) == 1:
        return (data[0], data[0])
    ci = stats.bootstrap(
        (np.array(data),), np.mean, n_resamples=resamples, method=method, random_state=seed
    ).confidence_interval
    return (float(ci.low), float(ci.high))


def _t(data: list[float]) -> tuple[float, float]:
    n, mean, sd = len(data), float(np.mean(data)), float(np.std(data, ddof=1))
    half = stats.t.ppf(0.975, n - 1) * sd / np.sqrt(n)
    return (mean - half, mean + half)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--datasets", type=int, default=1000)
    parser.add_argument("--resamples", type=int, default=999)
    args = parser.parse_args()
    methods = ("percentile", "BCa", "Student t", "studentized (ours)")
    print(f"{'cases':>5}  {'differences':<11}" + "".join(f"{m:>20}" for m in methods))
    for n in (5, 20, 100):
        for name, draw in DISTRIBUTIONS.items():
            rng = random.Random(f"{name}-{n}")
            hits = dict.fromkeys(methods, 0)
            for seed in range(args.datasets):
                data = [draw(rng) for _ in range(n)]
                intervals = {
                    "percentile": _scipy(data, "percentile", args.resamples, seed),
                    "BCa": _scipy(data, "BCa", args.resamples, seed),
                    "Student t": _t(data),
                    "studentized (ours)": studentized_bootstrap(
                        data, resamples=args.resamples, seed=seed
                    ).interval(),
                }
                for method, (low, high) in intervals.items():
                    hits[method] += low <= TRUE_MEAN <= high
            print(
                f"{n:>5}  {name:<11}"
                + "".join(f"{100 * hits[m] / args.datasets:>19.1f}%" for m in methods)
            )


if __name__ == "__main__":
    main()
