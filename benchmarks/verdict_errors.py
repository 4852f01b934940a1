"""How often the verdict and the gate are wrong, by simulation through the plugin's own
comparison, Holm correction and gate (issue #23).

    python benchmarks/verdict_errors.py [--quick] [--runs N] [--workers 2]

Identical versions (every version draws its answers from the same distribution per case):
for continuous scores, for 80% of cases whose answer never changes (temperature 0) and for
pass/fail only; 10, 20, 50 and 200 cases; 1 and 5 samples; 2, 3, 5 and 8 versions (the
--prompt version compared with each other one, Holm over the comparisons). Prints, per
primary endpoint, the share of runs with any false "better"/"worse" verdict and with a
false significance-gate failure (nominal: 5% each, family-wise), and how often the
new-failures rule (prompteval_max_new_failures = 0) fires, which is a rule, not a test.

Then real differences: runs whose true mean paired difference is the minimum detectable
effect the comparison reports (at the Holm level of 2 and of 8 versions), and the share in
which the same test finds it; 80% is claimed.
"""

from __future__ import annotations

import argparse
import math
import random
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor

from pytest_prompteval.core.result import ItemResult
from pytest_prompteval.core.stats import ALPHA, holm_log, minimum_detectable, sign_flip_test
from pytest_prompteval.report.compare import Comparison, compare, correct
from pytest_prompteval.report.gates import comparison_gates

SIZES = (10, 20, 50, 200)
SAMPLES = (1, 5)
VERSIONS = (2, 3, 5, 8)
KINDS = ("continuous", "80% ties", "pass/fail")
ENDPOINTS = ("pass_rate", "score")
THRESHOLD = 0.7

# per case, a way to draw one sample's score: identical for every version
Draw = Callable[[random.Random], float]


def _case(kind: str, rng: random.Random) -> Draw:
    if kind == "pass/fail":
        p = rng.random()
        return lambda r: 1.0 if r.random() < p else 0.0
    centre = rng.uniform(0.4, 1.0)
    if kind == "80% ties" and rng.random() < 0.8:
        fixed = round(min(1.0, max(0.0, rng.gauss(centre, 0.15))), 3)
        return lambda r: fixed  # the same answer under every version and sample
    return lambda r: min(1.0, max(0.0, r.gauss(centre, 0.15)))


def _results(version: str, cases: list[Draw], samples: int, rng: random.Random) -> list[ItemResult]:
    items = []
    for i, draw in enumerate(cases):
        for s in range(samples):
            score = draw(rng)
            passed = score >= THRESHOLD
            items.append(
                ItemResult(
                    case_id=f"c{i}",
                    file="c.yaml",
                    prompt=version,
                    sample=s,
                    score=score,
                    passed=passed,
                    outcome="passed" if passed else "failed",
                )
            )
    return items


def _null_cell(args: tuple[str, int, int, int]) -> dict[str, list[int]]:
    """Counts over ``runs`` identical-version runs: per endpoint and number of versions,
    [false verdicts, false significance-gate failures, new-failure rule firings]."""
    kind, n, samples, runs = args
    rng = random.Random(f"{kind}-{n}-{samples}")
    counts = {f"{e}/{m}": [0, 0, 0] for e in ENDPOINTS for m in VERSIONS}
    for _ in range(runs):
        cases = [_case(kind, rng) for _ in range(n)]
        first = _results("v0", cases, samples, rng)
        comparisons: list[Comparison] = [
            compare(first, _results(f"v{j}", cases, samples, rng), ("v0", f"v{j}"), ks=(),
                    min_effect=0.02)
            for j in range(1, max(VERSIONS))
        ]  # fmt: skip
        for endpoint in ENDPOINTS:
            for m in VERSIONS:
                family = comparisons[: m - 1]
                for c in family:
                    c.primary = endpoint
                correct(family)
                tally = counts[f"{endpoint}/{m}"]
                tally[0] += any(c.significant for c in family)
                tally[1] += bool(comparison_gates(family, "v0", max_new_failures=10**9))
                tally[2] += any(c.new_failures("v0") for c in family)
    return counts


def _power_cell(args: tuple[int, int, int]) -> tuple[float, float]:
    """(claimed minimum detectable effect, share of runs finding it) for normal paired
    differences with sd 0.2: one real comparison among ``versions - 1``, Holm over them."""
    n, versions, runs = args
    rng = random.Random(f"power-{n}-{versions}")
    sd = 0.2
    level = ALPHA / (versions - 1)
    effect = minimum_detectable(sd, n, alpha=level)
    assert effect is not None
    found = 0
    for _ in range(runs):
        real = sign_flip_test([rng.gauss(effect, sd) for _ in range(n)])
        nulls = [sign_flip_test([rng.gauss(0, sd) for _ in range(n)]) for _ in range(versions - 2)]
        adjusted = holm_log([real.log_p] + [t.log_p for t in nulls])
        found += adjusted[0] < math.log(ALPHA)
    return effect, found / runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs (a third of the time)")
    parser.add_argument("--runs", type=int, help="identical-version runs per cell")
    parser.add_argument("--workers", type=int, default=2)
    options = parser.parse_args()
    runs = options.runs or (100 if options.quick else 300)
    power_runs = 200 if options.quick else 400
    started = time.perf_counter()
    cells = [(kind, n, samples, runs) for kind in KINDS for n in SIZES for samples in SAMPLES]
    powers = [(n, versions, power_runs) for n in SIZES for versions in (2, 8)]
    with ProcessPoolExecutor(options.workers) as pool:
        null = dict(zip(cells, pool.map(_null_cell, cells), strict=True))
        power = dict(zip(powers, pool.map(_power_cell, powers), strict=True))
    se = math.sqrt(0.05 * 0.95 / runs)
    print(f"identical versions, {runs} runs per row (a 5% rate is measured to +-{2 * se:.1%})")
    for endpoint in ENDPOINTS:
        print(f"\nprimary endpoint {endpoint}: false better/worse % | false gate % (nominal 5)")
        header = "".join(f"{f'{m} versions':>16}" for m in VERSIONS)
        print(f"{'data':<11}{'n':>4}{'samples':>8}{header}{'new-failure rule':>18}")
        worst = [0.0, 0.0]
        for (kind, n, samples, _), counts in null.items():
            cells_text = ""
            for m in VERSIONS:
                verdicts, gates, _rule = counts[f"{endpoint}/{m}"]
                worst = [max(worst[0], verdicts / runs), max(worst[1], gates / runs)]
                cells_text += f"{100 * verdicts / runs:>9.1f} |{100 * gates / runs:>5.1f}"
            rule = counts[f"{endpoint}/2"][2] / runs
            print(f"{kind:<11}{n:>4}{samples:>8}{cells_text}{100 * rule:>17.0f}%")
        print(f"highest: false verdicts {worst[0]:.1%}, false gate failures {worst[1]:.1%}")
    print(
        "\nreal differences (normal, sd 0.2): power at the minimum detectable effect, 80% claimed"
    )
    for (n, versions, _), (effect, found) in power.items():
        print(f"  n={n:<4} {versions} versions (Holm level {ALPHA / (versions - 1):.4f}): "
              f"effect {effect:.3f}, found in {found:.1%}")  # fmt: skip
    print(f"\n{time.perf_counter() - started:.0f} s with {options.workers} workers")


if __name__ == "__main__":
    main()
