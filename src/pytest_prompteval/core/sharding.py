"""Sharding across machines, and joining the shards' results again.

A case's shard is a hash of its node id's file and case id (not the version or sample), so
every version and sample of a case runs on the same machine and the split is the same on
every machine and every run. Merged pass@k is computed from the joined per-sample results,
never by averaging the shards' figures.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from pytest_prompteval.core.errors import PromptevalError
from pytest_prompteval.report.summary import summarize_version
from pytest_prompteval.results import StoredRun, load_run


def parse_shard(text: str) -> tuple[int, int]:
    """'2/5' -> (1, 5): the zero-based index and the count."""
    try:
        index, count = (int(part) for part in text.split("/"))
    except ValueError:
        index = count = 0
    if not 1 <= index <= count:
        raise pytest.UsageError(
            f"--prompteval-shard {text!r}: expected I/N with 1 <= I <= N, like 2/5"
        )
    return index - 1, count


def shard_of(nodeid: str, count: int) -> int:
    path, _, name = nodeid.partition("::")
    case_id = name.split("[", 1)[0]
    digest = hashlib.sha256(f"{path}::{case_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % count


def merge_runs(runs: Sequence[StoredRun], ks: Sequence[int]) -> dict[str, dict[str, Any]]:
    """One document per prompt version: the shards' results joined, the summary recomputed."""
    by_version: dict[str, list[StoredRun]] = {}
    for run in runs:
        by_version.setdefault(run.version, []).append(run)
    merged = {}
    for version, parts in by_version.items():
        seen: dict[tuple[str, str, int], Path] = {}
        results = []
        for part in parts:
            for result in part.results:
                key = (result["file"], result["case_id"], result["sample"])
                if key in seen:
                    raise PromptevalError(
                        f"{version}: {key[0]}::{key[1]} sample {key[2]} is in both "
                        f"{seen[key]} and {part.path}; merge shards of one run only"
                    )
                seen[key] = part.path
                results.append(result)
        results.sort(key=lambda r: (r["file"], r["case_id"], r["sample"]))
        summary = summarize_version(version, results, ks)
        merged[version] = {
            "meta": {**parts[0].meta, "merged_from": [str(p.path) for p in parts]},
            "partial": any(p.partial for p in parts),
            "summary": summary.to_json(),
            "results": results,
        }
    return merged


def load_runs(paths: Sequence[Path]) -> list[StoredRun]:
    return [load_run(path) for path in paths]
