"""Aggregate per-item results into per-version figures (pure; the same with or without xdist)."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from pytest_prompteval.core.stats import Agreement, agreement, pass_at_k, percentile

Result = Mapping[str, Any]
GROUPS = ("category", "difficulty", "quality")


def case_key(result: Result) -> tuple[str, str]:
    return (result["file"], result["case_id"])


def sort_results(results: Iterable[Result]) -> list[Result]:
    """A fixed order, so that float sums do not depend on which xdist worker reported first."""
    return sorted(results, key=lambda r: (r["prompt"], r["file"], r["case_id"], r["sample"]))


@dataclass
class VersionSummary:
    version: str
    items: int = 0
    passed: int = 0
    scored: int = 0
    skipped: int = 0
    mean_score: float | None = None
    dimensions: dict[str, float] = field(default_factory=dict)
    pass_at_k: dict[int, float | None] = field(default_factory=dict)
    #: pass@k averaged over the cases of each category / difficulty / quality label
    group_pass_at_k: dict[str, dict[str, dict[int, float | None]]] = field(default_factory=dict)
    #: pass@k of each case ("file::case_id")
    case_pass_at_k: dict[str, dict[int, float]] = field(default_factory=dict)
    max_samples: int = 1
    groups: dict[str, dict[str, tuple[int, int]]] = field(default_factory=dict)
    errors: Counter[str] = field(default_factory=Counter)
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    unpriced: int = 0
    latency_p50_ms: float | None = None
    latency_p95_ms: float | None = None
    replayed: int = 0
    judged: int = 0
    judge_input_tokens: int = 0
    judge_output_tokens: int = 0
    judge_cost_usd: float = 0.0
    agreement: Agreement | None = None
    judge_spread: float | None = None
    failed_assertions: Counter[str] = field(default_factory=Counter)
    code_failures: Counter[str] = field(default_factory=Counter)
    attempts: int = 0

    @property
    def pass_rate(self) -> float:
        """Over the items that ran: those skipped for the budget do not count."""
        ran = self.items - self.skipped
        return self.passed / ran if ran else 0.0

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["pass_rate"] = self.pass_rate
        data["pass_at_k"] = {f"pass@{k}": v for k, v in self.pass_at_k.items()}
        data["group_pass_at_k"] = {
            g: {label: {f"pass@{k}": v for k, v in ks.items()} for label, ks in labels.items()}
            for g, labels in self.group_pass_at_k.items()
        }
        data["case_pass_at_k"] = {
            case: {f"pass@{k}": v for k, v in ks.items()}
            for case, ks in self.case_pass_at_k.items()
        }
        data["groups"] = {
            g: {name: {"passed": p, "total": t} for name, (p, t) in values.items()}
            for g, values in self.groups.items()
        }
        data["errors"] = dict(self.errors)
        data["failed_assertions"] = dict(self.failed_assertions)
        data["code_failures"] = dict(self.code_failures)
        return data


def _mean(values: Sequence[float]) -> float | None:
    return statistics.fmean(values) if values else None


def summarize(
    results: Iterable[Result], order: Sequence[str], ks: Sequence[int] = (1,)
) -> list[VersionSummary]:
    """One summary per version, in ``order`` (then any other version, sorted)."""
    by_version: dict[str, list[Result]] = {}
    for result in sort_results(results):
        by_version.setdefault(result["prompt"], []).append(result)
    names = [v for v in order if v in by_version] + sorted(set(by_version) - set(order))
    return [summarize_version(name, by_version[name], ks) for name in names]


def per_case_counts(results: Sequence[Result]) -> dict[tuple[str, str], tuple[int, int]]:
    """(samples, passed samples) per case: the raw counts pass@k is computed from."""
    counts: dict[tuple[str, str], tuple[int, int]] = {}
    for r in results:
        if r.get("error_type") == "budget":
            continue
        n, c = counts.get(case_key(r), (0, 0))
        counts[case_key(r)] = (n + 1, c + bool(r["passed"]))
    return counts


def mean_pass_at_k(counts: Mapping[Any, tuple[int, int]], k: int) -> float | None:
    values = [pass_at_k(n, c, k) for n, c in counts.values() if n >= k]
    return _mean(values)


def summarize_version(version: str, results: Sequence[Result], ks: Sequence[int]) -> VersionSummary:
    s = VersionSummary(version=version, items=len(results))
    scores = [r["score"] for r in results if r["score"] is not None]
    s.scored = len(scores)
    s.mean_score = _mean(scores)
    dimension_values: dict[str, list[float]] = {}
    latencies = []
    for r in results:
        s.passed += bool(r["passed"])
        if r["error_type"] == "budget":
            s.skipped += 1
        elif r["error_type"]:
            s.errors[r["error_type"]] += 1
        for name, value in r["dimensions"].items():
            dimension_values.setdefault(name, []).append(value)
        for group in GROUPS:
            label = r.get(group) or "-"
            passed, total = s.groups.setdefault(group, {}).get(label, (0, 0))
            s.groups[group][label] = (passed + bool(r["passed"]), total + 1)
        s.input_tokens += r["input_tokens"]
        s.output_tokens += r["output_tokens"]
        if r["response"] is not None:
            if r["cost_usd"] is None:
                s.unpriced += 1
            else:
                s.cost_usd += r["cost_usd"]
        if r["latency_ms"] is not None:
            latencies.append(r["latency_ms"])
        s.replayed += bool(r["replayed"])
        s.judged += bool(r.get("judged"))
        s.judge_input_tokens += r.get("judge_input_tokens", 0)
        s.judge_output_tokens += r.get("judge_output_tokens", 0)
        s.judge_cost_usd += r.get("judge_cost_usd", 0.0)
        s.attempts += r.get("attempts", 1)
        if r.get("error_class"):
            s.code_failures[r["error_class"]] += 1
        for check in r.get("assertions", []):
            if not check["passed"]:
                s.failed_assertions[check["type"]] += 1
    for group in GROUPS:
        s.groups[group] = dict(sorted(s.groups[group].items()))
    s.dimensions = {k: statistics.fmean(v) for k, v in dimension_values.items()}
    if latencies:
        s.latency_p50_ms = percentile(latencies, 50)
        s.latency_p95_ms = percentile(latencies, 95)
    counts = per_case_counts(results)
    s.pass_at_k = {k: mean_pass_at_k(counts, k) for k in ks}
    s.max_samples = max((n for n, _ in counts.values()), default=1)
    s.case_pass_at_k = {
        f"{f}::{c}": {k: pass_at_k(n, passed, k) for k in ks if n >= k}
        for (f, c), (n, passed) in counts.items()
    }
    labels = {case_key(r): r for r in results}
    for group in GROUPS:
        by_label: dict[str, dict[tuple[str, str], tuple[int, int]]] = {}
        for key, value in counts.items():
            by_label.setdefault(labels[key].get(group) or "-", {})[key] = value
        s.group_pass_at_k[group] = {
            label: {k: mean_pass_at_k(cases, k) for k in ks}
            for label, cases in sorted(by_label.items())
        }
    both = [
        r for r in results if r.get("judge_score") is not None and r["automatic_score"] is not None
    ]
    if both and any(r["scorer"] == "hybrid" for r in both):
        s.agreement = agreement(
            [r["automatic_score"] for r in both],
            [r["judge_score"] for r in both],
            [r["threshold"] for r in both],
        )
    spreads = [r["judge_spread"] for r in results if len(r.get("judge_repeats") or ()) > 1]
    s.judge_spread = _mean(spreads)
    return s
