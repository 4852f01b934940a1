"""Which cases the judge sees in hybrid mode: a deterministic sample by case id and seed,
the same cases for every prompt version so that comparisons stay fair."""

from __future__ import annotations

import hashlib


def judged(case_id: str, seed: str, rate: float) -> bool:
    digest = hashlib.sha256(f"{seed}\0{case_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < rate
