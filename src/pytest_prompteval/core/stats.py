"""Statistics as pure functions: paired comparisons and their intervals, multiple-testing
correction, agreement between two scorers, spread of repeated judgements, trend tests."""

from __future__ import annotations

import bisect
import functools
import math
import random
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass


def ranks(values: Sequence[float]) -> list[float]:
    """1-based ranks, ties sharing the mean of the ranks they span."""
    order = sorted(range(len(values)), key=values.__getitem__)
    result = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            result[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return result


def pearson(x: Sequence[float], y: Sequence[float]) -> float | None:
    if len(x) != len(y) or len(x) < 2:
        return None
    mx, my = statistics.fmean(x), statistics.fmean(y)
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y, strict=True))
    sxx = sum((a - mx) ** 2 for a in x)
    syy = sum((b - my) ** 2 for b in y)
    if sxx == 0 or syy == 0:
        return None  # a constant series has no correlation
    return max(-1.0, min(1.0, sxy / math.sqrt(sxx * syy)))


def spearman(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Spearman's rank correlation (Pearson on tie-averaged ranks); None when undefined."""
    if len(x) != len(y) or len(x) < 2:
        return None
    return pearson(ranks(x), ranks(y))


@dataclass(frozen=True)
class PassFailTable:
    """The 2x2 table of two raters' pass/fail verdicts on the same items."""

    both_pass: int
    first_only: int
    second_only: int
    both_fail: int

    @property
    def n(self) -> int:
        return self.both_pass + self.first_only + self.second_only + self.both_fail

    @property
    def percent_agreement(self) -> float | None:
        return (self.both_pass + self.both_fail) / self.n if self.n else None

    @property
    def kappa(self) -> float | None:
        """Cohen's kappa: agreement beyond what the raters' pass rates give by chance. None
        when chance agreement is already total (both raters constant and equal)."""
        if not self.n:
            return None
        first = (self.both_pass + self.first_only) / self.n
        second = (self.both_pass + self.second_only) / self.n
        chance = first * second + (1 - first) * (1 - second)
        observed = (self.both_pass + self.both_fail) / self.n
        return None if chance == 1 else (observed - chance) / (1 - chance)

    def describe(self, first: str, second: str) -> str:
        kappa = "-" if self.kappa is None else f"{self.kappa:.2f}"
        return (
            f"pass/fail agree {self.percent_agreement or 0:.0%}, Cohen's kappa {kappa} "
            f"(both pass {self.both_pass}, {first} only {self.first_only}, "
            f"{second} only {self.second_only}, both fail {self.both_fail})"
        )


def pass_fail_table(first: Sequence[bool], second: Sequence[bool]) -> PassFailTable:
    pairs = list(zip(first, second, strict=True))
    return PassFailTable(
        both_pass=sum(a and b for a, b in pairs),
        first_only=sum(a and not b for a, b in pairs),
        second_only=sum(b and not a for a, b in pairs),
        both_fail=sum(not a and not b for a, b in pairs),
    )


@dataclass(frozen=True)
class Agreement:
    n: int
    spearman: float | None
    mean_abs_diff: float | None
    pass_fail: PassFailTable | None

    @property
    def pass_agreement(self) -> float | None:
        return None if self.pass_fail is None else self.pass_fail.percent_agreement


def agreement(
    automatic: Sequence[float], judge: Sequence[float], thresholds: Sequence[float]
) -> Agreement:
    """How far the automatic scores can be trusted, measured on the judged items: rank
    correlation, mean absolute difference, and the 2x2 pass/fail table against each item's
    threshold (percent agreement with Cohen's kappa)."""
    n = len(automatic)
    if n == 0:
        return Agreement(0, None, None, None)
    triples = list(zip(automatic, judge, thresholds, strict=True))
    return Agreement(
        n=n,
        spearman=spearman(automatic, judge),
        mean_abs_diff=statistics.fmean(abs(a - j) for a, j, _ in triples),
        pass_fail=pass_fail_table([a >= t for a, _, t in triples], [j >= t for _, j, t in triples]),
    )


def spread(values: Sequence[float]) -> float:
    """Sample standard deviation of repeated measurements of one thing (0 for a single one):
    unlike the range, it does not grow with the number of repeats."""
    return statistics.stdev(values) if len(values) > 1 else 0.0


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k, 1 - C(n-c, k) / C(n, k), as a product that neither overflows nor
    loses precision: 1 - prod_{i=n-c+1}^{n} (1 - k / i)."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n (n={n}, c={c}, k={k})")
    if n - c < k:
        return 1.0
    product = 1.0
    for i in range(n - c + 1, n + 1):
        product *= 1.0 - k / i
    return 1.0 - product


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (numpy's default), q in [0, 100]."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("percentile of no values")
    position = (len(ordered) - 1) * q / 100
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


ALPHA = 0.05
NORMAL = statistics.NormalDist()


def bounded_mean_interval(
    values: Sequence[float], alpha: float = ALPHA, bounds: tuple[float, float] = (-1.0, 1.0)
) -> tuple[float, float]:
    """An interval for the mean of values that lie within ``bounds``: Student's t interval
    of the values with one pseudo-value at each bound added (Bonett and Price's adjusted
    interval for paired pass rates, for any bounded values), cut to the bounds. Zeros
    count as data, so a run of unchanged cases keeps the width its number allows (20
    zeros: +-13.7% for differences within +-1) instead of collapsing on the point;
    tests/test_coverage.py measures it with ties, skew and pass/fail flips."""
    low, high = bounds
    data = [*values, low, high]
    n = len(data)
    mean = math.fsum(data) / n
    sd = math.sqrt(math.fsum((x - mean) ** 2 for x in data) / (n - 1))
    half = t_quantile(1 - alpha / 2, n - 1) * sd / math.sqrt(n)
    return max(low, mean - half), min(high, mean + half)


def _t_two_sided_mass(t: float, df: int) -> float:
    """P(|T| <= t) for Student's t with integer df (Abramowitz and Stegun 26.7.3-4)."""
    theta = math.atan(t / math.sqrt(df))
    c2, term = math.cos(theta) ** 2, 1.0
    if df % 2 == 0:
        total = 1.0
        for k in range(1, df // 2):
            term *= c2 * (2 * k - 1) / (2 * k)
            total += term
        return math.sin(theta) * total
    total = 0.0 if df == 1 else 1.0
    for k in range(1, (df - 1) // 2):
        term *= c2 * (2 * k) / (2 * k + 1)
        total += term
    return 2 / math.pi * (theta + math.sin(theta) * math.cos(theta) * total)


def t_quantile(q: float, df: int) -> float:
    """Student's t quantile: exact (bisection of the integer-df distribution) up to 60
    degrees of freedom, a Cornish-Fisher expansion about the normal one beyond (within 1e-5
    there at the levels used here)."""
    if df <= 60:
        if q < 0.5:
            return -t_quantile(1 - q, df)
        low, high = 0.0, 1.0
        while _t_two_sided_mass(high, df) < 2 * q - 1:
            low, high = high, 2 * high
        for _ in range(60):
            middle = (low + high) / 2
            low, high = (
                (middle, high) if _t_two_sided_mass(middle, df) < 2 * q - 1 else (low, middle)
            )
        return (low + high) / 2
    z = NORMAL.inv_cdf(q)
    z2 = z * z
    terms = (
        (z2 + 1) * z / 4,
        ((5 * z2 + 16) * z2 + 3) * z / 96,
        (((3 * z2 + 19) * z2 + 17) * z2 - 15) * z / 384,
        ((((79 * z2 + 776) * z2 + 1482) * z2 - 1920) * z2 - 945) * z / 92160,
    )
    return z + math.fsum(term / df ** (i + 1) for i, term in enumerate(terms))


def attainable_level(alpha: float, n: int) -> float:
    """The largest p-value at or under alpha that the two-sided sign-flip test of n distinct
    differences can give: a multiple of 2 / 2**n (0 when even the smallest is over it).
    From 64 pairs that step is under a float's precision of alpha (and 2.0**n overflows
    from 1,025), so the level is alpha itself."""
    if n > 64:
        return alpha
    half = 2.0 ** (n - 1)
    return math.floor(alpha * half + 1e-9) / half


def minimum_detectable(sd: float, n: int, power: float = 0.8, alpha: float = ALPHA) -> float | None:
    """The smallest true mean difference the sign-flip test at level ``alpha`` on n pairs
    with this spread finds with the given power, by the t test it approximates:
    (t_{1-a/2} + t_{power}) sd / sqrt(n) with n - 1 degrees of freedom, at the level a the
    test can attain under alpha. Where that level lets the test reject only the
    SIMULATED_UP_TO most extreme sign patterns, the t test overstates its power (72%, not
    80%, at 10 pairs and 0.00625): there the figure is the larger of that and the test's own
    by a seeded simulation of normal differences (benchmarks/verdict_errors.py checks 80%).
    None with fewer than three pairs, or when the test cannot reach alpha at all."""
    level = attainable_level(alpha, n)
    if n < 3 or level == 0:
        return None
    df = n - 1
    t_figure = (t_quantile(1 - level / 2, df) + t_quantile(power, df)) / math.sqrt(n)
    patterns = round(level * 2.0 ** (n - 1)) if n <= 64 else SIMULATED_UP_TO + 1
    if patterns <= SIMULATED_UP_TO:
        t_figure = max(t_figure, _sign_flip_detectable(n, patterns, power))
    return t_figure * sd


#: The sign-flip test's power is simulated when its level lets it reject this many of the
#: most extreme sign patterns (one side) or fewer; SIGN_FLIP_DRAWS normal samples of n pairs.
SIMULATED_UP_TO = 32
SIGN_FLIP_DRAWS = 500


@functools.lru_cache(maxsize=256)
def _sign_flip_detectable(n: int, patterns: int, power: float) -> float:
    """The mean difference, in standard deviations, at which the sign-flip test rejecting
    the ``patterns`` most extreme sign patterns on each side finds normal differences with
    the given power: per seeded sample the smallest shift it rejects at (bisection), then an
    upper bound of that shift's ``power`` quantile over the samples. Rejecting at least the
    pattern with every difference positive, its power is at least Phi(d)^n, which bounds
    the search."""
    rng = random.Random(f"sign-flip-{n}")
    high = NORMAL.inv_cdf(power ** (1 / n))
    shifts = []
    for _ in range(SIGN_FLIP_DRAWS):
        noise = [rng.gauss(0.0, 1.0) for _ in range(n)]
        low, top = 0.0, high + 6.0
        for _ in range(14):
            middle = (low + top) / 2
            if _rejects_shifted(noise, middle, patterns):
                top = middle
            else:
                low = middle
        shifts.append(top)
    shifts.sort()
    # the quantile's upper bound (two standard errors), so that sampling never understates it
    share = power + 2 * math.sqrt(power * (1 - power) / len(shifts))
    return shifts[min(len(shifts) - 1, math.ceil(share * len(shifts)) - 1)]


def _rejects_shifted(noise: Sequence[float], shift: float, patterns: int) -> bool:
    """Whether the sign-flip test of noise + shift puts the observed sum among the
    ``patterns`` largest of its sign patterns: the patterns at least as large flip a set of
    the differences whose sizes sum to at most the negative ones' (counted up to the cap)."""
    values = [x + shift for x in noise]
    if math.fsum(values) <= 0:
        return False
    sizes = sorted(abs(x) for x in values)
    room = math.fsum(-x for x in values if x < 0) * (1 + 1e-12)
    found, stack = 0, [(0, room)]
    while stack:
        start, left = stack.pop()
        found += 1
        if found > patterns:
            return False
        for k in range(start, len(sizes)):
            if sizes[k] > left:
                break
            stack.append((k + 1, left - sizes[k]))
    return True


#: McNemar's power is summed exactly over the discordant counts while about this many pairs
#: are expected to be discordant; beyond, the test's discreteness costs about a point of
#: power and the normal approximation is used (benchmarks/verdict_errors.py checks both).
MCNEMAR_EXACT_UP_TO = 150


def mcnemar_power_curve(
    n: int, discordant: float, alpha: float = ALPHA
) -> Callable[[float], float]:
    """The exact power of the two-sided exact McNemar test at level alpha on n pairs, each
    discordant with probability ``discordant``, as a function of the difference between
    the two directions (P(+1) - P(-1)): summed over the number D of discordant pairs (within
    7 standard deviations of its mean), each with the counts of the rarer direction the
    test rejects at (2 P(Bin(D, 1/2) <= k) < alpha)."""
    centre, sd = n * discordant, math.sqrt(n * discordant * (1 - discordant))
    low, high = max(1, math.floor(centre - 7 * sd)), min(n, math.ceil(centre + 7 * sd))
    log_alpha = math.log(alpha / 2)
    rows = []  # per D: its probability and log C(D, i) for each rejected count i
    for d in range(low, high + 1):
        head = math.lgamma(d + 1)
        log_c, mass = [], -math.inf
        for i in range(d // 2 + 1):
            term = head - math.lgamma(i + 1) - math.lgamma(d - i + 1)
            mass = _log_add(mass, term - d * math.log(2))
            if mass >= log_alpha:
                break
            log_c.append(term)
        if log_c:
            rows.append((math.exp(_log_binomial_pmf(d, n, discordant)), d, log_c))

    def power(difference: float) -> float:
        up = min(1.0, (discordant + difference) / (2 * discordant))
        total = 0.0
        for weight, d, log_c in rows:
            tails = 0.0
            for p in (up, 1 - up):  # fewer up than down by the cut, or the other way
                if 0 < p < 1:
                    lp, lq = math.log(p), math.log1p(-p)
                    tails += math.fsum(
                        math.exp(c + i * lp + (d - i) * lq) for i, c in enumerate(log_c)
                    )
                elif p == 0:
                    tails += 1.0  # no pair goes that way: the count is 0, always rejected
            total += weight * min(1.0, tails)
        return total

    return power


def _log_add(a: float, b: float) -> float:
    top = max(a, b)
    return top if top == -math.inf else top + math.log(math.exp(a - top) + math.exp(b - top))


def mcnemar_detectable(
    n: int, discordant: float, power: float = 0.8, alpha: float = ALPHA
) -> float | None:
    """The smallest difference in pass rate (P(+1) - P(-1), the mean of the -1/0/+1 flips)
    that the exact McNemar test at level alpha finds with the given power on n pairs whose
    share of discordant pairs is ``discordant``: exact (the sum over discordant counts) up
    to MCNEMAR_EXACT_UP_TO expected discordant pairs, beyond by the normal approximation
    (Connor 1987) with a continuity correction. None when
    even every discordant pair in one direction is not found that often."""
    if n < 1 or not 0 < discordant <= 1:
        return None
    z_alpha = NORMAL.inv_cdf(1 - alpha / 2)

    def approximate(delta: float) -> float:
        spread_ = math.sqrt(max(discordant - delta * delta, 1e-300))
        # with the continuity correction of the count: the exact test needs one pair more
        shift = math.sqrt(n) * delta - z_alpha * math.sqrt(discordant) - 1 / math.sqrt(n)
        return NORMAL.cdf(shift / spread_)

    exact = n * discordant <= MCNEMAR_EXACT_UP_TO
    found = mcnemar_power_curve(n, discordant, alpha) if exact else approximate

    if found(discordant * (1 - 1e-9)) < power:
        return None
    low, high = 0.0, discordant
    for _ in range(24):
        middle = (low + high) / 2
        low, high = (middle, high) if found(middle) < power else (low, middle)
    return high


#: Sign patterns are enumerated in full up to this many non-zero differences (meet in the
#: middle: two halves of 2**12 sums), and drawn at random beyond it.
EXHAUSTIVE_UP_TO = 24
#: Patterns drawn beyond it, at most: the p-value's Monte Carlo standard error is
#: sqrt(p (1 - p) / draws), 0.003 at p = 0.05 after all of them. Drawing stops once
#: SEQUENTIAL_HITS patterns reach the observed sum (Besag and Clifford's sequential p-value,
#: hits / draws, exact as the full draw's (1 + hits) / (1 + draws) is): a p-value far from
#: any level is known after a few hundred draws.
MONTE_CARLO = 4999
SEQUENTIAL_HITS = 50
#: Scaled integer differences (pass shares k/n, scores in hundredths) are counted exactly
#: by convolution up to this much work (differences x support).
_LATTICE_WORK = 4_000_000
_LATTICE_SCALES = (*range(1, 121), 144, 180, 240, 360, 720, 1000)
_ZERO = 1e-12


@dataclass(frozen=True)
class SignFlipTest:
    """The exact permutation (sign-flip) test of paired differences: under "no difference"
    each difference is as likely to have the other sign, so the p-value is the share of the
    2**m sign patterns whose sum is at least as far from 0 as the observed one. A zero
    difference is the same either way, so ties neither inflate nor deflate it. The p-value
    is kept as its natural log (exact at any size where it is counted exactly)."""

    differences: tuple[float, ...]
    log_p: float
    #: "exact" (every pattern counted) or "Monte Carlo" (``patterns`` drawn, seeded)
    method: str
    patterns: int
    #: the range the mean can take; the interval is cut to it
    bounds: tuple[float, float] = (-1.0, 1.0)
    seed: int = 0

    @property
    def n(self) -> int:
        return len(self.differences)

    @property
    def mean(self) -> float:
        return statistics.fmean(self.differences)

    @property
    def sd(self) -> float:
        return statistics.stdev(self.differences) if self.n > 1 else 0.0

    @property
    def p(self) -> float:
        return math.exp(self.log_p)

    @property
    def monte_carlo_error(self) -> float:
        """The p-value's standard error: 0 when every pattern was counted."""
        if self.method == "exact":
            return 0.0
        return math.sqrt(self.p * (1 - self.p) / self.patterns)

    def describe(self) -> str:
        if self.method == "exact":
            return "exact sign-flip test"
        return (
            f"sign-flip test, Monte Carlo over {self.patterns} sign patterns "
            f"(p within +-{2 * self.monte_carlo_error:.2g})"
        )

    def interval(self, alpha: float = ALPHA) -> tuple[float, float]:
        """``bounded_mean_interval`` of the differences, made to agree with the test: it
        holds 0 exactly when p >= alpha (the p-value decides; they differ only where the
        interval's end is near 0)."""
        low, high = bounded_mean_interval(self.differences, alpha, self.bounds)
        rejected = self.log_p < math.log(alpha)
        if rejected and low <= 0 <= high:
            return (math.ulp(0.0), high) if self.mean > 0 else (low, -math.ulp(0.0))
        if not rejected:
            return min(low, 0.0), max(high, 0.0)
        return low, high


def _byte_tables(values: Sequence[float]) -> list[tuple[float, ...]]:
    """Per 8 values, the sum of every subset of them, indexed by its bit mask."""
    tables = []
    for start in range(0, len(values), 8):
        chunk = values[start : start + 8]
        sums = [0.0]
        for x in chunk:
            sums += [a + x for a in sums]
        tables.append(tuple(sums + [0.0] * (256 - len(sums))))
    return tables


def sign_flip_test(
    differences: Sequence[float],
    *,
    bounds: tuple[float, float] = (-1.0, 1.0),
    seed: int = 0,
) -> SignFlipTest:
    """The two-sided sign-flip test of paired differences, counted exactly when it can be:
    equal non-zero differences by the binomial (McNemar's test for pass/fail flips), scaled
    integers (pass shares k/n, rounded scores) by convolution, up to EXHAUSTIVE_UP_TO
    non-zero differences by enumeration; else MONTE_CARLO seeded patterns."""
    values = tuple(float(x) for x in differences)
    if not values:
        raise ValueError("a test of no differences")
    if not all(math.isfinite(x) for x in values):
        raise ValueError("differences must be finite numbers")
    log_p, method, patterns = _sign_flip_log_p([x for x in values if abs(x) > _ZERO], seed)
    return SignFlipTest(values, log_p, method, patterns, bounds, seed)


def _sign_flip_log_p(values: list[float], seed: int) -> tuple[float, str, int]:
    m = len(values)
    observed = abs(math.fsum(values))
    cut = observed - 1e-9 * (math.fsum(map(abs, values)) + 1e-6)
    if m == 0 or cut <= 0:
        return 0.0, "exact", 2**m
    size = abs(values[0])
    if all(abs(abs(x) - size) <= 1e-9 * size for x in values):
        up = sum(x > 0 for x in values)
        return mcnemar_log_p(up, m - up), "exact", 2**m
    lattice = _lattice(values)
    if lattice is not None:
        steps, target = lattice
        # floats count exactly enough up to 2**1000 patterns, faster than integers
        zero: float = 0.0 if m <= 1000 else 0
        counts = [zero + 1]
        for k in steps:
            pad = [zero] * (2 * k)
            counts = [a + b for a, b in zip(counts + pad, pad + counts, strict=True)]
        middle = sum(steps)
        hits = sum(counts[: middle - target + 1]) + sum(counts[middle + target :])
        return min(0.0, math.log(hits) - m * math.log(2)), "exact", 2**m
    if m <= EXHAUSTIVE_UP_TO:
        left, right = _subset_sums(values[: m // 2]), sorted(_subset_sums(values[m // 2 :]))
        hits = sum(
            len(right) - bisect.bisect_left(right, cut - a) + bisect.bisect_right(right, -cut - a)
            for a in left
        )
        return min(0.0, math.log(hits) - m * math.log(2)), "exact", 2**m
    tables, width = _byte_tables(values), (m + 7) // 8
    total = math.fsum(values)
    rng = random.Random(seed)
    hits = 0
    for draws in range(1, MONTE_CARLO + 1):
        bits = rng.getrandbits(m).to_bytes(width, "little")
        hits += abs(total - 2 * sum(map(tuple.__getitem__, tables, bits))) >= cut
        if hits == SEQUENTIAL_HITS:
            return math.log(hits / draws), "Monte Carlo", draws
    return math.log((1 + hits) / (1 + MONTE_CARLO)), "Monte Carlo", MONTE_CARLO


def _subset_sums(values: Sequence[float]) -> list[float]:
    sums = [0.0]
    for x in values:
        sums = [a + x for a in sums] + [a - x for a in sums]
    return sums


def _lattice(values: Sequence[float]) -> tuple[list[int], int] | None:
    """The differences as integers k_i on a common scale (shares k/n of passing samples,
    scores in hundredths) and the observed |sum|, when counting them exactly is cheap."""
    magnitude = math.fsum(map(abs, values))
    for scale in _LATTICE_SCALES:
        if len(values) * scale * magnitude * 2 > _LATTICE_WORK:
            return None
        scaled = [x * scale for x in values]
        ints = [round(x) for x in scaled]
        if all(abs(x - k) <= 1e-6 for x, k in zip(scaled, ints, strict=True)):
            return [abs(k) for k in ints], abs(sum(ints))
    return None


#: The exact paired tests (sign flips, McNemar) reach p < 0.05 only from 6 pairs: 2 / 2**5 =
#: 0.0625 is the smallest p-value five pairs can give.
MIN_PAIRS = 6


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values (family-wise error control), in the input order."""
    logs = holm_log([math.log(p) if p > 0 else -math.inf for p in p_values])
    return [math.exp(x) for x in logs]


def holm_log(log_p: Sequence[float]) -> list[float]:
    """Holm on natural-log p-values, so that p-values too small for a float keep their
    order and size: log min(1, max_{j<=i} (m - j) p_(j))."""
    m = len(log_p)
    order = sorted(range(m), key=log_p.__getitem__)
    adjusted = [0.0] * m
    running = -math.inf
    for rank, index in enumerate(order):
        running = max(running, min(0.0, math.log(m - rank) + log_p[index]))
        adjusted[index] = running
    return adjusted


def format_p(log_p: float) -> str:
    """A p-value from its logarithm, two significant figures, also where it underflows."""
    if log_p > -700:
        return f"{math.exp(log_p):.2g}"
    exponent = log_p / math.log(10)
    power = math.floor(exponent)
    return f"{10 ** (exponent - power):.1f}e{power}"


def _log_binomial_pmf(i: int, n: int, p: float) -> float:
    return (
        math.lgamma(n + 1)
        - math.lgamma(i + 1)
        - math.lgamma(n - i + 1)
        + i * math.log(p)
        + (n - i) * math.log1p(-p)
    )


def log_binomial_cdf(k: int, n: int, p: float = 0.5) -> float:
    """log P(X <= k) for X ~ Binomial(n, p), summed in log space: finite at any n."""
    if k < 0:
        return -math.inf
    if k >= n:
        return 0.0
    logs = [_log_binomial_pmf(i, n, p) for i in range(k + 1)]
    top = max(logs)
    return min(0.0, top + math.log(math.fsum(math.exp(x - top) for x in logs)))


def mcnemar_log_p(only_first: int, only_second: int) -> float:
    """The natural log of the two-sided exact McNemar p-value (0 when nothing changed): the
    p-value itself underflows from about 1,075 one-sided discordant pairs, its log never."""
    discordant = only_first + only_second
    if discordant == 0:
        return 0.0
    return min(0.0, math.log(2) + log_binomial_cdf(min(only_first, only_second), discordant))


def mcnemar_exact(only_first: int, only_second: int) -> float:
    """Two-sided exact McNemar p-value from the discordant pairs: items that pass under one
    version only. 1.0 when there are none; 0.0 where it underflows (use mcnemar_log_p)."""
    return math.exp(mcnemar_log_p(only_first, only_second))


def _log_hypergeometric_pmf(x: int, passed: int, first: int, second: int) -> float:
    """log P(X = x): x of ``passed`` passing samples fall in the second of two groups."""
    total = first + second

    def log_choose(n: int, k: int) -> float:
        return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)

    return log_choose(second, x) + log_choose(first, passed - x) - log_choose(total, passed)


def fisher_log_p(before: tuple[int, int], after: tuple[int, int]) -> float:
    """The log of Fisher's exact p-value, doubled one-sided (capped at 1), that ``after``
    (passed, samples) passes fewer samples than ``before`` by chance: P(X <= passed after)
    given the passing samples of both."""
    (a, n), (b, m) = before, after
    passed = a + b
    lowest = max(0, passed - n)
    logs = [_log_hypergeometric_pmf(x, passed, n, m) for x in range(lowest, b + 1)]
    top = max(logs)
    return min(0.0, math.log(2) + top + math.log(math.fsum(math.exp(x - top) for x in logs)))


def fisher_min_log_p(before: tuple[int, int], after: tuple[int, int]) -> float:
    """The smallest doubled one-sided Fisher log p-value the two groups' sizes and passing
    samples allow, in either direction: Tarone's count of which tests can matter."""
    (a, n), (b, m) = before, after
    passed = a + b
    fewest = max(0, passed - n)  # the most the second group can fall behind
    most = min(m, passed)
    return min(
        0.0,
        math.log(2)
        + min(
            _log_hypergeometric_pmf(fewest, passed, n, m),
            _log_hypergeometric_pmf(passed - most, passed, m, n),
        ),
    )


def tarone_log_level(min_log_p: Sequence[float], alpha: float = ALPHA) -> float:
    """Tarone's Bonferroni level for discrete tests, as a log: alpha / K for the smallest K
    such that at most K of the tests can reach alpha / K at all (a case whose samples all
    pass on both sides can never be significant, so it does not dilute the others)."""
    ordered = sorted(min_log_p)
    for k in range(1, len(ordered) + 1):
        level = math.log(alpha / k)
        if bisect.bisect_right(ordered, level) <= k:
            return level
    return math.log(alpha / max(1, len(ordered)))


def wilson_interval(successes: int, n: int) -> tuple[float, float]:
    """95% Wilson score interval of a proportion (sensible at 0 and n, unlike the Wald one)."""
    if n == 0:
        return (0.0, 1.0)
    z = NORMAL.inv_cdf(1 - ALPHA / 2)
    rate = successes / n
    centre = (rate + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(rate * (1 - rate) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


@dataclass(frozen=True)
class Trend:
    slope: float  # change in pass rate per run, weighted by run size
    z: float
    p: float


def proportion_trend(cases: Sequence[Sequence[tuple[int, int]]]) -> Trend | None:
    """A trend of the pass rate over runs 0, 1, 2, ... that pairs by case: the
    Cochran-Armitage test stratified by case (each case's samples permuted among its own
    runs, Mantel's extension), given per case its (passed, samples) in each run. Re-runs of
    the same cases are not independent draws of a pass rate: a case that always passes or
    always fails says nothing of a trend, and the variance of the others is their own. The
    slope is the within-case change in pass rate per run. None with fewer than two runs or
    no case that varies."""
    if not cases or len(cases[0]) < 2:
        return None
    statistic = variance = spread_ = 0.0
    for runs in cases:
        total = sum(n for _, n in runs)
        passed = sum(c for c, _ in runs)
        if total < 2 or passed in (0, total):
            continue
        centre = sum(i * n for i, (_, n) in enumerate(runs)) / total
        squares = sum(n * (i - centre) ** 2 for i, (_, n) in enumerate(runs))
        statistic += sum((i - centre) * c for i, (c, _) in enumerate(runs))
        # the passing samples drawn at random among the case's samples (hypergeometric)
        variance += passed * (total - passed) / (total * (total - 1)) * squares
        spread_ += squares
    if variance == 0:
        return None
    z = statistic / math.sqrt(variance)
    return Trend(slope=statistic / spread_, z=z, p=2 * (1 - NORMAL.cdf(abs(z))))
