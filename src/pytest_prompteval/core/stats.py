"""Statistics as pure functions: paired comparisons and their intervals, multiple-testing
correction, agreement between two scorers, spread of repeated judgements, trend tests."""

from __future__ import annotations

import bisect
import functools
import math
import operator
import random
import statistics
from collections.abc import Sequence
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


@dataclass(frozen=True)
class MeanTest:
    """A mean of paired differences with the studentized bootstrap behind its interval and
    p-value: ``interval(alpha)`` excludes 0 exactly when ``p < alpha``, at any level."""

    n: int
    mean: float
    sd: float
    p: float
    t_star: tuple[float, ...] = ()  # sorted bootstrap t statistics; empty without spread
    #: the range the mean can take (score differences: -1 to 1); the interval is cut to it,
    #: which keeps its coverage and whether it holds 0
    bounds: tuple[float, float] = (-math.inf, math.inf)

    def interval(self, alpha: float = ALPHA) -> tuple[float, float]:
        low, high = self._interval(alpha)
        return (max(low, self.bounds[0]), min(high, self.bounds[1]))

    def _interval(self, alpha: float) -> tuple[float, float]:
        if not self.t_star:
            # All differences equal: the exact sign-flip test inverted. Any other mean leaves
            # every shifted difference with one sign (p = 2 / 2**n), so the interval is the
            # point itself when that rejects, and unbounded when it cannot.
            point = 2.0 ** (1 - self.n) < alpha
            return (self.mean, self.mean) if point else (-math.inf, math.inf)
        # k-th smallest and largest t* with c < k  <=>  (2c + 1) / (B + 1) < alpha.
        k = math.ceil(((len(self.t_star) + 1) * alpha - 1) / 2)
        if k < 1:
            return (-math.inf, math.inf)
        # From the very t the p-value compares with (not from the mean): a t* that ties it
        # up to rounding then puts 0 on the same side of the interval as of the p-value.
        root = math.sqrt(self.n)
        t_obs, se = self.mean / self.sd * root, self.sd / root
        return ((t_obs - self.t_star[-k]) * se, (t_obs - self.t_star[k - 1]) * se)


def studentized_bootstrap(
    differences: Sequence[float],
    *,
    resamples: int = 1999,
    seed: int = 0,
    bounds: tuple[float, float] = (-math.inf, math.inf),
) -> MeanTest:
    """The mean with an equal-tailed studentized (bootstrap-t) interval and the two-sided
    p-value read from the same bootstrap distribution of t: p = (2c + 1) / (resamples + 1),
    c the count of t* at or beyond the observed t in its smaller tail.

    Chosen by simulation over the percentile bootstrap, BCa, Student's t and the inverted
    sign-flip test: the only one within 2.5 points of 95% coverage at 5, 20 and 100 cases for
    normal, skewed and -1/0/+1 differences (tests/test_coverage.py). Resamples with no spread
    get t* = 0 or +-inf, so an interval end may be unbounded rather than falsely narrow.
    """
    n = len(differences)
    if n == 0:
        raise ValueError("a mean of no values")
    mean = statistics.fmean(differences)
    sd = statistics.stdev(differences) if n > 1 else 0.0
    if sd == 0:
        return MeanTest(n, mean, 0.0, 1.0 if mean == 0 else min(1.0, 2.0 ** (1 - n)), (), bounds)
    rng = random.Random(seed)
    root = math.sqrt(n)
    # Centred values keep the one-pass variance below free of cancellation.
    centred = [x - mean for x in differences]
    tiny = 1e-12 * sd
    ts = []
    for _ in range(resamples):
        sample = rng.choices(centred, k=n)
        shift = sum(sample) / n
        var = (sum(map(operator.mul, sample, sample)) - n * shift * shift) / (n - 1)
        if var > tiny * tiny:
            ts.append(shift / math.sqrt(var) * root)
        else:
            ts.append(0.0 if abs(shift) <= tiny else math.copysign(math.inf, shift))
    ts.sort()
    t_obs = mean / sd * root
    tail = min(len(ts) - bisect.bisect_left(ts, t_obs), bisect.bisect_right(ts, t_obs))
    return MeanTest(n, mean, sd, min(1.0, (2 * tail + 1) / (resamples + 1)), tuple(ts), bounds)


def resamples_for(n: int) -> int:
    """Bootstrap resamples that bound pure-Python work on very large suites."""
    return 1999 if n <= 1000 else 499


def t_quantile(q: float, df: int) -> float:
    """Student's t quantile (Cornish-Fisher expansion about the normal one: within 1e-3 of
    the exact value from 5 degrees of freedom at the levels used here)."""
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
    with this spread finds with the given power: (t_{1-a/2} + t_{power}) sd / sqrt(n), at the
    level a the test can attain under alpha and with n - 2 degrees of freedom (the exact
    test's small-sample price; benchmarks/verdict_errors.py checks 80% by simulation). None
    with fewer than three pairs, or when the test cannot reach alpha at all."""
    level = attainable_level(alpha, n)
    if n < 3 or level == 0:
        return None
    df = n - 2
    return (t_quantile(1 - level / 2, df) + t_quantile(power, df)) * sd / math.sqrt(n)


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
#: The interval enumerates every pattern of up to this many differences.
_INVERT_EXHAUSTIVE_UP_TO = 12
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
        """The shifts d the test at level alpha keeps (differences minus d not rejected),
        found by bisection; it holds 0 exactly when p >= alpha."""
        return self._intervals.get(alpha) or self._intervals.setdefault(alpha, self._invert(alpha))

    @functools.cached_property
    def _intervals(self) -> dict[float, tuple[float, float]]:
        return {}

    @functools.cached_property
    def _patterns(self) -> tuple[list[float], list[int], bool]:
        """(signed sums, sums of signs, exhaustive) of the patterns the interval tests
        with: all of them for a few differences, else a seeded draw (the same draw for
        every shift, so that the p-value is a step function of it)."""
        d = self.differences
        n = len(d)
        if n <= _INVERT_EXHAUSTIVE_UP_TO:
            sums, signs = [0.0], [0]
            for x in d:
                sums = [a + x for a in sums] + [a - x for a in sums]
                signs = [c + 1 for c in signs] + [c - 1 for c in signs]
            return sums, signs, True
        tables = _byte_tables(d)
        total, width = math.fsum(d), (n + 7) // 8
        rng = random.Random(self.seed)
        sums, signs = [], []
        for _ in range(MONTE_CARLO):
            bits = rng.getrandbits(n)
            flipped = sum(map(tuple.__getitem__, tables, bits.to_bytes(width, "little")))
            sums.append(total - 2 * flipped)
            signs.append(n - 2 * bits.bit_count())
        return sums, signs, False

    def _p_shifted(self, shift: float) -> float:
        sums, signs, exhaustive = self._patterns
        n = self.n
        observed = abs(math.fsum(self.differences) - n * shift)
        cut = observed - 1e-9 * (sum(abs(x - shift) for x in self.differences) + 1e-6)
        hits = sum(abs(a - shift * c) >= cut for a, c in zip(sums, signs, strict=True))
        return hits / len(sums) if exhaustive else (1 + hits) / (1 + len(sums))

    def _invert(self, alpha: float) -> tuple[float, float]:
        mean, (low_bound, high_bound) = self.mean, self.bounds
        low, high = min(self.differences), max(self.differences)
        ends = []
        for edge, bound in ((low - 1e-9, low_bound), (high + 1e-9, high_bound)):
            if self._p_shifted(edge) >= alpha:  # too few pairs to reject even there
                ends.append(bound)
                continue
            inside, outside = mean, edge
            for _ in range(25):
                middle = (inside + outside) / 2
                if self._p_shifted(middle) >= alpha:
                    inside = middle
                else:
                    outside = middle
            ends.append(inside)
        lo, hi = max(ends[0], low_bound), min(ends[1], high_bound)
        # The drawn patterns may judge 0 a little differently from the p-value's own count:
        # the p-value decides, so verdict and interval never disagree.
        rejected = self.log_p < math.log(alpha)
        if rejected and lo <= 0 <= hi:
            lo, hi = (math.ulp(0.0), hi) if mean > 0 else (lo, -math.ulp(0.0))
        elif not rejected and not lo <= 0 <= hi:
            lo, hi = min(lo, 0.0), max(hi, 0.0)
        return lo, hi


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


def binomial_cdf(k: int, n: int, p: float = 0.5) -> float:
    """P(X <= k) for X ~ Binomial(n, p) (0.0 where it underflows: see log_binomial_cdf)."""
    return math.exp(log_binomial_cdf(k, n, p))


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


def proportion_trend(passed: Sequence[int], totals: Sequence[int]) -> Trend | None:
    """Cochran-Armitage test for a linear trend of pass rates over runs 0, 1, 2, ..., each run
    weighted by its number of items. None with fewer than two runs or no variation."""
    if len(totals) < 2 or sum(totals) == 0:
        return None
    total = sum(totals)
    rate = sum(passed) / total
    mean_x = sum(i * t for i, t in enumerate(totals)) / total
    sxx = sum(t * (i - mean_x) ** 2 for i, t in enumerate(totals))
    statistic = sum(
        (i - mean_x) * (c - t * rate) for i, (c, t) in enumerate(zip(passed, totals, strict=True))
    )
    variance = rate * (1 - rate) * sxx
    if variance == 0:
        return None
    z = statistic / math.sqrt(variance)
    return Trend(slope=statistic / sxx, z=z, p=2 * (1 - NORMAL.cdf(abs(z))))
