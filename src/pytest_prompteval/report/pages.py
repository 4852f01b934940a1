"""What the static HTML report and ``prompteval view`` show of a case, and the templates
both render with.

One Jinja environment, autoescaping every value (answers, case files and review notes are
hostile input: a ``<script>`` in an answer stays text), and a ``text`` filter that also
shows control characters and bidirectional overrides as escapes (``core/safetext``). The
case model is shared: per version and case its samples, k/n, the ``min_pass`` verdict and
every score with its reason; an agent's conversation (``conversation``) and a repository
task's verdict with its diff (``repoview``) have their own parts.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import jinja2

from pytest_prompteval.core.result import ItemResult
from pytest_prompteval.core.safetext import safe_text
from pytest_prompteval.report import figures
from pytest_prompteval.report.conversation import conversation_of
from pytest_prompteval.report.flaky import CaseSamples, case_samples
from pytest_prompteval.report.repoview import repo_view
from pytest_prompteval.report.summary import counts_in_denominators, outcome_of, scored_value


@dataclass(frozen=True)
class ScoreLine:
    """One score an item got, and why: a judge dimension with the judge's notes, an
    assertion with its message, a code run with its first failure."""

    source: str  # judge | assert | code | automatic
    name: str
    value: float | None
    passed: bool | None = None
    reason: str = ""


@dataclass(frozen=True)
class Detail:
    """A titled block of an item's details, shown as preformatted text."""

    title: str
    text: str = ""


def details_of(result: ItemResult) -> list[Detail]:
    """The item's details slot: the code it ran (an agent's conversation and a repository's
    verdict have their own parts: ``conversation``, ``repoview``)."""
    if result.execution is not None and result.execution.code:
        return [Detail("Extracted code", result.execution.code)]
    return []


def scores_of(result: ItemResult) -> list[ScoreLine]:
    lines = []
    if result.judge is not None:
        judge = result.judge
        lines.append(ScoreLine("judge", f"judge ({judge.model})", judge.score, reason=judge.notes))
        lines += [
            ScoreLine("judge", name, value) for name, value in sorted(judge.dimensions.items())
        ]
    for check in result.assertions:
        label = check.type + (f" {check.field}" if check.field else "")
        lines.append(ScoreLine("assert", label, check.score, check.passed, check.reason))
    if result.execution is not None:
        run = result.execution
        lines.append(
            ScoreLine(
                "code",
                "tests",
                run.tests_passed / run.tests_total if run.tests_total else None,
                run.error_class is None,
                f"{run.tests_passed}/{run.tests_total} passed"
                + (f"; {run.error_class}: {run.first_failure}" if run.error_class else ""),
            )
        )
    judged = set(result.judge.dimensions) if result.judge else set()
    lines += [
        ScoreLine("automatic", name, value)
        for name, value in sorted(result.dimensions.items())
        if name not in judged
    ]
    if result.missing_topics:
        lines.append(ScoreLine("automatic", "missing topics", None, False,
                               ", ".join(result.missing_topics)))  # fmt: skip
    for claim in result.incorrect_claims:
        lines.append(ScoreLine("automatic", "incorrect claim", None, False, claim))
    return lines


@dataclass
class CaseRow:
    """One case under one version: its samples and their verdict."""

    version: str
    file: str
    case_id: str
    samples: list[ItemResult] = field(default_factory=list)
    counts: CaseSamples | None = None

    @property
    def key(self) -> str:
        return f"{self.file}::{self.case_id}"

    @property
    def outcome(self) -> str:
        """failed | error | passed | skipped, for the case as a whole: min_pass's verdict
        where there is one, else failed when any sample failed."""
        outcomes = [outcome_of(r) for r in self.samples]
        c = self.counts
        if c is not None and c.min_pass is not None:
            if c.verdict is None:
                return "error" if "error" in outcomes else "skipped"
            return "passed" if c.verdict else "failed"
        for kind in ("failed", "error", "passed"):
            if kind in outcomes:
                return kind
        return "skipped"

    @property
    def kn(self) -> str:
        c = self.counts
        return figures.counts(c.passed, c.scored) if c else "-"

    @property
    def mean_score(self) -> float | None:
        scored = [scored_value(r) for r in self.samples if counts_in_denominators(r)]
        return sum(scored) / len(scored) if scored else None

    @property
    def flaky(self) -> bool:
        return self.counts is not None and self.counts.flaky

    @property
    def min_pass_text(self) -> str:
        c = self.counts
        if c is None or c.min_pass is None:
            return ""
        if c.verdict is None:
            return f"min_pass {c.needed}: undecided"
        return f"min_pass {c.needed}: {'met' if c.verdict else 'not met'}"


#: failures first: what a reader must see
ORDER = {"failed": 0, "error": 1, "skipped": 2, "passed": 3}


def case_rows(results: Iterable[ItemResult]) -> list[CaseRow]:
    """Per version and case, failures first, then by file and case id."""
    rows: dict[tuple[str, str, str], CaseRow] = {}
    ordered = sorted(results, key=lambda r: (r.prompt, r.file, r.case_id, r.sample))
    for r in ordered:
        key = (r.prompt, r.file, r.case_id)
        rows.setdefault(key, CaseRow(*key)).samples.append(r)
    counts = {(c.version, c.case): c for c in case_samples(ordered)}
    for row in rows.values():
        row.counts = counts.get((row.version, row.key))
    return sorted(rows.values(), key=lambda row: (ORDER[row.outcome], row.version, row.key))


def _text(value: object) -> str:
    """Control characters and bidi overrides as escapes; HTML escaping is autoescape's."""
    return "" if value is None else safe_text(str(value), indent="")


def static_text(name: str) -> str:
    """A file of the front end (``report/static``): the CSS the static report inlines."""
    return (
        resources.files("pytest_prompteval.report")
        .joinpath("static")
        .joinpath(name)
        .read_text("utf-8")
    )


STATIC_FILES = ("view.css", "view.js", "favicon.svg")


@functools.cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("pytest_prompteval.report", "templates"),
        autoescape=True,  # every template is HTML; .html-only selection would miss macros
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        text=_text,
        share=figures.share,
        score=figures.score,
        money=figures.money,
        ms=figures.milliseconds,
        interval=figures.interval,
    )
    env.globals.update(
        outcome_of=outcome_of,
        scores_of=scores_of,
        details_of=details_of,
        conversation_of=conversation_of,
        repo_view=repo_view,
    )
    return env


def render(template: str, **context: Any) -> str:
    return environment().get_template(template).render(**context)


def versions_of(rows: Sequence[CaseRow]) -> list[str]:
    return sorted({row.version for row in rows})
