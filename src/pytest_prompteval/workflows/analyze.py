"""``prompteval analyze``: every stored run, per version over time — score and pass rate,
windowed accuracy and trend (the seed's accuracy monitoring), the best version, regressions
between consecutive runs of a version, and human-versus-automatic agreement from reviews."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Any

from pytest_prompteval.core.history import StoredRun, load_run
from pytest_prompteval.core.stats import spearman
from pytest_prompteval.report.compare import compare
from pytest_prompteval.report.html import PALETTE
from pytest_prompteval.workflows.review import load_reviews


@dataclass
class VersionHistory:
    version: str
    runs: list[StoredRun] = field(default_factory=list)

    def points(self) -> list[tuple[str, float | None, float]]:
        """(started_at, mean score, pass rate) per run, oldest first."""
        out = []
        for run in self.runs:
            scores = [r["score"] for r in run.results if r["score"] is not None]
            passed = sum(bool(r["passed"]) for r in run.results)
            out.append(
                (
                    str(run.meta.get("started_at", run.path.stem)),
                    statistics.fmean(scores) if scores else None,
                    passed / len(run.results) if run.results else 0.0,
                )
            )
        return out


def load_history(directory: Path) -> dict[str, VersionHistory]:
    runs = [
        load_run(p)
        for p in sorted(directory.glob("*.json*"))
        if p.suffix in (".json", ".jsonl") and not p.name.endswith(".review.json")
    ]
    histories: dict[str, VersionHistory] = {}
    for run in sorted(runs, key=lambda r: (str(r.meta.get("started_at", "")), r.path.name)):
        histories.setdefault(run.version, VersionHistory(run.version)).runs.append(run)
    return histories


def trend(values: Sequence[float]) -> float | None:
    """Least-squares slope of the values per run; None with fewer than two."""
    if len(values) < 2:
        return None
    xs = range(len(values))
    mx, my = statistics.fmean(xs), statistics.fmean(values)
    denominator = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, values, strict=True)) / denominator


def _word(slope: float | None) -> str:
    if slope is None:
        return "-"
    return "improving" if slope > 0.005 else "declining" if slope < -0.005 else "flat"


def analyze(directory: Path, window: int) -> dict[str, Any]:
    histories = load_history(directory)
    versions: dict[str, Any] = {}
    for version, history in histories.items():
        points = history.points()
        rates = [p[2] for p in points]
        regressions = []
        for before, after in zip(history.runs, history.runs[1:], strict=False):
            c = compare(before.results, after.results, (before.path.name, after.path.name))
            if c.regressions:
                regressions.append(
                    {"from": before.path.name, "to": after.path.name, "cases": c.regressions}
                )
        versions[version] = {
            "runs": [
                {
                    "file": run.path.name,
                    "started_at": p[0],
                    "mean_score": p[1],
                    "pass_rate": p[2],
                    "partial": run.partial,
                }
                for run, p in zip(history.runs, points, strict=True)
            ],
            "windowed_pass_rate": statistics.fmean(rates[-window:]) if rates else None,
            "trend_per_run": trend(rates),
            "regressions": regressions,
            "agreement": _review_agreement(history.runs),
        }
    latest = {
        v: d["runs"][-1]["mean_score"]
        for v, d in versions.items()
        if d["runs"][-1]["mean_score"] is not None
    }
    return {"versions": versions, "best": max(latest, key=latest.__getitem__) if latest else None}


def _review_agreement(runs: Sequence[StoredRun]) -> dict[str, Any] | None:
    human, automatic, judge_h, judge = [], [], [], []
    for run in runs:
        by_key = {(r["file"], r["case_id"], r["sample"]): r for r in run.results}
        for key, review in load_reviews(run.path).items():
            result = by_key.get(key)
            if result is None or review.get("skipped"):
                continue
            if result.get("automatic_score") is not None or result["score"] is not None:
                human.append(review["human_score"])
                automatic.append(result.get("automatic_score") or result["score"])
            if result.get("judge_score") is not None:
                judge_h.append(review["human_score"])
                judge.append(result["judge_score"])
    if not human:
        return None
    return {
        "reviewed": len(human),
        "human_vs_automatic_spearman": spearman(human, automatic),
        "human_vs_automatic_mean_abs_diff": statistics.fmean(
            abs(a - b) for a, b in zip(human, automatic, strict=True)
        ),
        "human_vs_judge_spearman": spearman(judge_h, judge) if judge else None,
    }


def render_text(report: dict[str, Any], window: int) -> list[str]:
    from pytest_prompteval.report.terminal import table

    lines = []
    rows = [["version", "runs", "latest score", "latest pass", f"pass (last {window})", "trend"]]
    for version, data in report["versions"].items():
        last = data["runs"][-1]
        rows.append(
            [
                version,
                str(len(data["runs"])),
                "-" if last["mean_score"] is None else f"{last['mean_score']:.3f}",
                f"{last['pass_rate']:.1%}",
                f"{data['windowed_pass_rate']:.1%}",
                _word(data["trend_per_run"]),
            ]
        )
    lines += table(rows)
    if report["best"]:
        lines.append(f"best version (latest run's mean score): {report['best']}")
    for version, data in report["versions"].items():
        for run in data["runs"]:
            if run["partial"]:
                lines.append(f"{version}: {run['file']} is partial (interrupted run)")
        for r in data["regressions"]:
            lines.append(
                f"{version}: {len(r['cases'])} regressions from {r['from']} to "
                f"{r['to']}: {', '.join(r['cases'][:10])}"
            )
        a = data["agreement"]
        if a:
            rho = a["human_vs_automatic_spearman"]
            lines.append(
                f"{version}: {a['reviewed']} human reviews; human vs automatic Spearman "
                f"{'-' if rho is None else f'{rho:.2f}'}, mean |diff| "
                f"{a['human_vs_automatic_mean_abs_diff']:.3f}"
                + (
                    ""
                    if a["human_vs_judge_spearman"] is None
                    else f"; human vs judge Spearman {a['human_vs_judge_spearman']:.2f}"
                )
            )
    return lines


def render_html(report: dict[str, Any]) -> str:
    """A self-contained page with an SVG line chart of mean score per run, per version."""
    width, height, left, top, bottom = 640, 260, 40, 20, 30
    series = list(report["versions"].items())
    longest = max((len(d["runs"]) for _, d in series), default=1)
    step = (width - left - 20) / max(longest - 1, 1)
    plot = height - top - bottom
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}">']
    for tick in (0, 0.25, 0.5, 0.75, 1):
        y = top + plot * (1 - tick)
        parts.append(
            f'<line x1="{left}" x2="{width - 20}" y1="{y:.1f}" y2="{y:.1f}" '
            f'stroke="#e5e5e5"/><text x="{left - 4}" y="{y + 4:.1f}" font-size="10" '
            f'text-anchor="end">{tick:g}</text>'
        )
    for i, (version, data) in enumerate(series):
        points = [
            (left + j * step, top + plot * (1 - (r["mean_score"] or 0)))
            for j, r in enumerate(data["runs"])
        ]
        colour = PALETTE[i % len(PALETTE)]
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
        parts.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{path}"/>')
        parts += [f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{colour}"/>' for x, y in points]
        parts.append(
            f'<text x="{width - 150}" y="{top + 14 * (i + 1)}" font-size="11" '
            f'fill="{colour}">{escape(version)}</text>'
        )
    parts.append("</svg>")
    rows = "".join(
        f"<tr><td>{escape(v)}</td><td>{len(d['runs'])}</td><td>{d['windowed_pass_rate']:.1%}"
        f"</td><td>{_word(d['trend_per_run'])}</td></tr>"
        for v, d in series
    )
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>prompteval '
        "trends</title><style>body{font:14px system-ui,sans-serif;margin:24px}td,th{border:"
        "1px solid #ddd;padding:4px 8px}table{border-collapse:collapse}</style></head><body>"
        "<h1>Mean score per run</h1>"
        + "".join(parts)
        + "<table><tr><th>version</th><th>runs</th><th>windowed pass rate</th><th>trend</th>"
        f"</tr>{rows}</table><p>best: {escape(str(report['best']))}</p></body></html>\n"
    )
