"""The terminal summary: compact tables, one per block."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from pytest_prompteval.core.result import ItemResult
from pytest_prompteval.core.safetext import safe_line
from pytest_prompteval.report import figures
from pytest_prompteval.report.summary import GROUPS, Figures, VersionSummary, group_labels

if TYPE_CHECKING:
    from pytest_prompteval.report.compare import Comparison


def table(rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(
            cell.ljust(w) if i == 0 else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        ).rstrip()
        for row in rows
    ]


def pass_at_k_cell(s: Figures, k: int) -> str:
    """pass@k, with how many of the cases that ran it covers when some had fewer than k
    samples (those are "n < k", not counted as failures)."""
    value = figures.share(s.pass_at_k.get(k))
    covered, total = s.pass_at_k_cases.get(k, (0, 0))
    return value if covered == total else f"{value} ({covered}/{total} cases)"


def versions_rows(summaries: Sequence[Figures]) -> list[list[str]]:
    ks = list(dict.fromkeys(k for s in summaries for k in s.pass_at_k))
    rows = [
        [
            "version",
            "items",
            "passed",
            "failed",
            "errored",
            "skipped",
            "pass rate",
            "score",
            *(f"pass@{k}" for k in ks),
            "in tok",
            "out tok",
            "cost $",
            "p50 ms",
            "p95 ms",
        ]
    ]
    for s in summaries:
        rows.append(
            [
                s.version,
                str(s.items),
                str(s.passed),
                str(s.failed),
                str(s.errored),
                str(s.skipped),
                figures.share(s.pass_rate),
                figures.score(s.mean_score),
                *(pass_at_k_cell(s, k) for k in ks),
                str(s.input_tokens),
                str(s.output_tokens),
                figures.money(s.spent_usd) + ("*" if s.unpriced else ""),
                figures.milliseconds(s.latency_p50_ms),
                figures.milliseconds(s.latency_p95_ms),
            ]
        )
    return rows


def dimensions_rows(summaries: Sequence[Figures]) -> list[list[str]]:
    dims = list(dict.fromkeys(d for s in summaries for d in s.dimensions))
    if not dims:
        return []
    rows = [["dimension", *(s.version for s in summaries)]]
    rows += [[d, *(figures.score(s.dimensions.get(d)) for s in summaries)] for d in dims]
    return rows


def group_rows(summaries: Sequence[Figures], group: str) -> list[list[str]]:
    labels = group_labels(summaries, group)
    if not labels:
        return []
    rows = [[group, *(s.version for s in summaries)]]
    for label in labels:
        cells = []
        for s in summaries:
            passed, total = s.groups.get(group, {}).get(label, (0, 0))
            cell = figures.counts(passed, total)
            if total and s.max_samples > 1:  # with samples, pass@k says more than the rate
                ks = s.group_pass_at_k.get(group, {}).get(label, {})
                cell += "".join(
                    f" p@{k} {figures.share(v)}" for k, v in ks.items() if v is not None
                )
            cells.append(cell)
        rows.append([label, *cells])
    return rows


def fields_rows(summaries: Sequence[Figures]) -> list[list[str]]:
    """Per json_field path and version: the share of items whose checks of it passed."""
    names = list(dict.fromkeys(name for s in summaries for name in s.json_fields))
    if not names:
        return []
    rows = [["field", *(s.version for s in summaries)]]
    for name in names:
        rows.append([name, *(figures.counts(*s.json_fields.get(name, (0, 0))) for s in summaries)])
    return rows


def tables(summaries: Sequence[Figures]) -> list[tuple[str, list[list[str]]]]:
    """(title, rows, the first a header) of the summary's tables, the empty left out."""
    found = [
        ("prompteval summary", versions_rows(summaries)),
        ("scores by dimension", dimensions_rows(summaries)),
    ]
    found += [(f"accuracy by {g}", group_rows(summaries, g)) for g in GROUPS]
    found.append(("accuracy by field", fields_rows(summaries)))
    return [(title, rows) for title, rows in found if rows]


def _counts(label: str, counter: Counter[str], most_common: bool = True) -> str:
    text = f"{label}: " + ", ".join(f"{k} {n}" for k, n in counter.most_common())
    return text + (f" (most common: {counter.most_common(1)[0][0]})" if most_common else "")


def _per_solved(s: Figures) -> str:
    """What one solved case cost: to set a strategy's accuracy against its price."""
    if not s.passed:
        return "per solved case: - (none solved)"
    tokens = (s.input_tokens + s.output_tokens) / s.passed
    return (
        f"per solved case: {s.answer_calls / s.passed:.1f} attempts, {tokens:.0f} tokens, "
        f"{figures.dollars(s.spent_usd / s.passed)}"
    )


def _agent_note(s: Figures, pass_hat: Mapping[int, float | None]) -> str:
    """An agent's figures per conversation, and its reliability: pass^k (every one of k
    samples passes) beside pass@k (at least one does)."""
    n = s.agent_items or 1
    line = (
        f"agent: {s.agent_items} conversations; per conversation {s.agent_steps / n:.1f} "
        f"steps, {s.tool_calls / n:.1f} tool calls, {s.tool_errors / n:.1f} tool errors; "
        f"{s.hit_max_steps} hit max_steps"
    )
    if s.user_calls:
        line += f"; {s.user_calls} simulated user calls ({figures.dollars(s.user_cost_usd)})"
    reliability = [
        f"pass@{k} {figures.share(s.pass_at_k.get(k))}, pass^{k} {figures.share(hat)}"
        for k, hat in pass_hat.items()
    ]
    return line + "".join(f"; {r}" for r in reliability)


def notes_block(
    summaries: Sequence[Figures],
    pass_hat: Mapping[str, Mapping[int, float | None]] | None = None,
) -> list[str]:
    """``pass_hat``: per version, pass^k per k of the run."""
    lines: list[str] = []
    for s in summaries:
        notes = [
            *_outcome_notes(s, (pass_hat or {}).get(s.version, {})),
            *_judge_notes(s),
            "cost: "
            + figures.cost_line(s.cost_usd, s.judge_cost_usd, s.live, s.replayed, s.user_cost_usd),
        ]
        lines.extend(f"{s.version}: {note}" for note in notes)
    return lines


def _outcome_notes(s: Figures, pass_hat: Mapping[int, float | None]) -> list[str]:
    """What the version's figures leave out: errors, attempts, steps, a repository's
    verdicts, what no denominator holds, the failed assertions."""
    notes = []
    if s.errors:
        notes.append(_counts("errors", s.errors))
    if s.code_failures:
        notes.append(_counts("code failures", s.code_failures))
    # code cases and strategies: always; an agent's steps are no attempts at a solution
    if s.code_items or (s.answer_calls > s.items and s.mean_steps is None):
        notes.append(_per_solved(s))
    if s.mean_steps is not None:
        notes.append(_agent_note(s, pass_hat))
    if s.repo_items:
        notes.append(_repo_note(s))
    if s.errored:
        notes.append(f"{s.errored} errored, not scored (in no denominator)")
    if s.skipped:
        notes.append(f"skipped {s.skipped} (cost budget spent), in no denominator")
    short = {k: total - covered for k, (covered, total) in s.pass_at_k_cases.items()}
    for k, missing in short.items():
        if missing:
            notes.append(f"pass@{k}: {missing} cases with n < {k} samples, not covered")
    if s.failed_assertions:
        notes.append(_counts("failed assertions", s.failed_assertions, most_common=False))
    return notes


def _repo_note(s: Figures) -> str:
    changed = s.infrastructure_changed
    return f"repository: {s.resolved}/{s.repo_items} resolved" + (
        f"; the agent changed the test infrastructure in {changed} (restored "
        "for the verdict: see each result's repo.restored)"
        if changed
        else ""
    )


def _judge_notes(s: Figures) -> list[str]:
    """The judge's calls, its agreement with the automatic scores, its spread; responses
    without a price."""
    notes = []
    if s.judged:
        notes.append(
            f"judge: {s.judged} judged, {s.judge_input_tokens} in / "
            f"{s.judge_output_tokens} out tokens, {figures.dollars(s.judge_cost_usd)}"
        )
    a = s.agreement
    if a is not None and a.pass_fail is not None:
        notes.append(
            f"automatic vs judge on {a.n}: Spearman {figures.score(a.spearman)}, "
            f"mean |diff| {figures.score(a.mean_abs_diff)}, "
            + a.pass_fail.describe("automatic", "judge")
        )
    if s.judge_spread is not None:
        notes.append(
            f"judge spread: mean standard deviation {figures.score(s.judge_spread)} over "
            f"{s.judge_repeats} repeats"
        )
    if s.unpriced:
        notes.append(f"{s.unpriced} response(s) from models without a price (* cost)")
    return notes


def _listing(label: str, cases: Sequence[str], limit: int | None) -> list[str]:
    if not cases:
        return []
    shown = cases[:limit]
    more = (
        f" (+{len(cases) - len(shown)} more, --prompteval-details)"
        if len(cases) > len(shown)
        else ""
    )
    return [f"  {label} ({len(cases)}): {', '.join(shown)}{more}"]


def comparison_block(
    comparison: Comparison, details: bool, where: Callable[[str], str] = lambda case: case
) -> list[str]:
    """The verdict, then regressions first (``where`` names a case with its file:line), then
    what the verdict cannot see."""
    c = comparison
    limit = None if details else 10
    lines = [c.verdict]
    lines += _listing("regressions", c.change_lines(c.regressions, where), limit)
    lines += _listing("improvements", c.change_lines(c.improvements, where), limit)
    lines += [f"  {note}" for note in c.notes()]
    lines += _listing("left out, errored under one version", c.excluded, limit)
    for side, cases in ((c.baseline, c.only_baseline), (c.other, c.only_other)):
        lines += _listing(f"unpaired, run by {side} only", [where(x) for x in cases], limit)
    for k, (test, covered) in c.pass_at_k.items():
        lines.append(
            f"  pass@{k}: {figures.share(test.mean, signed=True)} "
            f"{figures.interval(test.interval(), 'share', signed=True)} over the {covered} "
            f"cases with n >= {k} samples in both"
        )
    if c.paired:
        from pytest_prompteval.report.compare import TIE_RULE  # loaded: c is a Comparison

        lines.append(f"  per case: {TIE_RULE}")
    return lines


def render(
    summaries: Sequence[VersionSummary],
    comparisons: Sequence[Comparison],
    details: bool,
    where: Callable[[str], str] = lambda case: case,
    pass_hat: Mapping[str, Mapping[int, float | None]] | None = None,
) -> list[tuple[str, list[str]]]:
    """(title, lines) blocks of the summary."""
    blocks = [(title, table(rows)) for title, rows in tables(summaries)]
    blocks.append(("notes", notes_block(summaries, pass_hat)))
    for comparison in comparisons:
        blocks.append(("comparison", comparison_block(comparison, details, where)))
    # labels, error kinds and case ids come from files and answers: escaped for the terminal
    return [(title, [safe_line(line) for line in lines]) for title, lines in blocks if lines]


def inline_lines(results: Sequence[ItemResult]) -> list[str]:
    """One line per inline run: the test, the version, the verdict, whether it replayed."""
    lines = []
    for r in results:
        score = "no score" if r.score is None else f"score {figures.score(r.score)}"
        verdict = "passed" if r.passed else (r.outcome or "failed")
        replayed = r.replayed
        source = "no call" if replayed is None else ("replayed" if replayed else "live")
        lines.append(f"{r.test} [{r.prompt}]: {verdict}, {score}, {source}")
    return lines
