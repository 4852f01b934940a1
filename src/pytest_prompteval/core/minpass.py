"""``min_pass``: how many of a case's samples must pass, a setting (option, ini) and a case
field, read by the items, the stop-early tally and the reports alike."""

from __future__ import annotations

import math

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
