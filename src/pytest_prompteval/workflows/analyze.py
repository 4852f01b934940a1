"""``prompteval analyze``: every stored run, per version over time — score and pass rate
(the summary's denominators), a trend test over comparable runs, the best version with an
interval, regressions between consecutive runs of a version, and human-versus-automatic
agreement from reviews."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Any

from pytest_prompteval.core.history import StoredRun, load_run
from pytest_prompteval.core.stats import (
    ALPHA,
    bounded_mean_interval,
    pass_fail_table,
    proportion_trend,
    spearman,
)
from pytest_prompteval.report import figures
from pytest_prompteval.report.compare import compare
from pytest_prompteval.report.html import PALETTE
from pytest_prompteval.report.summary import (
    case_key,
    counts_in_denominators,
    outcome_of,
    scored_value,
    summarize_version,
)
from pytest_prompteval.workflows.review import automatic_of, load_reviews


@dataclass
class VersionHistory:
    version: str
    runs: list[StoredRun] = field(default_factory=list)


def load_history(directory: Path) -> dict[str, VersionHistory]:
    runs = [
        load_run(p, directory)
        for p in sorted(directory.glob("*.json*"))
        if p.suffix in (".json", ".jsonl") and not p.name.endswith(".review.json")
    ]
    histories: dict[str, VersionHistory] = {}
    for run in sorted(runs, key=lambda r: (str(r.meta.get("started_at", "")), r.path.name)):
        histories.setdefault(run.version, VersionHistory(run.version)).runs.append(run)
    return histories


def run_figures(run: StoredRun) -> dict[str, Any]:
    """One run's row, by the summary's one denominator rule."""
    s = summarize_version(run.version, run.results, (1,))
    return {
        "file": run.path.name,
        "started_at": str(run.meta.get("started_at", run.path.stem)),
        "mean_score": s.mean_score,
        "pass_rate": s.pass_rate,
        "passed": s.passed,
        "ran": s.ran,
        "errored": s.errored,
        "skipped": s.skipped,
        "partial": run.partial,
    }


def trend_test(runs: Sequence[StoredRun]) -> dict[str, Any] | None:
    """The trend of the pass rate over the complete, non-empty runs, paired by case: the
    Cochran-Armitage test stratified by case, on the cases every run ran (so a changed
    suite is no trend)."""
    usable = [r for r in runs if not r.partial and any(map(counts_in_denominators, r.results))]
    if len(usable) < 2:
        return None
    ran = [{case_key(x) for x in r.results if counts_in_denominators(x)} for r in usable]
    common = sorted(set.intersection(*ran))
    table: dict[tuple[str, str], list[tuple[int, int]]] = {key: [] for key in common}
    for run in usable:
        counts = {key: (0, 0) for key in common}
        for x in run.results:
            key = case_key(x)
            if counts_in_denominators(x) and key in counts:
                passed, total = counts[key]
                counts[key] = (passed + (outcome_of(x) == "passed"), total + 1)
        for key in common:
            table[key].append(counts[key])
    test = proportion_trend(list(table.values()))
    return {
        "runs": len(usable),
        "cases": len(common),
        "slope_per_run": None if test is None else test.slope,
        "p_value": None if test is None else test.p,
    }


def trend_word(trend: dict[str, Any] | None) -> str:
    if trend is None:
        return "-"
    p = trend["p_value"]
    if p is None:
        return "no trend (no variation)"
    if p >= ALPHA:
        return f"no trend (p={figures.probability(p)})"
    word = "improving" if trend["slope_per_run"] > 0 else "declining"
    return f"{word} (p={figures.probability(p)})"


def _pooled(rows: Sequence[dict[str, Any]]) -> float | None:
    ran = sum(r["ran"] for r in rows)
    return sum(r["passed"] for r in rows) / ran if ran else None


def _best(histories: dict[str, VersionHistory]) -> dict[str, Any] | None:
    """The version whose latest complete run has the highest mean score, its 95% interval,
    and the paired verdict against the runner-up: "best" only means something beside it."""
    latest = {}
    for version, history in histories.items():
        complete = [r for r in history.runs if not r.partial]
        if not complete:
            continue
        scores = [scored_value(x) for x in complete[-1].results if counts_in_denominators(x)]
        if scores:
            latest[version] = (complete[-1], scores)
    if not latest:
        return None
    ranked = sorted(latest, key=lambda v: statistics.fmean(latest[v][1]), reverse=True)
    run, scores = latest[ranked[0]]
    best: dict[str, Any] = {
        "version": ranked[0],
        "mean_score": statistics.fmean(scores),
        "ci95": bounded_mean_interval(scores, bounds=(0.0, 1.0)),
    }
    if len(ranked) > 1:
        runner = latest[ranked[1]][0]
        c = compare(runner.results, run.results, (ranked[1], ranked[0]))
        best["runner_up"] = ranked[1]
        best["versus_runner_up"] = c.verdict
    return best


def analyze(directory: Path, window: int) -> dict[str, Any]:
    histories = load_history(directory)
    versions: dict[str, Any] = {}
    for version, history in histories.items():
        rows = [run_figures(run) for run in history.runs]
        regressions = []
        for before, after in zip(history.runs, history.runs[1:], strict=False):
            c = compare(before.results, after.results, (before.path.name, after.path.name))
            if c.regressions:
                regressions.append(
                    {"from": before.path.name, "to": after.path.name, "cases": c.regressions}
                )
        versions[version] = {
            "runs": rows,
            "windowed_pass_rate": _pooled([r for r in rows if not r["partial"]][-window:]),
            "trend": trend_test(history.runs),
            "regressions": regressions,
            "agreement": _review_agreement(history.runs),
        }
    return {"versions": versions, "best": _best(histories)}


def _review_agreement(runs: Sequence[StoredRun]) -> dict[str, Any] | None:
    human, automatic, judge_h, judge = [], [], [], []
    human_pass, automatic_pass, judge_human_pass, judge_pass = [], [], [], []
    for run in runs:
        by_key = {(r.file, r.case_id, r.sample): r for r in run.results}
        for key, review in load_reviews(run.path).items():
            result = by_key.get(key[:3])
            if result is None or review.get("skipped"):
                continue
            threshold = result.threshold
            auto = automatic_of(result)
            if auto is not None:
                human.append(review["human_score"])
                automatic.append(auto)
                human_pass.append(review["human_score"] >= threshold)
                automatic_pass.append(auto >= threshold)
            if result.judge_score is not None:
                judge_h.append(review["human_score"])
                judge.append(result.judge_score)
                judge_human_pass.append(review["human_score"] >= threshold)
                judge_pass.append(result.judge_score >= threshold)
    if not human and not judge:
        return None
    return {
        "reviewed": max(len(human), len(judge_h)),
        "human_vs_automatic_spearman": spearman(human, automatic),
        "human_vs_automatic_mean_abs_diff": statistics.fmean(
            abs(a - b) for a, b in zip(human, automatic, strict=True)
        )
        if human
        else None,
        "human_vs_automatic_pass_fail": _table_json(human_pass, automatic_pass),
        "human_vs_judge_spearman": spearman(judge_h, judge) if judge else None,
        "human_vs_judge_pass_fail": _table_json(judge_human_pass, judge_pass),
    }


def _table_json(human: list[bool], other: list[bool]) -> dict[str, Any] | None:
    if not human:
        return None
    table = pass_fail_table(human, other)
    return {
        "both_pass": table.both_pass,
        "human_only": table.first_only,
        "other_only": table.second_only,
        "both_fail": table.both_fail,
        "percent_agreement": table.percent_agreement,
        "kappa": table.kappa,
    }


def _agreement_text(table: dict[str, Any], other: str) -> str:
    return (
        f"pass/fail agree {figures.share(table['percent_agreement'])}, Cohen's kappa "
        f"{figures.score(table['kappa'])} (both pass "
        f"{table['both_pass']}, human only {table['human_only']}, {other} only "
        f"{table['other_only']}, both fail {table['both_fail']})"
    )


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
                figures.score(last["mean_score"]),
                figures.share(last["pass_rate"]),
                figures.share(data["windowed_pass_rate"]),
                trend_word(data["trend"]),
            ]
        )
    lines += table(rows)
    lines.append(
        "pass rates over the items that ran (errored and skipped in no denominator); trend: "
        "Cochran-Armitage test stratified by case (paired), over complete runs, on the cases "
        "all of them ran"
    )
    best = report["best"]
    if best:
        lines.append(f"best version (latest run's mean score): {_best_text(best, False)}")
        if "versus_runner_up" in best:
            lines.append(f"  {best['versus_runner_up']}")
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
            parts = [
                f"{version}: {a['reviewed']} human reviews; human vs automatic Spearman "
                f"{figures.score(rho)}"
            ]
            if a["human_vs_automatic_mean_abs_diff"] is not None:
                parts.append(f"mean |diff| {figures.score(a['human_vs_automatic_mean_abs_diff'])}")
            if a["human_vs_automatic_pass_fail"]:
                parts.append(_agreement_text(a["human_vs_automatic_pass_fail"], "automatic"))
            lines.append(", ".join(parts))
            if a["human_vs_judge_pass_fail"]:
                rho_j = a["human_vs_judge_spearman"]
                lines.append(
                    f"{version}: human vs judge Spearman {figures.score(rho_j)}"
                    f", {_agreement_text(a['human_vs_judge_pass_fail'], 'judge')}"
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
        f"<tr><td>{escape(v)}</td><td>{len(d['runs'])}</td><td>{figures.share(d['windowed_pass_rate'])}"
        f"</td><td>{escape(trend_word(d['trend']))}</td></tr>"
        for v, d in series
    )
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>prompteval '
        "trends</title><style>body{font:14px system-ui,sans-serif;margin:24px}td,th{border:"
        "1px solid #ddd;padding:4px 8px}table{border-collapse:collapse}</style></head><body>"
        "<h1>Mean score per run</h1>"
        + "".join(parts)
        + "<table><tr><th>version</th><th>runs</th><th>windowed pass rate</th><th>trend</th>"
        f"</tr>{rows}</table><p>best: {escape(_best_text(report['best']))}</p></body></html>\n"
    )


def _best_text(best: dict[str, Any] | None, versus: bool = True) -> str:
    """The best version's mean score, a level: its interval is unsigned."""
    if best is None:
        return figures.NONE
    text = f"{best['version']} {figures.score(best['mean_score'])} 95% " + figures.interval(
        tuple(best["ci95"])
    )
    return text + (f"; {best['versus_runner_up']}" if versus and "versus_runner_up" in best else "")
