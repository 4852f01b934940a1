"""A self-contained HTML report: inline CSS and SVG, no scripts, fonts or external links.

Its page is ``templates/report.html``, whose case pieces ``prompteval view`` shows too."""

from __future__ import annotations

from collections.abc import Sequence

from markupsafe import Markup

from pytest_prompteval.core.result import ItemResult
from pytest_prompteval.core.safetext import html_text as escape
from pytest_prompteval.report import figures, pages
from pytest_prompteval.report.compare import Comparison
from pytest_prompteval.report.summary import (
    DENOMINATORS,
    VersionSummary,
    counts_in_denominators,
    scored_value,
    sort_results,
)
from pytest_prompteval.report.terminal import comparison_block, pass_at_k_cell

PALETTE = ("#3b6ea8", "#d9822b", "#3f9b5b", "#b8433e", "#7d5ba6", "#8c6d4f")
CSS = pages.static_text("view.css")


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
    """The page, from the template ``prompteval view`` shares: failures first and open,
    passing cases collapsed, each case with its k/n and ``min_pass`` verdict."""
    versions = [s.version for s in summaries]
    ordered = sort_results(results)
    ks = list(dict.fromkeys(k for s in summaries for k in s.pass_at_k))
    categories = sorted({label for s in summaries for label in s.groups.get("category", {})})
    charts = (
        _legend(versions)
        + '<div class="charts">'
        + _histogram(ordered, versions)
        + bar_chart(
            "Accuracy per category",
            categories,
            [[_rate(s.groups.get("category", {}).get(c)) for c in categories] for s in summaries],
            versions,
        )
        + bar_chart(
            "pass@k",
            [f"pass@{k}" for k in ks],
            [[s.pass_at_k.get(k) for k in ks] for s in summaries],
            versions,
            width=320,
        )
        + "</div>"
    )
    return pages.render(
        "report.html",
        title=title,
        css=Markup(CSS),
        summaries=summaries,
        ks=ks,
        pass_at_k_cell=pass_at_k_cell,
        denominators=DENOMINATORS,
        comparisons=[comparison_block(c, True) for c in comparisons],
        charts=Markup(charts),
        rows=pages.case_rows(ordered),
    )


def _rate(counts: tuple[int, int] | None) -> float | None:
    return counts[0] / counts[1] if counts and counts[1] else None
