from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Score:
    """An overall score in [0, 1], its dimensions, and what explains it."""

    value: float
    dimensions: dict[str, float]
    missing_topics: list[str] = field(default_factory=list)
    incorrect_claims: list[str] = field(default_factory=list)
    #: the judge's notes on the answer
    notes: str = ""
    #: anything else a scorer explains (the automatic scorer: covered_topics, missing_terms)
    details: dict[str, Any] = field(default_factory=dict)
