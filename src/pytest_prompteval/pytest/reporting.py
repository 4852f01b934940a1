"""The controller's side of a run: results from reports, history, summary, comparisons, gates
and the CI formats. Registered only on the process that prints (never on an xdist worker)."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_prompteval.core.errors import PromptevalError, display
from pytest_prompteval.core.gitversions import SEPARATOR
from pytest_prompteval.core.history import RunHistory, StoredRun, command_line, load_run
from pytest_prompteval.core.paths import write_atomically
from pytest_prompteval.core.prompts import PromptVersion
from pytest_prompteval.core.result import JUNIT_FIELDS, RESULT_KEY, STOPPED_EARLY_KEY, ItemResult
from pytest_prompteval.core.safetext import safe_line
from pytest_prompteval.core.version import __version__
from pytest_prompteval.engine.evaluate import failure_reason
from pytest_prompteval.engine.settings import ALL_VERSIONS
from pytest_prompteval.providers.trusted import TrustedRecordings
from pytest_prompteval.pytest.adapters import junit_global_property
from pytest_prompteval.pytest.items import CASE_DOMAIN, CASE_SUFFIXES

if TYPE_CHECKING:
    from pytest_prompteval.pytest.run import RunPlugin
from pytest_prompteval.report import figures
from pytest_prompteval.report.compare import Comparison, compare, correct
from pytest_prompteval.report.flaky import (
    CaseSamples,
    case_samples,
    mean_pass_hat_k,
    min_pass_failures,
    sample_lines,
)
from pytest_prompteval.report.gates import comparison_gate_failures, gates_exit_code
from pytest_prompteval.report.markdown import (
    Linker,
    MarkdownRun,
    github_linker,
    relative_link,
    render_markdown,
)
from pytest_prompteval.report.promptdiff import prompt_changes
from pytest_prompteval.report.summary import (
    GROUPS,
    VersionSummary,
    case_key,
    group_labels,
    summarize,
)
from pytest_prompteval.report.terminal import render
from pytest_prompteval.workflows.calibrate import kappa_warning

#: on the report of a case's min_pass verdict (no item: the case's samples are the items)
MIN_PASS_KEY = "prompteval_min_pass"


class RunReport:
    def __init__(self, config: pytest.Config, run: RunPlugin):
        self.config = config
        self.run = run
        settings = self.settings = run.settings
        self.ks = settings.pass_ks
        self.details = settings.details
        self.results: list[ItemResult] = []
        self.summaries: list[VersionSummary] = []
        self.cases: list[CaseSamples] = []
        self.stopped_early = 0  # samples --prompteval-stop-early did not draw
        self.comparisons: list[Comparison] = []
        self.gate_failures: list[str] = []
        #: which gate decided, a few words each: the Markdown's headline
        self.gates_decided: list[str] = []
        self.prompt_changes: list[str] = []
        self.written: list[Path] = []
        self.html_written: Path | None = None
        self.markdown_written: list[str] = []
        self.recordings: list[str] = []
        self.locations: dict[str, tuple[str, int]] = {}  # "file::case_id" -> (path, line)
        self.baseline: StoredRun | None = None
        if settings.baseline is not None:
            try:
                self.baseline = load_run(settings.baseline)
            except PromptevalError as exc:
                raise pytest.UsageError(safe_line(f"--prompteval-baseline: {exc}")) from None
        # made with the first result, so that --collect-only, --markers and runs that select
        # nothing leave no run behind
        self.history: RunHistory | None = None
        self.output_errors: list[str] = []
        #: the fixture's inline runs: their own block, out of the suite's figures and gates
        self.inline: list[ItemResult] = []
        self.progress_total = 0
        self.other_failures = 0
        self.next_progress = 0.1
        self.live = False  # running totals, so a progress check never rescans the results
        self.tokens = 0
        self.cost = 0.0

    # -- collecting ---------------------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        path, line, domain = report.location
        if line is not None and domain.startswith(CASE_DOMAIN) and path.endswith(CASE_SUFFIXES):
            # pytest keeps a location's line 0-based and JUnit writes it as it is: a case's
            # own line, as the Markdown links it, for CI annotations read from JUnit
            report.location = (path, line + 1, domain)
        if report.when == "teardown":
            report.user_properties = _junit_properties(report.user_properties)
        # an item's result is on the report of its test phase, or of its setup when the
        # setup ended it (an error of the calls, a budget skip)
        if report.failed and not any(
            (key == RESULT_KEY and isinstance(value, dict) and not value.get("inline"))
            or key == MIN_PASS_KEY
            for key, value in report.user_properties
        ):
            self.other_failures += 1  # an ordinary test (or the fixture's): not gated
        if report.when != "call" and not (report.when == "setup" and not report.passed):
            return
        for key, value in report.user_properties:
            if key == STOPPED_EARLY_KEY:
                self.stopped_early += 1
            if key != RESULT_KEY or not isinstance(value, dict):
                continue
            result = ItemResult.from_json(value)
            if result.inline:
                self.inline.append(result)
                continue
            self.results.append(result)
            path, line, _ = report.location
            self.locations[f"{result.file}::{result.case_id}"] = (path, line or 1)
            self._journal(result, value)
            self._progress()

    def _journal(self, result: ItemResult, data: dict[str, Any]) -> None:
        results_dir = self.settings.results_dir
        if results_dir is None or self.output_errors or self.settings.estimate:
            return
        try:
            if self.history is None:
                self.history = RunHistory(
                    results_dir,
                    {
                        v.version: {
                            "prompt_file": display(v.path),
                            "prompt_sha256": v.sha256,
                            "plugin_version": __version__,
                            "command_line": command_line(),
                            "scorer": self.settings.scorer,
                            "rootdir": str(self.config.rootpath),
                            "shard": list(self.settings.shard) if self.settings.shard else None,
                        }
                        for v in self.run.engine.versions
                    },
                )
            self.history.add(result, data)
        except OSError as exc:
            self._output_failed("--prompteval-results", results_dir, exc)

    def _output_failed(self, option: str, path: Path, exc: OSError) -> None:
        self.output_errors.append(f"{option} {display(path)}: {exc.strerror or exc}")

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.progress_total = len(session.items)

    @pytest.hookimpl(optionalhook=True)  # a hook of xdist's, which may not be installed
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        self.progress_total = len(ids)

    def _progress(self) -> None:
        """A line every tenth of a long run that makes calls (a replay needs none)."""
        last = self.results[-1]
        self.live |= last.replayed is False
        self.tokens += last.input_tokens + last.output_tokens
        self.cost += last.cost_usd or 0.0
        total = self.progress_total
        if total < 20 or not self.live or len(self.results) < total * self.next_progress:
            return
        self.next_progress += 0.1
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(
                f"prompteval: {len(self.results)}/{total} items, {self.tokens} tokens, "
                f"{figures.dollars(self.cost)}"
            )

    # -- finishing ----------------------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if self.settings.prompt is None or self.settings.estimate:
            return  # nothing ran, or only inline runs of the fixture (their own block)
        first = self._analyse()
        self._decide(session, first)
        self._write_outputs(session, exitstatus)

    def _analyse(self) -> str:
        """Summaries, comparisons and per-case samples of the results; the --prompt version."""
        versions = self.run.engine.versions
        order = [v.version for v in versions]
        self.prompt_changes = _git_version_changes(versions)
        self.recordings = _recording_lines(self.run.engine.trusted, self.results)
        self.summaries = summarize(self.results, order, self.ks)
        by_version: dict[str, list[ItemResult]] = {}
        for r in self.results:
            by_version.setdefault(r.prompt, []).append(r)
        first = order[0]
        # every comparison reads "<the --prompt version> vs <a reference>": its regressions
        # are what the --prompt version newly fails, whichever option named the reference
        pairs = [(v, first) for v in order[1:]]
        if self.settings.prompt == ALL_VERSIONS:
            pairs = _sharing_pairs(order, by_version)
        references = [(v, by_version.get(v, []), judged) for v, judged in pairs]
        if self.baseline is not None:
            references.append((f"baseline {self.baseline.path.name}", self.baseline.results, first))
        settings = self.settings
        self.comparisons += [
            compare(
                results,
                by_version.get(judged, []),
                (reference, judged),
                self.ks,
                settings.min_effect,
                settings.gate_metric,
            )
            for reference, results, judged in references
        ]
        correct(self.comparisons)  # Holm over every test of the run
        self.cases = case_samples(self.results)
        return first

    def _decide(self, session: pytest.Session, first: str) -> None:
        """The gates and min_pass verdicts, and the exit status they give."""
        self._gates(first)
        gates_only = self.settings.exit == "gates"
        # gates mode: the --prompt version is judged, compared versions are references
        judged = [c for c in self.cases if not gates_only or c.version == first]
        below = min_pass_failures(judged)
        self.gate_failures += below
        self.gates_decided += [f"{len(below)} cases below their min_pass"] if below else []
        self._min_pass_reports(session)
        if gates_only:
            gates = comparison_gate_failures(
                self.comparisons, first, self.settings.max_new_failures, self._where
            )
            self.gate_failures += [g.message for g in gates]
            self.gates_decided += [g.short for g in gates]
            # a budget stop leaves cases unscored, as errors do: no verdict either way
            errored = sum(
                r.outcome == "error" or (r.outcome == "skipped" and r.error_type == "budget")
                for r in self.results
            )
            session.exitstatus = gates_exit_code(
                int(session.exitstatus), len(self.gate_failures), errored, self.other_failures
            )
        elif self.gate_failures and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def _write_outputs(self, session: pytest.Session, exitstatus: int) -> None:
        """Each output on its own: one that cannot be written, or fails to render, loses none
        of the others (nor pytest's JUnit file, written after this hook)."""
        self._output("--junitxml", self._junit_suite_properties)
        self._output("--prompteval-html", self._html)
        self._output("--prompteval-markdown", self._markdown)
        partial = bool(session.shouldstop or session.shouldfail) or exitstatus in (
            pytest.ExitCode.INTERRUPTED,
            pytest.ExitCode.INTERNAL_ERROR,
        )
        self._output("--prompteval-results", lambda: self._history(partial))
        if self.output_errors and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def _output(self, option: str, write: Callable[[], None]) -> None:
        """One output: a file it cannot write (``_output_failed``) or a figure it cannot
        render is named at the end, and the run goes on to the next output."""
        try:
            write()
        except Exception as exc:  # an output's own bug must not lose the others
            self.output_errors.append(f"{option}: {_internal(exc)}")

    def _history(self, partial: bool) -> None:
        if self.history is None:
            return
        try:
            self.written = self.history.finalize(
                {s.version: s.to_json() for s in self.summaries}, partial
            )
        except OSError as exc:
            self._output_failed("--prompteval-results", self.history.directory, exc)

    def _html(self) -> None:
        html = self.settings.html
        if html is None:
            return
        # its templates (Jinja2) load only for a run that writes the page
        from pytest_prompteval.report.html import render_html

        page = render_html(
            self.results,
            self.summaries,
            self.comparisons,
            f"prompteval report: {', '.join(s.version for s in self.summaries)}",
        )
        try:
            html.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(html, page)
            self.html_written = html
        except OSError as exc:
            self._output_failed("--prompteval-html", html, exc)

    def _min_pass_reports(self, session: pytest.Session) -> None:
        """A case below its min_pass is one failed test, for every reporter (the terminal's
        counts, JUnit, json-report): its failing samples were xfail while the verdict was
        open, so without it JUnit would say failures="0" of a run that failed."""
        plugins = session.config.pluginmanager
        terminal = plugins.get_plugin("terminalreporter")
        # not through the terminal's progress line, which ended with the last item: into its
        # counts, its failures and its short summary
        log = plugins.subset_hook_caller("pytest_runtest_logreport", [terminal] if terminal else [])
        for c in [c for c in self.cases if c.verdict is False]:
            path, line = self.locations.get(c.case, (c.case.split("::", 1)[0], 1))
            case_id = c.case.split("::", 1)[-1]
            reason = f"{c.passed}/{c.scored} samples passed, min_pass {c.min_pass} needs {c.needed}"
            nodeid = f"{path}::{case_id}[{c.version}-min_pass]"  # a sibling of its samples
            for when, outcome in (("call", "failed"), ("teardown", "passed")):
                report = pytest.TestReport(
                    nodeid,
                    (path, line - 1, f"{CASE_DOMAIN}{case_id} [{c.version}] min_pass"),
                    {},
                    outcome,  # type: ignore[arg-type]
                    reason if outcome == "failed" else None,
                    when,  # type: ignore[arg-type]
                    user_properties=[(MIN_PASS_KEY, c.version)],
                )
                log(report=report)
                if terminal is not None and outcome == "failed":
                    terminal.stats.setdefault("failed", []).append(report)

    def _markdown(self) -> None:  # --prompteval-markdown and GITHUB_STEP_SUMMARY
        targets = [p for p in (self.settings.markdown,) if p is not None]
        step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
        if step_summary:
            targets.append(Path(step_summary))
        if not targets:
            return
        run = MarkdownRun(
            self.summaries,
            self.comparisons,
            self.gate_failures,
            self.prompt_changes,
            self.cases,
            self.locations,
            self.ks,
            self.recordings,
            self._reasons(),
            self.gates_decided,
            self.run.unrun_line(),
        )
        env = os.environ
        link: Linker = relative_link
        if env.get("GITHUB_REPOSITORY") and env.get("GITHUB_SHA"):
            server = env.get("GITHUB_SERVER_URL", "https://github.com")
            link = github_linker(server, env["GITHUB_REPOSITORY"], env["GITHUB_SHA"])
        text = render_markdown(run, link)
        for target in targets:
            # the step summary collects every step's output: appended, never replaced
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                if str(target) == step_summary:
                    with target.open("a", encoding="utf-8") as f:
                        f.write(text)
                else:
                    write_atomically(target, text)
                self.markdown_written.append(display(target))
            except OSError as exc:
                self._output_failed("--prompteval-markdown", target, exc)

    def _pass_hat(self) -> dict[str, dict[int, float | None]]:
        """Per version, pass^k per k of the run."""
        return {
            v: {k: mean_pass_hat_k(cs, k) for k in self.ks}
            for v, cs in _by_version(self.cases).items()
        }

    def _reasons(self) -> dict[tuple[str, str], str]:
        """Why each failing case failed: its first failing sample's reason."""
        reasons: dict[tuple[str, str], str] = {}
        for r in sorted(self.results, key=lambda r: r.sample):
            if r.outcome == "failed":
                reasons.setdefault((r.prompt, f"{r.file}::{r.case_id}"), failure_reason(r))
        return reasons

    def _gates(self, first: str) -> None:
        fail_under = self.settings.fail_under
        summary = next((s for s in self.summaries if s.version == first), None)
        mean = summary.mean_score if summary else None
        if fail_under is not None and (mean is None or mean < fail_under):
            shown = "no score" if mean is None else figures.score(mean)
            self.gate_failures.append(
                f"mean score of {first} is {shown}, under --prompteval-fail-under {fail_under}"
            )
            self.gates_decided.append(f"mean score {shown} (min {fail_under})")
        limit = self.settings.max_regression
        if limit is None:
            return
        for c in self.comparisons:  # each is "first vs a reference"
            if c.mean_diff is not None and -c.mean_diff > limit:
                self.gate_failures.append(
                    f"{first} scores {figures.score(-c.mean_diff)} below {c.baseline} on paired "
                    f"cases, more than --prompteval-max-regression {limit}"
                )
                self.gates_decided.append(
                    f"mean score down {figures.score(-c.mean_diff)} (max {limit})"
                )

    def _where(self, case: str) -> str:
        """A case with its file:line, as the summary and the Markdown show it."""
        location = self.locations.get(case)
        return case if location is None else f"{case} ({location[0]}:{location[1]})"

    def _junit_suite_properties(self) -> None:
        add = junit_global_property(self.config)
        if add is None:
            return
        for s in self.summaries:
            prefix = f"prompteval.{s.version}"
            add(f"{prefix}.pass_rate", figures.exact(s.pass_rate))
            for name in ("ran", "passed", "failed", "errored", "skipped"):
                add(f"{prefix}.{name}", str(getattr(s, name)))
            add(f"{prefix}.mean_score", figures.exact(s.mean_score))
            if s.mean_steps is not None:
                add(f"{prefix}.mean_steps", figures.exact(s.mean_steps))
                for name in ("tool_calls", "tool_errors", "hit_max_steps"):
                    add(f"{prefix}.{name}", str(getattr(s, name)))
            for k, value in s.pass_at_k.items():
                add(f"{prefix}.pass@{k}", figures.exact(value))
            for k in self.ks:
                mine = [c for c in self.cases if c.version == s.version]
                add(f"{prefix}.pass^{k}", figures.exact(mean_pass_hat_k(mine, k)))
            for group in GROUPS:
                for label in group_labels([s], group):
                    if label == figures.NONE:
                        continue  # items without a label: no property named "...quality.-"
                    passed, total = s.groups[group][label]
                    name = safe_line(f"{prefix}.{group}.{label}")  # a case file's category
                    add(name, figures.exact(passed / total))

    def summary_json(self) -> dict[str, Any]:
        return {
            "versions": {s.version: s.to_json() for s in self.summaries},
            "comparisons": [c.to_json() for c in self.comparisons],
            "gate_failures": self.gate_failures,
            "prompt_changes": self.prompt_changes,
            "stopped_early": self.stopped_early,
            "pass_hat_k": {
                v: {f"pass^{k}": hat for k, hat in by_k.items()}
                for v, by_k in self._pass_hat().items()
            },
            "flaky": [
                {**asdict(c), "wilson95": c.interval, "verdict": c.verdict}
                for c in self.cases
                if c.flaky
            ],
            "results_files": [display(p) for p in self.written],
            "output_errors": self.output_errors,
            "inline": [
                {k: getattr(r, k) for k in ("test", "case_id", "prompt", "sample", "passed",
                                            "score", "replayed", "outcome")}
                for r in self.inline
            ],
        }  # fmt: skip

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        def write(line: str, **markup: bool) -> None:
            # versions, case ids, labels, prompt texts and paths come from files
            terminalreporter.write_line(safe_line(line), **markup)

        if self.inline:
            terminalreporter.write_sep("-", "prompteval inline runs")
            for line in inline_lines(self.inline):
                write(line)
        if not self.results:
            return
        try:
            blocks = render(
                self.summaries, self.comparisons, self.details, self._where, self._pass_hat()
            )
            samples = sample_lines(self.cases, self.ks)
        except Exception as exc:  # the gates, the files written and the exit status still show
            blocks, samples = [("prompteval summary", [f"not shown: {_internal(exc)}"])], []
        if self.settings.stop_early:
            samples.append(
                f"--prompteval-stop-early: {self.stopped_early} samples not drawn (calls saved)"
            )
        for title, lines in [*blocks, ("samples", samples)]:
            if lines:
                terminalreporter.write_sep("=" if title == "prompteval summary" else "-", title)
            for line in lines:
                write(line)
        if self.prompt_changes:
            terminalreporter.write_sep("-", "prompt changes")
            for line in self.prompt_changes:
                write(line)
        if self.recordings:
            terminalreporter.write_sep("-", "recordings")
            for line in self.recordings:
                write(line)
        for warning in self._kappa_warnings():
            write(f"prompteval warning: {warning}", yellow=True, bold=True)
        for failure in self.gate_failures:
            write(f"prompteval gate failed: {failure}", red=True, bold=True)
        for path in self.written:
            write(f"prompteval results: {display(path)}")
        for error in self.output_errors:
            write(f"prompteval: not written: {error}", red=True, bold=True)
        if self.html_written is not None:
            write(f"prompteval report: {display(self.html_written)}")
        for shown in self.markdown_written:
            write(f"prompteval markdown: {shown}")

    def _kappa_warnings(self) -> list[str]:
        """prompteval_min_kappa: the judges this run used, against their calibrations."""
        min_kappa = self.settings.min_kappa
        models = sorted({r.judge.model for r in self.results if r.judge is not None})
        if min_kappa is None or not models:
            return []
        try:
            return kappa_warning(self.settings.results_dir, models, min_kappa)
        except PromptevalError as exc:
            return [str(exc)]


def _internal(exc: Exception) -> str:
    return f"internal error of prompteval, please report it: {type(exc).__name__}: {exc}"


def _sharing_pairs(
    order: Sequence[str], by_version: dict[str, list[ItemResult]]
) -> list[tuple[str, str]]:
    """``--prompt=all``: (reference, version) for each version and the first one before it
    that shares a case with it (v2 against v1), never a prompt that runs other cases."""
    cases = {v: {case_key(r) for r in by_version.get(v, [])} for v in order}
    pairs = []
    for index, version in enumerate(order):
        reference = next((u for u in order[:index] if cases[u] & cases[version]), None)
        if reference is not None:
            pairs.append((reference, version))
    return pairs


def _by_version(cases: list[CaseSamples]) -> dict[str, list[CaseSamples]]:
    grouped: dict[str, list[CaseSamples]] = {}
    for c in cases:
        grouped.setdefault(c.version, []).append(c)
    return grouped


def _git_version_changes(versions: Sequence[PromptVersion]) -> list[str]:
    """What changed in the --prompt version against each version read from git."""
    first, *others = versions or (None,)
    lines: list[str] = []
    for other in others:
        if first is not None and SEPARATOR in other.version + first.version:
            old, new = (other, first) if SEPARATOR in other.version else (first, other)
            lines += prompt_changes(old, new)
    return lines


def _recording_lines(trusted: TrustedRecordings | None, results: list[ItemResult]) -> list[str]:
    """With trusted recordings: what the checkout changed, and what the items did with the
    recordings the trusted ref does not have."""
    if trusted is None:
        return []
    lines = trusted.changes().lines()
    uses = Counter(r.unverified for r in results if r.unverified)
    if uses:
        lines.append(
            "items on unverified recordings: "
            + ", ".join(f"{n} {what}" for what, n in sorted(uses.items()))
        )
    return lines


def inline_lines(results: list[ItemResult]) -> list[str]:
    """One line per inline run: the test, the version, the verdict, whether it replayed."""
    lines = []
    for r in results:
        score = "no score" if r.score is None else f"score {figures.score(r.score)}"
        verdict = "passed" if r.passed else (r.outcome or "failed")
        replayed = r.replayed
        source = "no call" if replayed is None else ("replayed" if replayed else "live")
        lines.append(f"{r.test} [{r.prompt}]: {verdict}, {score}, {source}")
    return lines


def _junit_value(value: object) -> object:
    return safe_line(value) if isinstance(value, str) else value


def _junit_properties(props: list[tuple[str, object]]) -> list[tuple[str, object]]:
    """The result dict as flat ``prompteval.<field>`` properties, for JUnit XML."""
    flat: list[tuple[str, object]] = []
    for key, value in props:
        if key == RESULT_KEY and isinstance(value, dict):
            # category, difficulty, model: text from files
            flat += [
                (f"prompteval.{f}", "" if value.get(f) is None else _junit_value(value[f]))
                for f in JUNIT_FIELDS
            ]
        else:
            flat.append((key, value))
    return flat
