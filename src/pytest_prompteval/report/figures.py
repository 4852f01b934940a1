"""How every figure is written: one spelling per kind of number, for the terminal, the
Markdown, the HTML, ``prompteval analyze`` and the JUnit properties alike.

- a share of passing samples (pass rate, pass@k, pass^k, accuracy per label) is a
  percentage with one decimal: ``96.3%``; a score (mean score, a dimension) has three
  decimals: ``0.963``;
- a difference is signed (``+25.0%``, ``-0.069``), a level never is (``0.968 [0.940, 0.971]``);
  an interval is written like the figure it bounds;
- money is dollars with four decimals, ``$0.0561``;
- what is not there (no item ran, n < k) is ``-``, never a crash.

Rounding is half up after dropping float noise, so a figure computed in two orders (0.8625
as 0.86249999… or 0.86250000…) reads the same everywhere: 77/80 is ``96.3%`` and ``0.963``.
"""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal

from pytest_prompteval.core.stats import format_p

NONE = "-"


def _round(value: float, places: int) -> Decimal:
    # 12 significant digits drop the noise of float sums; then half up, as people round
    denoised = Decimal(f"{value:.12g}")
    return denoised.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP) + 0


def _fixed(value: float, places: int, signed: bool) -> str:
    rounded = _round(value, places)
    if rounded == 0:
        rounded = abs(rounded)  # -0.000 reads +0.000
    return f"{rounded:+}" if signed else f"{rounded}"


def share(value: float | None, signed: bool = False) -> str:
    """A share of passing samples (or a difference of two, ``signed``) as a percentage."""
    if value is None or not math.isfinite(value):
        return NONE
    return _fixed(100 * value, 1, signed) + "%"


def score(value: float | None, signed: bool = False) -> str:
    """A score in [0, 1], or a difference of two (``signed``)."""
    if value is None or not math.isfinite(value):
        return NONE
    return _fixed(value, 3, signed)


def interval(bounds: tuple[float, float] | None, kind: str = "score", signed: bool = False) -> str:
    """``[low, high]`` written like the figure it bounds (``kind`` share or score)."""
    if bounds is None:
        return NONE
    write = share if kind == "share" else score
    return f"[{write(bounds[0], signed)}, {write(bounds[1], signed)}]"


def exact(value: float | None) -> str:
    """A machine-read figure (a JUnit property): six decimals, empty when there is none."""
    return "" if value is None or not math.isfinite(value) else _fixed(value, 6, False)


def dollars(value: float | None) -> str:
    return NONE if value is None else f"${_fixed(value, 4, False)}"


def money(value: float | None) -> str:
    """Dollars in a table column whose header says ``$``."""
    return NONE if value is None else _fixed(value, 4, False)


def milliseconds(value: float | None) -> str:
    return NONE if value is None else _fixed(value, 0, False)


def p_value(log_p: float) -> str:
    """A p-value from its logarithm (two significant figures, also where it underflows)."""
    return format_p(log_p)


def probability(p: float | None) -> str:
    """A p-value as a number."""
    return NONE if p is None else format_p(math.log(p)) if p > 0 else "0"


def counts(passed: int, total: int) -> str:
    """``3/5 60.0%``; ``-`` without any."""
    return f"{passed}/{total} {share(passed / total)}" if total else NONE


def label(text: str) -> str:
    """A category, difficulty or quality label; an item without one is grouped as ``-``."""
    return text or NONE


def cost_line(
    generation: float, judge: float, live_calls: int, replayed_calls: int, user: float = 0.0
) -> str:
    """What a run cost: live calls are spent now, replays were paid for when recorded.
    ``generation``: the answers' calls; the judge's and simulated users' are apart."""
    total = generation + judge + user
    parts = [(what, cost) for what, cost in (("judge", judge), ("simulated users", user)) if cost]
    split = (
        f" (generation {dollars(generation)}"
        + "".join(f", {what} {dollars(cost)}" for what, cost in parts)
        + ")"
        if parts
        else ""
    )
    if not replayed_calls:
        return f"{dollars(total)} spent on {live_calls} live calls{split}"
    if not live_calls:
        return (
            f"{dollars(0.0)} spent: all {replayed_calls} calls replayed from recordings, which "
            f"cost {dollars(total)} to record{split}"
        )
    return (
        f"{dollars(total)}{split} over {live_calls} live and {replayed_calls} replayed calls "
        "(a replay is free now; its figure is what it cost to record)"
    )
