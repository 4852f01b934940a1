"""A run's report, from its first result to its last line: the hooks hand it what pytest
gives (result properties, locations, the exit status) and print what it returns."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_prompteval.core.errors import PromptevalError, display
from pytest_prompteval.core.prompts import PromptVersion
from pytest_prompteval.core.result import RESULT_KEY, STOPPED_EARLY_KEY, ItemResult
from pytest_prompteval.report.analysis import Analysis, CompareRules, analyse, failure_reasons
from pytest_prompteval.report.flaky import sample_lines
from pytest_prompteval.report.gates import GateDecision, GateRules, decide
from pytest_prompteval.report.journal import Journal
from pytest_prompteval.report.junit import suite_properties
from pytest_prompteval.report.outputs import Outputs, internal
from pytest_prompteval.report.progress import Progress
from pytest_prompteval.report.terminal import inline_lines, render

if TYPE_CHECKING:
    from pytest_prompteval.core.history import StoredRun
    from pytest_prompteval.providers.trusted import TrustedRecordings
    from pytest_prompteval.report.markdown import MarkdownRun

#: on the report of a case's min_pass verdict (no item: the case's samples are the items)
MIN_PASS_KEY = "prompteval_min_pass"


@dataclass(frozen=True)
class ReportOptions:
    """The settings the report reads, named as the run's settings name them."""

    #: --prompt=all: each version against the first before it that shares a case
    all_versions: bool
    pass_ks: tuple[int, ...]
    details: bool
    results_dir: Path | None
    estimate: bool
    html: Path | None
    markdown: Path | None
    stop_early: bool
    min_kappa: float | None
    exit: str
    fail_under: float | None
    max_regression: float | None
    max_new_failures: int
    min_effect: float
    gate_metric: str
    scorer: str
    shard: tuple[int, int] | None


@dataclass(frozen=True)
class Sources:
    """What the report reads from the layers above it, when it needs it."""

    versions: Callable[[], Sequence[PromptVersion]]
    trusted: Callable[[], TrustedRecordings | None]
    #: why a failed item failed, in one line
    reason: Callable[[ItemResult], str]
    #: the calibration warnings of (results folder, judge models, min kappa)
    kappa_warning: Callable[[Path | None, list[str], float], list[str]]
    #: the cases no selected version ran, in a line
    unrun: Callable[[], str | None]


@dataclass(frozen=True)
class TerminalLine:
    """A terminal line: a separator titled ``text`` when ``sep`` is set."""

    text: str
    sep: str | None = None
    markup: tuple[str, ...] = ()


def _gated(properties: Sequence[tuple[str, object]]) -> bool:
    """The report of a prompt case's item or min_pass verdict, which the gates decide."""
    return any(
        (key == RESULT_KEY and isinstance(value, dict) and not value.get("inline"))
        or key == MIN_PASS_KEY
        for key, value in properties
    )


class ReportSession:
    def __init__(
        self, options: ReportOptions, sources: Sources, rootdir: Path, baseline: StoredRun | None
    ):
        self.options = options
        self.sources = sources
        self.baseline = baseline
        self.results: list[ItemResult] = []
        #: the fixture's inline runs: their own block, out of the suite's figures and gates
        self.inline: list[ItemResult] = []
        self.locations: dict[str, tuple[str, int]] = {}  # "file::case_id" -> (path, line)
        self.stopped_early = 0  # samples --prompteval-stop-early did not draw
        self.other_failures = 0  # ordinary tests that failed (not gated)
        self.progress = Progress()
        self.outputs = Outputs()
        run_meta = {
            "scorer": options.scorer,
            "rootdir": str(rootdir),
            "shard": list(options.shard) if options.shard else None,
        }
        directory = None if options.estimate else options.results_dir
        self.journal = Journal(directory, sources.versions, run_meta, self.outputs)
        self.analysis = Analysis()
        self.decision = GateDecision([], [], 0)

    # -- collecting ---------------------------------------------------------------------

    def take(
        self,
        properties: Sequence[tuple[str, object]],
        location: tuple[str, int | None],
        failed: bool,
        scored: bool,
    ) -> list[str]:
        """A test report's properties; ``scored``: the phase that carries an item's result.
        Returns the progress lines to print."""
        if failed and not _gated(properties):
            self.other_failures += 1  # an ordinary test (or the fixture's): not gated
        if not scored:
            return []
        lines = []
        for key, value in properties:
            if key == STOPPED_EARLY_KEY:
                self.stopped_early += 1
            if key != RESULT_KEY or not isinstance(value, dict):
                continue
            result = ItemResult.from_json(value)
            if result.inline:
                self.inline.append(result)
                continue
            self.results.append(result)
            self.locations[f"{result.file}::{result.case_id}"] = (location[0], location[1] or 1)
            self.journal.add(result, value)
            line = self.progress.add(result)
            lines += [line] if line else []
        return lines

    # -- finishing ----------------------------------------------------------------------

    def analyse(self) -> None:
        o = self.options
        rules = CompareRules(o.pass_ks, o.min_effect, o.gate_metric, o.all_versions)
        self.analysis = analyse(
            self.results, self.sources.versions(), rules, self.baseline, self.sources.trusted()
        )

    def decide(self, pytest_status: int) -> int:
        """The gates; returns the run's exit status."""
        o = self.options
        judged = self.sources.versions()[0].version
        rules = GateRules(judged, o.exit, o.fail_under, o.max_regression, o.max_new_failures)
        a = self.analysis
        self.decision = decide(
            rules, a.summaries, a.comparisons, a.cases, self.results, pytest_status,
            self.other_failures, self.where,
        )  # fmt: skip
        return self.decision.exit_status

    def write(self, junit: Callable[[str, str], None] | None, partial: bool) -> None:
        """Each output on its own (``Outputs.guard``): JUnit's suite properties (``junit``:
        its ``add_global_property``), the HTML, the Markdown, the journal's end."""
        a, o, outputs = self.analysis, self.options, self.outputs
        if junit is not None:
            outputs.guard(
                "--junitxml", lambda: suite_properties(junit, a.summaries, a.cases, o.pass_ks)
            )
        outputs.guard(
            "--prompteval-html",
            lambda: outputs.html(o.html, self.results, a.summaries, a.comparisons),
        )
        outputs.guard(
            "--prompteval-markdown", lambda: outputs.markdown(o.markdown, self._markdown_run)
        )
        outputs.guard("--prompteval-results", lambda: self.journal.finish(a.summaries, partial))

    def _markdown_run(self) -> MarkdownRun:
        from pytest_prompteval.report.markdown import MarkdownRun  # only when written

        a = self.analysis
        return MarkdownRun(
            a.summaries,
            a.comparisons,
            self.decision.failures,
            a.prompt_changes,
            a.cases,
            self.locations,
            self.options.pass_ks,
            a.recordings,
            failure_reasons(self.results, self.sources.reason),
            self.decision.decided,
            self.sources.unrun(),
        )

    def where(self, case: str) -> str:
        """A case with its file:line, as the summary and the Markdown show it."""
        location = self.locations.get(case)
        return case if location is None else f"{case} ({location[0]}:{location[1]})"

    # -- showing ------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        """The ``prompteval`` section of pytest-json-report's file."""
        a = self.analysis
        return {
            "versions": {s.version: s.to_json() for s in a.summaries},
            "comparisons": [c.to_json() for c in a.comparisons],
            "gate_failures": self.decision.failures,
            "prompt_changes": a.prompt_changes,
            "stopped_early": self.stopped_early,
            "pass_hat_k": {
                v: {f"pass^{k}": hat for k, hat in by_k.items()}
                for v, by_k in a.pass_hat(self.options.pass_ks).items()
            },
            "flaky": [
                {**asdict(c), "wilson95": c.interval, "verdict": c.verdict}
                for c in a.cases
                if c.flaky
            ],
            "results_files": [display(p) for p in self.journal.written],
            "output_errors": self.outputs.errors,
            "inline": [
                {k: getattr(r, k) for k in ("test", "case_id", "prompt", "sample", "passed",
                                            "score", "replayed", "outcome")}
                for r in self.inline
            ],
        }  # fmt: skip

    def terminal_lines(self) -> list[TerminalLine]:
        """The terminal summary: inline runs, then the suite's blocks, warnings, gates and
        the files written."""
        lines = []
        if self.inline:
            lines.append(TerminalLine("prompteval inline runs", "-"))
            lines += [TerminalLine(text) for text in inline_lines(self.inline)]
        if not self.results:
            return lines
        lines += self._blocks()
        yellow, red = ("yellow", "bold"), ("red", "bold")
        lines += [TerminalLine(f"prompteval warning: {w}", None, yellow) for w in self._kappa()]
        lines += [
            TerminalLine(f"prompteval gate failed: {f}", None, red) for f in self.decision.failures
        ]
        lines += [TerminalLine(f"prompteval results: {display(p)}") for p in self.journal.written]
        lines += [
            TerminalLine(f"prompteval: not written: {e}", None, red) for e in self.outputs.errors
        ]
        if self.outputs.html_written is not None:
            lines.append(TerminalLine(f"prompteval report: {display(self.outputs.html_written)}"))
        lines += [TerminalLine(f"prompteval markdown: {m}") for m in self.outputs.markdown_written]
        return lines

    def _blocks(self) -> list[TerminalLine]:
        a, o = self.analysis, self.options
        try:
            blocks = render(
                a.summaries, a.comparisons, o.details, self.where, a.pass_hat(o.pass_ks)
            )
            samples = sample_lines(a.cases, o.pass_ks)
        except Exception as exc:  # the gates, the files written and the exit status still show
            blocks, samples = [("prompteval summary", [f"not shown: {internal(exc)}"])], []
        if o.stop_early:
            samples.append(
                f"--prompteval-stop-early: {self.stopped_early} samples not drawn (calls saved)"
            )
        blocks += [("samples", samples), ("prompt changes", a.prompt_changes)]
        blocks.append(("recordings", a.recordings))
        lines = []
        for title, texts in blocks:
            if texts:
                lines.append(TerminalLine(title, "=" if title == "prompteval summary" else "-"))
            lines += [TerminalLine(text) for text in texts]
        return lines

    def _kappa(self) -> list[str]:
        """prompteval_min_kappa: the judges this run used, against their calibrations."""
        min_kappa = self.options.min_kappa
        models = sorted({r.judge.model for r in self.results if r.judge is not None})
        if min_kappa is None or not models:
            return []
        try:
            return self.sources.kappa_warning(self.options.results_dir, models, min_kappa)
        except PromptevalError as exc:
            return [str(exc)]
