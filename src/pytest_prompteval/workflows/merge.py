"""``prompteval merge``: the shards' results joined into one run per prompt version.

Merged pass@k is computed from the joined per-sample results, never by averaging the
shards' figures.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_prompteval.core.errors import PromptevalError
from pytest_prompteval.core.history import StoredRun, load_run
from pytest_prompteval.report.summary import summarize_version


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
                key = (result.file, result.case_id, result.sample)
                if key in seen:
                    raise PromptevalError(
                        f"{version}: {key[0]}::{key[1]} sample {key[2]} is in both "
                        f"{seen[key]} and {part.path}; merge shards of one run only"
                    )
                seen[key] = part.path
                results.append(result)
        results.sort(key=lambda r: (r.file, r.case_id, r.sample))
        summary = summarize_version(version, results, ks)
        merged[version] = {
            "meta": {**parts[0].meta, "merged_from": [str(p.path) for p in parts]},
            "partial": any(p.partial for p in parts),
            "summary": summary.to_json(),
            "results": [r.to_json() for r in results],
        }
    return merged


def load_runs(paths: Sequence[Path]) -> list[StoredRun]:
    return [load_run(path) for path in paths]


def missing_shards(runs: Sequence[StoredRun]) -> list[str]:
    """Per version, the shards (``I/N``) no given file covers: a merge of some of the shards
    is not the whole suite, and says so."""
    missing = []
    by_version: dict[str, list[StoredRun]] = {}
    for run in runs:
        by_version.setdefault(run.version, []).append(run)
    for version, parts in sorted(by_version.items()):
        shards = [tuple(p.meta["shard"]) for p in parts if p.meta.get("shard")]
        for count in sorted({n for _, n in shards}):
            have = {i for i, n in shards if n == count}
            missing += [f"{version} {i + 1}/{count}" for i in range(count) if i not in have]
    return missing
