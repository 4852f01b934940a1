from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Score:
    """An overall score in [0, 1], its dimensions, and what explains it."""

    value: float
    dimensions: dict[str, float]
    details: dict[str, Any] = field(default_factory=dict)
