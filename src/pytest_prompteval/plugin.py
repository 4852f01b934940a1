"""pytest hooks: options from the settings table, the run object, the fixtures."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from pytest_prompteval.core.result import RESULT_KEY
from pytest_prompteval.engine.settings import SETTINGS
from pytest_prompteval.pytest import hookspecs
from pytest_prompteval.pytest.idle_plugins import IdleHypothesis
from pytest_prompteval.pytest.items import CaseItem
from pytest_prompteval.pytest.reporting import RunReport
from pytest_prompteval.pytest.run import RUN_KEY, RunPlugin, build_settings, include_case_dirs

if TYPE_CHECKING:
    from pytest_prompteval.pytest.fixture import Prompteval


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("prompteval", "prompt evaluation (pytest-prompteval)")
    for s in SETTINGS:
        if s.option is not None:
            names = (s.option, *s.aliases)
            dest = f"prompteval_{s.name}"
            if s.flag:
                group.addoption(*names, dest=dest, action="store_true", help=s.help)
            elif s.repeat:
                group.addoption(*names, dest=dest, action="append", metavar=s.metavar, help=s.help)
            else:
                group.addoption(
                    *names, dest=dest, metavar=s.metavar, choices=s.choices, help=s.help
                )
        if s.ini is not None:
            parser.addini(s.ini, s.help, type=s.ini_type)  # type: ignore[arg-type]


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    settings = build_settings(config)
    run = RunPlugin(config, settings)
    config.stash[RUN_KEY] = run
    config.pluginmanager.register(run, "prompteval-run")
    report = None if run.worker else RunReport(config, run)  # workers: the controller reports
    if report is not None:
        config.pluginmanager.register(report, "prompteval-report")
    config.pluginmanager.register(JsonReportMetadata(report), "prompteval-json-report")
    if settings.prompt is not None:
        engine = run.engine  # a bad prompt version or table is a usage error now, not later
        include_case_dirs(config, settings.case_dirs)
        config.pluginmanager.register(IdleHypothesis(), "prompteval-idle-hypothesis")
        calls_here = run.worker or not getattr(config.option, "numprocesses", 0)
        if calls_here and not config.option.collectonly:
            engine.warm()
        if config.option.markers:
            run.register_case_markers()


#: a results file this big has the view's digest written with it (a smaller one the view
#: reads in well under a second: its digest would only fill the cache)
DIGEST_FROM_BYTES = 8 << 20


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """After the results files are written: the big ones' digests for ``prompteval view``."""
    report = session.config.pluginmanager.get_plugin("prompteval-report")
    written = report.written if isinstance(report, RunReport) else []
    big = [p for p in written if p.is_file() and p.stat().st_size >= DIGEST_FROM_BYTES]
    if big:
        from pytest_prompteval.view.digest import keep_written  # the view's code: only then

        keep_written(big)


class JsonReportMetadata:
    """Puts each item's result into pytest-json-report's per-test metadata, and the summary
    into a ``prompteval`` section of the report."""

    def __init__(self, report: RunReport | None):
        self.report = report

    @pytest.hookimpl(optionalhook=True)
    def pytest_json_modifyreport(self, json_report: dict[str, Any]) -> None:
        if self.report is not None:
            json_report["prompteval"] = self.report.summary_json()

    @pytest.hookimpl(optionalhook=True)
    def pytest_json_runtest_metadata(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
        # the item's calls and scoring run in its setup, which may end it with an error
        if call.when == "setup" and isinstance(item, CaseItem):
            return {RESULT_KEY: item.result.to_json()}
        return {}


@pytest.fixture
def prompteval(request: pytest.FixtureRequest) -> Prompteval:
    """Run prompt versions on inline cases and score them, from a Python test:
    ``r = prompteval.run("current", input={...}); prompteval.check(r, "claude", min_score=0.8)``.
    """
    from pytest_prompteval.pytest.fixture import Prompteval  # for the tests that use it only

    assert isinstance(request.node, pytest.Item)
    return Prompteval(request.node, request.config.stash[RUN_KEY].engine)


@pytest.fixture
def anthropic_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """An Anthropic-compatible server on 127.0.0.1; the SDK in this process is pointed at it."""
    from pytest_prompteval.testing import AnthropicServer

    with AnthropicServer() as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key-not-secret")
        yield server
