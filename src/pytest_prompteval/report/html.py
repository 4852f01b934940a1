"""A self-contained HTML report: inline CSS and SVG, no scripts, fonts or external links."""

from __future__ import annotations

from collections.abc import Sequence

from pytest_prompteval.core.result import ItemResult
from pytest_prompteval.core.safetext import html_text as escape
from pytest_prompteval.report import figures
from pytest_prompteval.report.compare import Comparison
from pytest_prompteval.report.summary import (
    DENOMINATORS,
    VersionSummary,
    case_key,
    counts_in_denominators,
    outcome_of,
    scored_value,
    sort_results,
)
from pytest_prompteval.report.terminal import comparison_block, pass_at_k_cell

PALETTE = ("#3b6ea8", "#d9822b", "#3f9b5b", "#b8433e", "#7d5ba6", "#8c6d4f")
CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px;color:#222}
h1{font-size:22px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ddd;padding:4px 8px;
vertical-align:top;text-align:left}th{background:#f4f4f4}.num{text-align:right}
.pass{color:#1d7a36;font-weight:600}.fail{color:#b3261e;font-weight:600}
.err{color:#8a5a00;font-weight:600}pre{white-space:pre-wrap;max-width:60ch;margin:4px 0;
font-size:12px;background:#fafafa;padding:6px}.charts{display:flex;flex-wrap:wrap;gap:24px}
.legend span{display:inline-block;margin-right:14px}.sw{display:inline-block;width:10px;
height:10px;margin-right:4px}small{color:#666}
"""


def _legend(versions: Sequence[str]) -> str:
    return (
        '<div class="legend">'
        + "".join(
            f'<span><i class="sw" style="background:{PALETTE[i % len(PALETTE)]}"></i>'
            f"{escape(v)}</span>"
            for i, v in enumerate(versions)
        )
        + "</div>"
    )


def bar_chart(
    title: str,
    labels: Sequence[str],
    series: Sequence[Sequence[float | None]],
    versions: Sequence[str],
    width: int = 520,
) -> str:
    """Grouped vertical bars in [0, 1]: one group per label, one bar per version."""
    height, left, bottom, top = 220, 36, 60, 24
    plot_w, plot_h = width - left - 10, height - bottom - top
    group_w = plot_w / max(len(labels), 1)
    bar_w = max(2.0, group_w * 0.8 / max(len(series), 1))
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'role="img" aria-label="{escape(title)}">',
        f'<text x="{left}" y="16" font-size="13" font-weight="600">{escape(title)}</text>',
    ]
    for tick in (0, 0.25, 0.5, 0.75, 1.0):
        y = top + plot_h * (1 - tick)
        parts.append(
            f'<line x1="{left}" x2="{width - 10}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e5e5e5"/>'
        )
        parts.append(
            f'<text x="{left - 4}" y="{y + 4:.1f}" font-size="10" text-anchor="end">{tick:g}</text>'
        )
    for g, label in enumerate(labels):
        x0 = left + g * group_w + group_w * 0.1
        for v, values in enumerate(series):
            value = values[g]
            if value is None:
                continue
            h = plot_h * value
            parts.append(
                f'<rect x="{x0 + v * bar_w:.1f}" y="{top + plot_h - h:.1f}" '
                f'width="{bar_w - 1:.1f}" height="{h:.1f}" '
                f'fill="{PALETTE[v % len(PALETTE)]}"><title>{escape(versions[v])} '
                f"{escape(label)}: {figures.share(value)}</title></rect>"
            )
        short = label if len(label) <= 14 else label[:13] + "…"
        cx = left + g * group_w + group_w / 2
        parts.append(
            f'<text x="{cx:.1f}" y="{top + plot_h + 12}" font-size="10" text-anchor="end" '
            f'transform="rotate(-30 {cx:.1f} {top + plot_h + 12})">{escape(short)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _histogram(results: Sequence[ItemResult], versions: Sequence[str]) -> str:
    bins = 10
    labels = [f"{i / bins:.1f}-{(i + 1) / bins:.1f}" for i in range(bins)]
    series = []
    for version in versions:
        scores = [
            scored_value(r) for r in results if r.prompt == version and counts_in_denominators(r)
        ]
        counts = [0] * bins
        for score in scores:
            counts[min(int(score * bins), bins - 1)] += 1
        series.append([c / len(scores) if scores else None for c in counts])
    return bar_chart("Score distribution (share of items per bin)", labels, series, versions)


def render_html(
    results: Sequence[ItemResult],
    summaries: Sequence[VersionSummary],
    comparisons: Sequence[Comparison],
    title: str,
) -> str:
    versions = [s.version for s in summaries]
    ordered = sort_results(results)
    out = [
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
        f"<title>{escape(title)}</title><style>{CSS}</style></head><body>",
        f"<h1>{escape(title)}</h1>",
    ]
    ks = list(dict.fromkeys(k for s in summaries for k in s.pass_at_k))
    out.append(
        "<h2>Versions</h2><table><tr><th>version</th><th>items</th><th>passed</th>"
        "<th>failed</th><th>errored</th><th>skipped</th><th>pass rate</th><th>mean score</th>"
        + "".join(f"<th>pass@{k}</th>" for k in ks)
        + "<th>tokens in/out</th><th>cost $</th><th>p50 / p95 ms</th></tr>"
    )
    for s in summaries:
        out.append(
            f"<tr><td>{escape(s.version)}</td><td class=num>{s.items}</td>"
            f"<td class=num>{s.passed}</td><td class=num>{s.failed}</td>"
            f"<td class=num>{s.errored}</td><td class=num>{s.skipped}</td>"
            f"<td class=num>{figures.share(s.pass_rate)}</td>"
            f"<td class=num>{figures.score(s.mean_score)}</td>"
            + "".join(f"<td class=num>{escape(pass_at_k_cell(s, k))}</td>" for k in ks)
            + f"<td class=num>{s.input_tokens} / {s.output_tokens}</td>"
            f"<td class=num>{figures.money(s.cost_usd + s.judge_cost_usd)}</td><td class=num>"
            f"{figures.milliseconds(s.latency_p50_ms)} / "
            f"{figures.milliseconds(s.latency_p95_ms)}</td></tr>"
        )
    out.append(f"</table><p><small>{escape(DENOMINATORS)}</small></p>")
    for c in comparisons:
        out.append(
            f"<p><b>{escape(c.verdict)}</b><br><small>"
            + "<br>".join(escape(line.strip()) for line in comparison_block(c, True)[1:])
            + "</small></p>"
        )
    categories = sorted({label for s in summaries for label in s.groups.get("category", {})})
    out.append("<h2>Charts</h2>" + _legend(versions) + '<div class="charts">')
    out.append(_histogram(ordered, versions))
    out.append(
        bar_chart(
            "Accuracy per category",
            categories,
            [[_rate(s.groups.get("category", {}).get(c)) for c in categories] for s in summaries],
            versions,
        )
    )
    out.append(
        bar_chart(
            "pass@k",
            [f"pass@{k}" for k in ks],
            [[s.pass_at_k.get(k) for k in ks] for s in summaries],
            versions,
            width=320,
        )
    )
    out.append(
        "</div><h2>Cases</h2><table><tr><th>case</th>"
        + "".join(f"<th>{escape(v)}</th>" for v in versions)
        + "</tr>"
    )
    cells: dict[tuple[str, str], dict[str, list[ItemResult]]] = {}
    for r in ordered:
        cells.setdefault(case_key(r), {}).setdefault(r.prompt, []).append(r)
    for (file, case_id), by_version in sorted(cells.items()):
        out.append(f"<tr><td><b>{escape(case_id)}</b><br><small>{escape(file)}</small></td>")
        for version in versions:
            out.append("<td>" + "".join(_cell(r) for r in by_version.get(version, [])) + "</td>")
        out.append("</tr>")
    out.append("</table></body></html>\n")
    return "".join(out)


def _rate(counts: tuple[int, int] | None) -> float | None:
    return counts[0] / counts[1] if counts and counts[1] else None


def _cell(r: ItemResult) -> str:
    outcome = outcome_of(r)
    if outcome in ("error", "skipped"):
        status = f'<span class="err">{outcome}: {escape(r.error_type or "-")}</span>'
    else:
        status = (
            '<span class="pass">pass</span>'
            if outcome == "passed"
            else '<span class="fail">fail</span>'
            + (f" <small>{escape(r.error_type)}</small>" if r.error_type else "")
        )
    parts = [f"{status} {figures.score(r.score)}"]
    if r.sample:
        parts.append(f" <small>sample {r.sample}</small>")
    if r.missing_topics:
        parts.append(f"<br><small>missing: {escape(', '.join(r.missing_topics))}</small>")
    for claim in r.incorrect_claims:
        parts.append(f"<br><small>claim: {escape(claim)}</small>")
    for check in r.assertions:
        if not check.passed:
            parts.append(f"<br><small>assert {escape(check.type)}: {escape(check.reason)}</small>")
    if r.error:
        parts.append(f"<pre>{escape(r.error)}</pre>")
    if r.response is not None:
        parts.append(f"<pre>{escape(r.response)}</pre>")
    return "<div>" + "".join(parts) + "</div>"
