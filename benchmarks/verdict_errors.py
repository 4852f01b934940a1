"""How often the verdict and the gate are wrong, by simulation through the plugin's own
comparison, Holm correction and gate (issue #23).

    python benchmarks/verdict_errors.py [--quick] [--runs N] [--workers 2] [--power-only]

Identical versions (every version draws its answers from the same distribution per case):
for continuous scores, for 80% of cases whose answer never changes (temperature 0) and for
pass/fail only; 10, 20, 50 and 200 cases; 1 and 5 samples; 2, 3, 5 and 8 versions (the
--prompt version compared with each other one, Holm over the comparisons). Prints, per
primary endpoint, the share of runs with any false "better"/"worse" verdict and with a
false significance-gate failure (nominal: 5% each, family-wise), and how often a case
newly fails (reliably: its own exact test, Tarone's level), which with
prompteval_max_new_failures = 0 fails the gate.

Then real differences: runs whose true mean paired difference is the minimum detectable
effect the comparison reports (at the Holm level of 2 and of 8 versions), and the share in
which the same test finds it; 80% is claimed: normal differences (the t formula, or the
sign-flip test's simulated power where its level leaves it few sign patterns) and
pass/fail flips (McNemar's exact power, given the share of cases that change).

Then identical versions where the earlier rounds went wrong: ``--prompteval-stop-early``
(5 samples, min_pass 4; a full baseline against a stopped run, and both stopped), 1,025
and 2,000 cases, and the CI recipe's own settings (examples/ci/github-actions.yml: 5
samples, gates mode, prompteval_max_new_failures 0) with 10% and 30% mildly flaky cases,
beside the recipe as it was (min_pass 0.8, max-regression 0.05, a changed verdict = a new
failure).
"""

from __future__ import annotations

import argparse
import math
import random
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor

from pytest_prompteval.core.minpass import needed
from pytest_prompteval.core.result import ItemResult
from pytest_prompteval.core.stats import (
    ALPHA,
    holm_log,
    mcnemar_detectable,
    minimum_detectable,
    sign_flip_test,
)
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
    [false verdicts, false significance-gate failures, reliable new failures (any)]."""
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


def _item(version: str, case: int, sample: int, passed: bool, **extra: object) -> ItemResult:
    return ItemResult(
        case_id=f"c{case}",
        file="c.yaml",
        prompt=version,
        sample=sample,
        score=0.9 if passed else 0.1,
        passed=passed,
        outcome="passed" if passed else "failed",
        **extra,  # type: ignore[arg-type]
    )


def _mcnemar_power_cell(args: tuple[int, float, int, int]) -> tuple[float, float]:
    """(the pass rate difference the comparison states at this share of changed cases,
    share of runs finding it): pass/fail flips, one real comparison among versions - 1."""
    n, changed, versions, runs = args
    rng = random.Random(f"mcnemar-{n}-{changed}-{versions}")
    effect = mcnemar_detectable(n, changed, alpha=ALPHA / (versions - 1))
    assert effect is not None
    up, down = (changed + effect) / 2, (changed - effect) / 2

    def flips(up: float, down: float) -> list[float]:
        return [
            1.0 if (u := rng.random()) < up else -1.0 if u < up + down else 0.0 for _ in range(n)
        ]

    found = 0
    for _ in range(runs):
        real = sign_flip_test(flips(up, down))
        nulls = [sign_flip_test(flips(changed / 2, changed / 2)) for _ in range(versions - 2)]
        found += holm_log([real.log_p] + [t.log_p for t in nulls])[0] < math.log(ALPHA)
    return effect, found / runs


def _stopped(
    version: str, chances: list[float], stop_early: bool, rng: random.Random
) -> list[ItemResult]:
    """5 samples a case under min_pass 4, drawn until the verdict is decided with stop-early."""
    items = []
    for case, p in enumerate(chances):
        passed = 0
        for sample in range(5):
            if stop_early and (passed >= 4 or passed + 5 - sample < 4):
                break
            ok = rng.random() < p
            items.append(_item(version, case, sample, ok, samples=5, min_pass=4))
            passed += ok
    return items


def _stop_early_cell(args: tuple[int, bool, int]) -> tuple[int, int]:
    """(false verdicts, false gate failures) over identical-version runs with stop-early."""
    n, both, runs = args
    rng = random.Random(f"stop-{n}-{both}")
    verdicts = gates = 0
    for _ in range(runs):
        chances = [rng.random() for _ in range(n)]
        c = compare(
            _stopped("v0", chances, both, rng), _stopped("v1", chances, True, rng), ("v0", "v1")
        )
        verdicts += c.significant
        gates += bool(comparison_gates([c], "v1", max_new_failures=0))
    return verdicts, gates


def _recipe_cell(args: tuple[int, float, int]) -> tuple[int, int]:
    """(the recipe's gate failures, the former recipe's) over identical-version runs: 5
    samples; the flaky share of cases pass each sample with a chance from 0.6 to 0.95, the
    others always pass (9 in 10) or always fail."""
    n, flaky, runs = args
    rng = random.Random(f"recipe-{n}-{flaky}")
    now = before = 0
    for _ in range(runs):
        chances = [
            rng.uniform(0.6, 0.95) if rng.random() < flaky else float(rng.random() < 0.9)
            for _ in range(n)
        ]
        sides = [
            [
                _item(v, case, s, rng.random() < p, samples=5)
                for case, p in enumerate(chances)
                for s in range(5)
            ]
            for v in ("main", "pr")
        ]
        c = compare(sides[0], sides[1], ("main", "pr"), ks=(), min_effect=0.02)
        now += bool(comparison_gates([c], "pr", max_new_failures=0))
        # as it was: min_pass 0.8 on the pr's own cases, max-regression 0.05 on the mean
        # score, and every changed verdict a new failure
        old = [
            _item(x.prompt, int(x.case_id[1:]), x.sample, bool(x.passed), samples=5, min_pass=0.8)
            for x in sides[1]
        ]
        own: dict[str, list[bool]] = {}
        for x in old:
            own.setdefault(x.case_id, []).append(bool(x.passed))
        fails_min_pass = any(sum(v) < needed(0.8, len(v)) for v in own.values())
        c_old = compare(
            [
                _item(
                    x.prompt, int(x.case_id[1:]), x.sample, bool(x.passed), samples=5, min_pass=0.8
                )
                for x in sides[0]
            ],
            old,
            ("main", "pr"),
            ks=(),
            min_effect=0.02,
        )
        regressed = c_old.mean_diff is not None and -c_old.mean_diff > 0.05
        before += (
            fails_min_pass or regressed or bool(c_old.regressions) or c_old.worse_side() == "pr"
        )
    return now, before


def _large_cell(args: tuple[str, int, int]) -> tuple[int, int]:
    """(false verdicts, false gate failures with max_new_failures 0) at 1,025+ cases."""
    kind, n, runs = args
    rng = random.Random(f"large-{kind}-{n}")
    verdicts = gates = 0
    for _ in range(runs):
        cases = [_case(kind, rng) for _ in range(n)]
        c = compare(_results("v0", cases, 1, rng), _results("v1", cases, 1, rng), ("v0", "v1"),
                    ks=(), min_effect=0.02)  # fmt: skip
        assert c.detectable is None or c.detectable > 0  # the power figure holds too
        verdicts += c.significant
        gates += bool(comparison_gates([c], "v1", max_new_failures=0))
    return verdicts, gates


def _print_power(
    power: dict[tuple[int, int, int], tuple[float, float]],
    flip_power: dict[tuple[int, float, int, int], tuple[float, float]],
) -> None:
    print(
        "\nreal differences (normal, sd 0.2): power at the minimum detectable effect, 80% claimed"
    )
    for (n, versions, _), (effect, found) in power.items():
        print(f"  n={n:<4} {versions} versions (Holm level {ALPHA / (versions - 1):.4f}): "
              f"effect {effect:.3f}, found in {found:.1%}")  # fmt: skip
    print("\nreal differences (pass/fail flips, McNemar): power at the stated difference, 80%")
    for (n, changed, versions, _), (effect, found) in flip_power.items():
        print(f"  n={n:<5} {changed:.0%} of cases change, {versions} versions: "
              f"difference {effect:.3f}, found in {found:.1%}")  # fmt: skip


def _power_only(runs: int, workers: int) -> None:
    started = time.perf_counter()
    powers = [(n, versions, runs) for n in SIZES[:3] for versions in (2, 8)]
    flips = [
        (n, changed, versions, runs) for n, changed in ((20, 0.6), (50, 0.3)) for versions in (2, 8)
    ]
    with ProcessPoolExecutor(workers) as pool:
        power = dict(zip(powers, pool.map(_power_cell, powers), strict=True))
        flip_power = dict(zip(flips, pool.map(_mcnemar_power_cell, flips), strict=True))
    print(f"{runs} runs per row (80% is measured to +-{2 * math.sqrt(0.16 / runs):.1%})")
    _print_power(power, flip_power)
    print(f"\n{time.perf_counter() - started:.0f} s with {workers} workers")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs (a third of the time)")
    parser.add_argument("--runs", type=int, help="identical-version runs per cell")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--power-only",
        action="store_true",
        help="only the real differences at 10, 20 and 50 cases (a few minutes)",
    )
    options = parser.parse_args()
    if options.power_only:
        _power_only(200 if options.quick else 400, options.workers)
        return
    runs = options.runs or (100 if options.quick else 300)
    power_runs = 200 if options.quick else 400
    started = time.perf_counter()
    cells = [(kind, n, samples, runs) for kind in KINDS for n in SIZES for samples in SAMPLES]
    powers = [(n, versions, power_runs) for n in SIZES for versions in (2, 8)]
    flips = [
        (n, changed, versions, power_runs)
        for n, changed in ((20, 0.6), (50, 0.3), (200, 0.3), (1025, 0.3))
        for versions in (2, 8)
    ]
    stops = [(n, both, runs) for n in (50, 200) for both in (False, True)]
    recipes = [(n, flaky, runs) for n in (20, 50, 200) for flaky in (0.1, 0.3)]
    large_runs = max(50, runs // 3)
    larges = [(kind, n, large_runs) for kind in ("pass/fail", "continuous") for n in (1025, 2000)]
    with ProcessPoolExecutor(options.workers) as pool:
        null = dict(zip(cells, pool.map(_null_cell, cells), strict=True))
        power = dict(zip(powers, pool.map(_power_cell, powers), strict=True))
        flip_power = dict(zip(flips, pool.map(_mcnemar_power_cell, flips), strict=True))
        stop = dict(zip(stops, pool.map(_stop_early_cell, stops), strict=True))
        recipe = dict(zip(recipes, pool.map(_recipe_cell, recipes), strict=True))
        large = dict(zip(larges, pool.map(_large_cell, larges), strict=True))
    se = math.sqrt(0.05 * 0.95 / runs)
    print(f"identical versions, {runs} runs per row (a 5% rate is measured to +-{2 * se:.1%})")
    for endpoint in ENDPOINTS:
        print(f"\nprimary endpoint {endpoint}: false better/worse % | false gate % (nominal 5)")
        header = "".join(f"{f'{m} versions':>16}" for m in VERSIONS)
        print(f"{'data':<11}{'n':>4}{'samples':>8}{header}{'newly fails':>18}")
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
    _print_power(power, flip_power)
    print(f"\nstop-early (5 samples, min_pass 4), identical versions, {runs} runs: "
          "false verdicts % | false gate % (nominal 5)")  # fmt: skip
    for (n, both, _), (verdicts, gates) in stop.items():
        sides = "both stopped" if both else "full baseline, stopped run"
        print(f"  n={n:<4} {sides:<27}{100 * verdicts / runs:>6.1f} |{100 * gates / runs:>5.1f}")
    print(f"\n1,025+ cases, 1 sample, identical versions, {large_runs} runs: "
          "false verdicts % | false gate % (nominal 5)")  # fmt: skip
    for (kind, n, _), (verdicts, gates) in large.items():
        print(f"  n={n:<5} {kind:<11}{100 * verdicts / large_runs:>6.1f} |"
              f"{100 * gates / large_runs:>5.1f}")  # fmt: skip
    print(f"\nthe CI recipe, identical versions, {runs} runs: blocked % now | as it was "
          "(nominal 5)")  # fmt: skip
    for (n, flaky, _), (now, before) in recipe.items():
        print(f"  n={n:<4} {flaky:.0%} mildly flaky cases{100 * now / runs:>8.1f} |"
              f"{100 * before / runs:>6.1f}")  # fmt: skip
    print(f"\n{time.perf_counter() - started:.0f} s with {options.workers} workers")


if __name__ == "__main__":
    main()
