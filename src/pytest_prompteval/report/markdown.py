"""The run as GitHub-flavoured Markdown, for a pull request (pure: figures in, text out).

Verdict first, then the per-version table, prompt changes, each comparison with its
regressions and improvements linked to the case's line, flaky cases, errors and cost. Text
from files (versions, case files, prompt changes, verdicts naming them) goes through
``core/safetext``'s Markdown functions: it can neither hide the rest of a step summary nor
forge a workflow command.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from urllib.parse import quote

from pytest_prompteval.core.errors import INFRASTRUCTURE_KINDS
from pytest_prompteval.core.safetext import md_code, md_fence, md_text
from pytest_prompteval.report import figures
from pytest_prompteval.report.compare import Comparison
from pytest_prompteval.report.flaky import CaseSamples, mean_pass_hat_k
from pytest_prompteval.report.summary import GROUPS, VersionSummary, group_labels

#: "file::case_id" -> (path relative to the repository, 1-based line)
Locations = Mapping[str, tuple[str, int]]
#: (path, line) -> link target
Linker = Callable[[str, int], str]
#: cases run by one side only, listed per side
UNPAIRED_SHOWN = 20


def relative_link(path: str, line: int) -> str:
    return f"{quote(path)}#L{line}"


def github_linker(server: str, repository: str, sha: str) -> Linker:
    """Links to the lines of the commit the workflow runs on."""
    return lambda path, line: f"{server}/{repository}/blob/{sha}/{quote(path)}#L{line}"


@dataclass
class MarkdownRun:
    summaries: Sequence[VersionSummary]
    comparisons: Sequence[Comparison]
    gate_failures: Sequence[str] = ()
    prompt_changes: Sequence[str] = ()
    cases: Sequence[CaseSamples] = ()
    locations: Locations = field(default_factory=dict)
    ks: Sequence[int] = (1,)
    #: --prompteval-trusted-recordings: what the checkout changed in the recordings
    recordings: Sequence[str] = ()
    #: (version, "file::case_id") -> why its first failing sample failed
    reasons: Mapping[tuple[str, str], str] = field(default_factory=dict)
    #: which gate decided each failure, a few words each
    gates_decided: Sequence[str] = ()
    #: cases no selected version ran (applies_to left them out), in a line
    unrun: str | None = None


def render_markdown(run: MarkdownRun, link: Linker = relative_link) -> str:
    parts = [
        _verdict(run),
        f"⚠️ {md_text(run.unrun)}" if run.unrun else "",
        _versions(run),
        *(_groups(run.summaries, group) for group in GROUPS),
        _fields(run.summaries),
        _agents(run.summaries),
        _changes(run.prompt_changes),
        _recordings(run.recordings),
        *(_comparison(c, run.locations, link, run.reasons) for c in run.comparisons),
        _flaky(run, link),
        _errors(run.summaries),
        _cost(run.summaries),
    ]
    return "\n\n".join(p for p in parts if p) + "\n"


def _table(header: Sequence[str], rows: Sequence[Sequence[object]], right: int = 1) -> str:
    """Cells are figures, or text already made safe (md_text, md_code, links)."""
    align = ["---" if i < right else "---:" for i in range(len(header))]
    lines = [header, align, *[[str(v) for v in row] for row in rows]]
    return "\n".join("| " + " | ".join(map(str, line)) + " |" for line in lines)


def _verdict(run: MarkdownRun) -> str:
    errored = sum(
        n for s in run.summaries for kind, n in s.errors.items() if kind in INFRASTRUCTURE_KINDS
    )
    if run.gate_failures:
        # which gates decided, and beside them what each comparison's own test says: a
        # reader must not take "no significant difference" for the reason of the failure
        said = [*run.gates_decided, *(_beside_gate(c) for c in run.comparisons)]
        headline = "; ".join(said) or f"{len(run.gate_failures)} gates"
        lines = [f"## ❌ prompteval: gate failed: {md_text(headline)}", ""]
        lines += [f"- {md_text(f)}" for f in run.gate_failures]
        return "\n".join(lines)
    if errored:
        lines = [f"## ⚠️ prompteval: {errored} items errored, not scored"]
    else:
        lines = ["## ✅ prompteval: gates passed"]
    verdicts = [c.verdict for c in run.comparisons]
    if verdicts:
        lines += ["", *(f"**{md_text(v)}**  " for v in verdicts)]
    return "\n".join(lines)


def _beside_gate(c: Comparison) -> str:
    """A comparison's test in a few words, beside the gate that failed."""
    endpoint = c.decisive
    if endpoint is None:
        return f"{c.other} and {c.baseline} share no case"
    name = endpoint.label.replace(" ", "-")
    p = f"p={figures.p_value(endpoint.log_p_adjusted)}"
    outcome = c.outcome
    if outcome == "impossible":
        return f"the {name} difference cannot be tested on {c.paired} paired cases"
    if outcome == "none":
        if endpoint.significant:
            return f"the {name} difference is under the minimum effect {c.min_effect:g}, {p}"
        return f"the {name} difference is not significant, {p}"
    return f"the {name} difference is significant ({outcome}), {p}"


def _versions(run: MarkdownRun) -> str:
    by_version: dict[str, list[CaseSamples]] = {}
    for case in run.cases:
        by_version.setdefault(case.version, []).append(case)
    header = ["version", "items", "passed", "pass rate", "mean score"]
    header += [f"pass@{k}" for k in run.ks] + [f"pass^{k}" for k in run.ks]
    header += ["errors", "cost $"]
    rows = []
    for s in run.summaries:
        cases = by_version.get(s.version, [])
        rows.append(
            [
                md_code(s.version),
                s.items,
                s.passed,
                figures.share(s.pass_rate),
                figures.score(s.mean_score),
                *(figures.share(s.pass_at_k.get(k)) for k in run.ks),
                *(figures.share(mean_pass_hat_k(cases, k)) for k in run.ks),
                sum(s.errors.values()),
                figures.money(s.spent_usd),
            ]
        )
    return "### Versions\n\n" + _table(header, rows)


def _groups(summaries: Sequence[VersionSummary], group: str) -> str:
    """Accuracy per category (difficulty, quality label) x version, as in the terminal."""
    labels = group_labels(summaries, group)
    if not labels:
        return ""
    rows = [
        [md_text(label), *(figures.counts(*s.groups[group].get(label, (0, 0))) for s in summaries)]
        for label in labels
    ]
    header = [group, *(md_code(s.version) for s in summaries)]
    return f"### Accuracy by {group}\n\n" + _table(header, rows)


def _fields(summaries: Sequence[VersionSummary]) -> str:
    """Per json_field path and version: items whose checks of it passed, of those that ran."""
    names = list(dict.fromkeys(name for s in summaries for name in s.json_fields))
    if not names:
        return ""
    rows = []
    for name in names:
        cells = [figures.counts(*s.json_fields.get(name, (0, 0))) for s in summaries]
        rows.append([md_code(name), *cells])
    header = ["field", *(md_code(s.version) for s in summaries)]
    return "### Accuracy by field\n\n" + _table(header, rows)


def _agents(summaries: Sequence[VersionSummary]) -> str:
    """Per version with agent cases: steps, tool calls and tool errors per conversation,
    and how many reached max_steps (pass^k is in the versions table)."""
    agents = [s for s in summaries if s.mean_steps is not None]
    if not agents:
        return ""
    rows = [
        [
            md_code(s.version),
            f"{s.mean_steps:.1f}",
            f"{s.tool_calls / s.agent_items:.1f}",
            f"{s.tool_errors / s.agent_items:.1f}",
            s.hit_max_steps,
        ]
        for s in agents
    ]
    per = "per conversation"
    header = ["version", f"steps {per}", f"tool calls {per}", f"tool errors {per}"]
    header.append("hit max_steps")
    return "### Agents\n\n" + _table(header, rows)


def _changes(lines: Sequence[str]) -> str:
    if not lines:
        return ""
    return "### Prompt changes\n\n" + md_fence(list(lines), "diff")


def _recordings(lines: Sequence[str]) -> str:
    if not lines:
        return ""
    return "### Recordings\n\n" + "\n".join(f"- {md_text(line)}" for line in lines)


def _case_link(case: str, locations: Locations, link: Linker) -> str:
    where = locations.get(case)
    name = case.split("::", 1)[-1]
    if where is None:
        return f"{md_code(name)} ({md_text(case)})"
    path, line = where
    return f"[{md_code(name)}]({link(path, line)}) {md_code(f'{path}:{line}')}"


def _comparison(
    c: Comparison,
    locations: Locations,
    link: Linker,
    reasons: Mapping[tuple[str, str], str],
) -> str:
    lines = [f"### {md_code(c.other)} vs {md_code(c.baseline)}", "", md_text(c.verdict)]
    lines += ["", *(f"{md_text(note)}  " for note in c.notes())]
    for title, cases, failing in (
        ("Regressions", c.regressions, c.other),
        ("Improvements", c.improvements, c.baseline),
    ):
        if cases:
            lines += ["", f"**{title}**", ""]
            for case in cases:
                reason = reasons.get((failing, case))
                why = f": {md_text(reason)}" if reason else ""
                lines.append(
                    f"- {_case_link(case, locations, link)} {' → '.join(c.changes[case])}{why}"
                )
    for side, cases in ((c.baseline, c.only_baseline), (c.other, c.only_other)):
        if cases:  # out of the verdict: a reader must see what the gate did not weigh
            lines += ["", f"**Run by {md_code(side)} only, not compared** ({len(cases)})", ""]
            lines += [f"- {_case_link(case, locations, link)}" for case in cases[:UNPAIRED_SHOWN]]
            if len(cases) > UNPAIRED_SHOWN:
                lines.append(f"- and {len(cases) - UNPAIRED_SHOWN} more")
    return "\n".join(lines)


def _flaky(run: MarkdownRun, link: Linker) -> str:
    flaky = [c for c in run.cases if c.flaky]
    if not flaky:
        return ""
    rows = []
    for c in flaky:
        verdict = {True: "pass", False: "fail", None: "-"}[c.verdict]
        rows.append(
            [
                _case_link(c.case, run.locations, link),
                md_code(c.version),
                f"{c.passed}/{c.scored}",
                figures.interval(c.interval, "share"),
                "-" if c.min_pass is None else f"{c.needed} ({c.min_pass})",
                verdict,
            ]
        )
    header = ["case", "version", "passed", "95% Wilson", "min_pass", "verdict"]
    return "### Flaky cases\n\n" + _table(header, rows, right=2)


def _errors(summaries: Sequence[VersionSummary]) -> str:
    rows = [
        [md_code(s.version), md_text(kind), count]
        for s in summaries
        for kind, count in sorted(s.errors.items())
    ]
    if not rows:
        return ""
    return "### Errors\n\n" + _table(["version", "error", "items"], rows, right=2)


def _cost(summaries: Sequence[VersionSummary]) -> str:
    tokens = sum(s.input_tokens + s.output_tokens for s in summaries)
    line = figures.cost_line(
        sum(s.cost_usd for s in summaries),
        sum(s.judge_cost_usd for s in summaries),
        sum(s.live for s in summaries),
        sum(s.replayed for s in summaries),
        sum(s.user_cost_usd for s in summaries),
    )
    return f"### Cost\n\n{line}; {tokens} tokens"
