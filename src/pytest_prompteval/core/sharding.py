"""Sharding across machines: which shard a case belongs to.

A case's shard is a hash of its node id's file and case id (not the version or sample), so
every version and sample of a case runs on the same machine and the split is the same on
every machine and every run.
"""

from __future__ import annotations

import hashlib


def parse_shard(text: str) -> tuple[int, int]:
    """'2/5' -> (1, 5): the zero-based index and the count."""
    try:
        index, count = (int(part) for part in text.split("/"))
    except ValueError:
        index = count = 0
    if not 1 <= index <= count:
        raise ValueError("I/N with 1 <= I <= N, like 2/5")
    return index - 1, count


def shard_of(nodeid: str, count: int) -> int:
    path, _, name = nodeid.partition("::")
    case_id = name.split("[", 1)[0]
    digest = hashlib.sha256(f"{path}::{case_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % count
