"""Aggregate per-item results into per-version figures (pure; the same with or without xdist)."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_prompteval.stats import Agreement, agreement


@dataclass
class VersionSummary:
    version: str
    items: int = 0
    passed: int = 0
    scored: int = 0
    mean_score: float | None = None
    dimensions: dict[str, float] = field(default_factory=dict)
    errors: Counter[str] = field(default_factory=Counter)
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    unpriced: int = 0
    mean_latency_ms: float | None = None
    replayed: int = 0
    judged: int = 0
    judge_input_tokens: int = 0
    judge_output_tokens: int = 0
    judge_cost_usd: float = 0.0
    agreement: Agreement | None = None
    judge_spread: float | None = None
    failed_assertions: Counter[str] = field(default_factory=Counter)

    @property
    def pass_rate(self) -> float:
        return self.passed / self.items if self.items else 0.0


def _mean(values: Sequence[float]) -> float | None:
    return statistics.fmean(values) if values else None


def summarize(results: Iterable[Mapping[str, Any]], order: Sequence[str]) -> list[VersionSummary]:
    """One summary per version, in ``order`` (then any other version, sorted).

    Results are sorted by (prompt, case, sample) first, so float sums do not depend on the
    order in which xdist workers reported.
    """
    ordered = sorted(results, key=lambda r: (r["prompt"], r["file"], r["case_id"], r["sample"]))
    by_version: dict[str, list[Mapping[str, Any]]] = {}
    for result in ordered:
        by_version.setdefault(result["prompt"], []).append(result)
    names = [v for v in order if v in by_version] + sorted(set(by_version) - set(order))
    return [_summarize_version(name, by_version[name]) for name in names]


def _summarize_version(version: str, results: list[Mapping[str, Any]]) -> VersionSummary:
    summary = VersionSummary(version=version, items=len(results))
    scores = [r["score"] for r in results if r["score"] is not None]
    summary.scored = len(scores)
    summary.mean_score = _mean(scores)
    dimension_values: dict[str, list[float]] = {}
    latencies = []
    for r in results:
        summary.passed += bool(r["passed"])
        if r["error_type"]:
            summary.errors[r["error_type"]] += 1
        for name, value in r["dimensions"].items():
            dimension_values.setdefault(name, []).append(value)
        summary.input_tokens += r["input_tokens"]
        summary.output_tokens += r["output_tokens"]
        if r["response"] is not None:
            if r["cost_usd"] is None:
                summary.unpriced += 1
            else:
                summary.cost_usd += r["cost_usd"]
        if r["latency_ms"] is not None:
            latencies.append(r["latency_ms"])
        summary.replayed += bool(r["replayed"])
        summary.judged += bool(r.get("judged"))
        summary.judge_input_tokens += r.get("judge_input_tokens", 0)
        summary.judge_output_tokens += r.get("judge_output_tokens", 0)
        summary.judge_cost_usd += r.get("judge_cost_usd", 0.0)
        for check in r.get("assertions", []):
            if not check["passed"]:
                summary.failed_assertions[check["type"]] += 1
    both = [
        r for r in results if r.get("judge_score") is not None and r["automatic_score"] is not None
    ]
    if both and any(r["scorer"] == "hybrid" for r in both):
        summary.agreement = agreement(
            [r["automatic_score"] for r in both],
            [r["judge_score"] for r in both],
            [r["threshold"] for r in both],
        )
    spreads = [r["judge_spread"] for r in results if len(r.get("judge_repeats") or ()) > 1]
    summary.judge_spread = _mean(spreads)
    summary.dimensions = {k: statistics.fmean(v) for k, v in dimension_values.items()}
    summary.mean_latency_ms = _mean(latencies)
    return summary


def format_summary(summaries: Sequence[VersionSummary]) -> list[str]:
    dims = list(dict.fromkeys(d for s in summaries for d in s.dimensions))
    header = [
        "version",
        "items",
        "passed",
        "pass rate",
        "score",
        *dims,
        "in tokens",
        "out tokens",
        "cost $",
        "latency ms",
    ]
    rows = [header]
    for s in summaries:
        rows.append(
            [
                s.version,
                str(s.items),
                str(s.passed),
                f"{s.pass_rate:.1%}",
                _fmt(s.mean_score),
                *(_fmt(s.dimensions.get(d)) for d in dims),
                str(s.input_tokens),
                str(s.output_tokens),
                f"{s.cost_usd:.4f}" + ("*" if s.unpriced else ""),
                _fmt(s.mean_latency_ms, "{:.0f}"),
            ]
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = [
        "  ".join(
            cell.ljust(w) if i == 0 else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        )
        for row in rows
    ]
    for s in summaries:
        notes = []
        if s.errors:
            notes.append("errors: " + ", ".join(f"{k} {n}" for k, n in s.errors.most_common()))
        if s.failed_assertions:
            notes.append(
                "failed assertions: "
                + ", ".join(f"{k} {n}" for k, n in s.failed_assertions.most_common())
            )
        if s.judged:
            notes.append(
                f"judge: {s.judged} judged, {s.judge_input_tokens} in / "
                f"{s.judge_output_tokens} out tokens, ${s.judge_cost_usd:.4f}"
            )
        if s.agreement is not None:
            a = s.agreement
            notes.append(
                f"automatic vs judge on {a.n}: Spearman {_fmt(a.spearman, '{:.2f}')}, "
                f"mean |diff| {_fmt(a.mean_abs_diff, '{:.3f}')}, "
                f"pass/fail agree {_fmt(a.pass_agreement, '{:.0%}')}"
            )
        if s.judge_spread is not None:
            notes.append(f"judge spread over repeats: mean {s.judge_spread:.3f}")
        if s.unpriced:
            notes.append(f"{s.unpriced} response(s) from models without a price (* cost)")
        notes.append(f"{s.replayed}/{s.items} replayed from recordings")
        lines.extend(f"{s.version}: {note}" for note in notes)
    return lines


def _fmt(value: float | None, pattern: str = "{:.3f}") -> str:
    return "-" if value is None else pattern.format(value)
