"""The report's hooks: they gather what pytest gives (reports, items, the terminal, the exit
status) and hand it to ``report.session``. Registered only on the process that prints
(never on an xdist worker)."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_prompteval.core.errors import PromptevalError
from pytest_prompteval.core.safetext import safe_line
from pytest_prompteval.engine.evaluate import failure_reason
from pytest_prompteval.engine.settings import ALL_VERSIONS, Settings
from pytest_prompteval.pytest.adapters import junit_global_property
from pytest_prompteval.pytest.items import CASE_DOMAIN, CASE_SUFFIXES
from pytest_prompteval.report.junit import item_properties
from pytest_prompteval.report.session import MIN_PASS_KEY, ReportOptions, ReportSession, Sources

if TYPE_CHECKING:
    from pytest_prompteval.pytest.run import RunPlugin


def _kappa_warning(results_dir: Path | None, models: list[str], min_kappa: float) -> list[str]:
    # the calibration's module only when prompteval_min_kappa is set and a judge ran
    from pytest_prompteval.workflows.calibrate import kappa_warning

    return kappa_warning(results_dir, models, min_kappa)


class RunReport:
    def __init__(self, config: pytest.Config, run: RunPlugin):
        self.config = config
        self.settings = settings = run.settings
        baseline = None
        if settings.baseline is not None:
            from pytest_prompteval.core.history import load_run  # only with a baseline

            try:
                baseline = load_run(settings.baseline)
            except PromptevalError as exc:
                raise pytest.UsageError(safe_line(f"--prompteval-baseline: {exc}")) from None
        sources = Sources(
            lambda: run.engine.versions,
            lambda: run.engine.trusted,
            failure_reason,
            _kappa_warning,
            run.unrun_line,
        )
        self.report = ReportSession(_options(settings), sources, config.rootpath, baseline)

    @property
    def written(self) -> list[Path]:
        """The results files the run wrote (none before its end)."""
        return self.report.journal.written

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        path, line, domain = report.location
        if line is not None and domain.startswith(CASE_DOMAIN) and path.endswith(CASE_SUFFIXES):
            # pytest keeps a location's line 0-based and JUnit writes it as it is: a case's
            # own line, as the Markdown links it, for CI annotations read from JUnit
            report.location = (path, line + 1, domain)
        if report.when == "teardown":
            report.user_properties = item_properties(report.user_properties)
        # an item's result is on the report of its test phase, or of its setup when the
        # setup ended it (an error of the calls, a budget skip)
        scored = report.when == "call" or (report.when == "setup" and not report.passed)
        location = report.location[:2]
        progress = self.report.take(report.user_properties, location, report.failed, scored)
        reporter = self.config.pluginmanager.get_plugin("terminalreporter") if progress else None
        if reporter is not None:
            for text in progress:
                reporter.write_line(text)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.report.progress.total = len(session.items)

    @pytest.hookimpl(optionalhook=True)  # a hook of xdist's, which may not be installed
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        self.report.progress.total = len(ids)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if self.settings.prompt is None or self.settings.estimate:
            return  # nothing ran, or only inline runs of the fixture (their own block)
        self.report.analyse()
        self._min_pass_reports(session)
        status = self.report.decide(int(session.exitstatus))
        if status != session.exitstatus:
            session.exitstatus = status
        partial = bool(session.shouldstop or session.shouldfail) or exitstatus in (
            pytest.ExitCode.INTERRUPTED,
            pytest.ExitCode.INTERNAL_ERROR,
        )
        # before pytest's JUnit file is written, after this hook
        self.report.write(junit_global_property(self.config), partial)
        if self.report.outputs.errors and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def _min_pass_reports(self, session: pytest.Session) -> None:
        """A case below its min_pass is one failed test, for every reporter (the terminal's
        counts, JUnit, json-report): its failing samples were xfail while the verdict was
        open, so without it JUnit would say failures="0" of a run that failed."""
        plugins = session.config.pluginmanager
        terminal = plugins.get_plugin("terminalreporter")
        # not through the terminal's progress line, which ended with the last item: into its
        # counts, its failures and its short summary
        log = plugins.subset_hook_caller("pytest_runtest_logreport", [terminal] if terminal else [])
        locations = self.report.locations
        for c in [c for c in self.report.analysis.cases if c.verdict is False]:
            path, line = locations.get(c.case, (c.case.split("::", 1)[0], 1))
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

    def summary_json(self) -> dict[str, Any]:
        return self.report.to_json()

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        for line in self.report.terminal_lines():
            if line.sep is not None:
                terminalreporter.write_sep(line.sep, line.text)
            else:  # versions, case ids, labels, prompt texts and paths come from files
                markup = dict.fromkeys(line.markup, True)
                terminalreporter.write_line(safe_line(line.text), **markup)


def _options(settings: Settings) -> ReportOptions:
    named = {
        f.name: getattr(settings, f.name) for f in fields(ReportOptions) if f.name != "all_versions"
    }
    return ReportOptions(all_versions=settings.prompt == ALL_VERSIONS, **named)
