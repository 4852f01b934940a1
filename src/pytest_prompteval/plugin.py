"""pytest hooks: options, collection of YAML cases, results on reports, terminal summary."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_prompteval.core.sharding import parse_shard, shard_of
from pytest_prompteval.engine.session import SCORER_MODES, build_session, prompt_dir
from pytest_prompteval.providers.anthropic import AnthropicProvider
from pytest_prompteval.providers.budget import Budget
from pytest_prompteval.providers.ratelimit import RateGate
from pytest_prompteval.providers.store import MODES
from pytest_prompteval.pytest import hookspecs
from pytest_prompteval.pytest.batch import send_session_batch
from pytest_prompteval.pytest.fixture import RESULT_KEY, Prompteval
from pytest_prompteval.pytest.items import SESSION_KEY, CaseFile, CaseItem
from pytest_prompteval.report.collector import RunReport
from pytest_prompteval.scoring.judge import DEFAULT_JUDGE_MODEL

RUN_DIR_KEY = "prompteval_run_dir"
RUN_DIR = pytest.StashKey[str]()


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("prompteval", "prompt evaluation (pytest-prompteval)")
    group.addoption(
        "--prompt",
        dest="prompteval_prompt",
        metavar="VERSION",
        help="collect prompt cases and run them with this prompt version ('all' for every one)",
    )
    group.addoption(
        "--compare",
        dest="prompteval_compare",
        action="append",
        metavar="VERSION",
        help="also run every case with this prompt version (repeatable)",
    )
    group.addoption(
        "--prompteval-model",
        metavar="MODEL",
        help="send every request to this model, whatever the prompt versions say",
    )
    group.addoption(
        "--prompteval-record",
        choices=MODES,
        help="none: replay only; new: record what is missing; all: record everything again "
        "(default: new when ANTHROPIC_API_KEY is set or a python: provider is named, else none)",
    )
    group.addoption(
        "--prompteval-provider",
        default="anthropic",
        metavar="SPEC",
        help="'anthropic' (default), or python:package.module:function to call your own code",
    )
    group.addoption(
        "--prompteval-samples",
        type=int,
        default=1,
        metavar="N",
        help="independent samples per case and version (a case's samples: overrides)",
    )
    group.addoption(
        "--prompteval-scorer",
        choices=SCORER_MODES,
        help="automatic (default), claude (the judge scores every item) or hybrid (automatic "
        "on every item, the judge on a sample)",
    )
    group.addoption(
        "--reviewer-model",
        "--prompteval-reviewer-model",
        dest="prompteval_reviewer_model",
        metavar="MODEL",
        help=f"the judge's model (default {DEFAULT_JUDGE_MODEL})",
    )
    group.addoption(
        "--prompteval-review-template",
        metavar="NAME",
        help="the review template (rubric) to judge with; a case's review_template: wins",
    )
    group.addoption(
        "--prompteval-judge-rate",
        type=float,
        default=0.2,
        metavar="RATE",
        help="hybrid: share of cases the judge sees (default 0.2)",
    )
    group.addoption(
        "--prompteval-seed",
        default="0",
        metavar="SEED",
        help="seed of the hybrid sample (the same cases for every prompt version)",
    )
    group.addoption(
        "--prompteval-judge-repeats",
        type=int,
        default=1,
        metavar="N",
        help="judge each response N times, to see the judge's own spread",
    )
    group.addoption(
        "--prompteval-pass-k",
        default="1",
        metavar="K[,K...]",
        help="the k of pass@k to report (k <= samples), e.g. 1,10",
    )
    group.addoption(
        "--prompteval-details",
        action="store_true",
        help="longer summary: every regression and improvement",
    )
    group.addoption(
        "--prompteval-results",
        metavar="DIR",
        help="where each run's results are kept (ini prompteval_results); 'none' keeps none",
    )
    group.addoption(
        "--prompteval-concurrency",
        type=int,
        metavar="N",
        help="model calls in flight at once, sent ahead of the items (default 8; 1: none)",
    )
    group.addoption(
        "--prompteval-shard",
        metavar="I/N",
        help="run the I-th of N stable shards of the cases (every version and sample of a "
        "case in the same shard); join the results with 'prompteval merge'",
    )
    group.addoption(
        "--prompteval-batch",
        action="store_true",
        help="send the run's calls as one Message Batch (half price) before the items run",
    )
    group.addoption(
        "--prompteval-batch-poll",
        type=float,
        default=5.0,
        metavar="SECONDS",
        help="first wait between batch status checks (doubles up to a minute)",
    )
    group.addoption(
        "--prompteval-code-pass",
        choices=("all", "threshold"),
        help="code cases: a sample passes when all its tests pass (all, the default) or when "
        "its partial-correctness score reaches the threshold",
    )
    group.addoption(
        "--prompteval-code-workers",
        type=int,
        metavar="N",
        help="code cases: sandbox servers running samples in parallel (default: the CPU count)",
    )
    group.addoption(
        "--prompteval-unsafe-sandbox",
        action="store_true",
        default=None,
        help="code cases: run generated code even where the sandbox cannot isolate it",
    )
    group.addoption(
        "--prompteval-max-cost",
        type=float,
        metavar="USD",
        help="stop starting new calls once live calls have cost this much; the rest skip",
    )
    group.addoption(
        "--prompteval-html",
        metavar="FILE",
        help="write a self-contained HTML report (inline SVG charts) to FILE",
    )
    group.addoption(
        "--prompteval-baseline",
        metavar="FILE",
        help="compare the --prompt version with a stored run's results",
    )
    group.addoption(
        "--prompteval-fail-under",
        type=float,
        metavar="SCORE",
        help="fail the session when the --prompt version's mean score is under SCORE",
    )
    group.addoption(
        "--prompteval-max-regression",
        type=float,
        metavar="DELTA",
        help="fail the session when the --prompt version scores more than DELTA below the "
        "baseline or a compared version, on paired cases",
    )
    group.addoption(
        "--prompteval-record-note",
        metavar="TEXT",
        help="a note written into every recording made in this run",
    )
    parser.addini(
        "prompteval_cases",
        "case directories, relative to the rootdir",
        type="linelist",
        default=["prompt_cases"],
    )
    parser.addini("prompteval_prompts", "prompt version directory", default="prompts")
    parser.addini("prompteval_recordings", "recordings directory", default="prompt_recordings")
    parser.addini("prompteval_threshold", "score an item needs to pass", default="0.7")
    parser.addini("prompteval_model", "model for prompt versions that name none")
    parser.addini("prompteval_scoring", "YAML file extending the automatic scorer's tables")
    parser.addini("prompteval_prices", "YAML file extending the price table")
    parser.addini("prompteval_scorer", "automatic, claude or hybrid")
    parser.addini("prompteval_results", "run history directory", default="prompt_results")
    parser.addini(
        "prompteval_code_timeout", "code cases: seconds a sample may run at most", default="3"
    )
    parser.addini("prompteval_code_pass", "code cases: all or threshold", default="all")
    parser.addini("prompteval_code_workers", "code cases: sandbox servers (default: CPU count)")
    parser.addini(
        "prompteval_unsafe_sandbox",
        "code cases: run generated code even where the sandbox cannot isolate it",
        type="bool",
        default=False,
    )
    parser.addini("prompteval_concurrency", "model calls in flight at once", default="8")
    parser.addini("prompteval_review_templates", "YAML file of review templates for the judge")


def _include_case_dirs(config: pytest.Config, case_dirs: tuple[Path, ...]) -> None:
    """With no explicit paths on the command line, collect the case directories too."""
    if config.args_source == pytest.Config.ArgsSource.ARGS:
        return
    given = [Path(a).resolve() for a in config.args]
    for directory in case_dirs:
        if directory.is_dir() and not any(g == directory or g in directory.parents for g in given):
            config.args.append(str(directory))


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    if not config.option.prompteval_prompt:
        return
    ps = build_session(config)
    config.stash[SESSION_KEY] = ps
    # State the run's processes share (budget, rate-limit pauses) lives in one directory,
    # made by the controller and handed to each xdist worker.
    run_dir = getattr(config, "workerinput", {}).get(RUN_DIR_KEY) or tempfile.mkdtemp(
        prefix="prompteval-run-"
    )
    config.stash[RUN_DIR] = run_dir
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(ShareRunDir(run_dir), "prompteval-run-dir")
    if config.option.prompteval_max_cost is not None:
        ledger = Path(run_dir) / "budget"
        ps.store.budget = Budget(config.option.prompteval_max_cost, ledger, ps.prices)
    if isinstance(ps.store.provider, AnthropicProvider):
        ps.store.provider.gate = RateGate(ps.concurrency, Path(run_dir) / "ratelimit.json")
    _include_case_dirs(config, ps.case_dirs)
    if hasattr(config, "workerinput"):
        report = None  # an xdist worker: the controller reports
    else:
        report = RunReport(config, ps)
        config.pluginmanager.register(report, "prompteval-report")
    if hasattr(config, "_json_report"):
        config.pluginmanager.register(JsonReportMetadata(report), "prompteval-json-report")


def pytest_sessionfinish(session: pytest.Session) -> None:
    ps = session.config.stash.get(SESSION_KEY, None)
    if ps is not None:
        ps.store.stop()


def pytest_unconfigure(config: pytest.Config) -> None:
    ps = config.stash.get(SESSION_KEY, None)
    if ps is not None:
        ps.close()
    run_dir = config.stash.get(RUN_DIR, None)
    if run_dir is not None and not hasattr(config, "workerinput"):
        shutil.rmtree(run_dir, ignore_errors=True)


class ShareRunDir:
    """Hands the controller's run directory to every xdist worker."""

    def __init__(self, run_dir: str):
        self.run_dir = run_dir

    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput[RUN_DIR_KEY] = self.run_dir


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> None:
    ps = session.config.stash.get(SESSION_KEY, None)
    option = session.config.option
    if ps is not None and option.prompteval_batch and not option.collectonly:
        send_session_batch(session, ps)


def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    shard = config.option.prompteval_shard
    if shard is None or SESSION_KEY not in config.stash:
        return
    index, count = parse_shard(shard)
    keep: list[pytest.Item] = []
    drop: list[pytest.Item] = []
    for item in items:
        mine = not isinstance(item, CaseItem) or shard_of(item.nodeid, count) == index
        (keep if mine else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    # Recordings and run history hold thousands of files and never a test: not walked.
    ps = config.stash.get(SESSION_KEY, None)
    return True if ps is not None and ps.never_collected(collection_path) else None


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> CaseFile | None:
    ps = parent.config.stash.get(SESSION_KEY, None)
    if ps is not None and ps.owns(file_path):
        return CaseFile.from_parent(parent, path=file_path)
    return None


class JsonReportMetadata:
    """Puts each item's result into pytest-json-report's per-test metadata, and the summary
    into a ``prompteval`` section of the report."""

    def __init__(self, report: RunReport | None):
        self.report = report

    def pytest_json_modifyreport(self, json_report: dict[str, Any]) -> None:
        if self.report is not None:
            json_report["prompteval"] = self.report.summary_json()

    def pytest_json_runtest_metadata(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
        if call.when == "call" and isinstance(item, CaseItem):
            return {RESULT_KEY: item.result}
        return {}


@pytest.fixture
def prompteval(request: pytest.FixtureRequest) -> Prompteval:
    """Run prompt versions on inline cases and score them, from a Python test:
    ``r = prompteval.run("current", input={...}); prompteval.check(r, "claude", min_score=0.8)``.
    """
    config = request.config
    if SESSION_KEY not in config.stash:
        config.stash[SESSION_KEY] = build_session(config)
    assert isinstance(request.node, pytest.Item)
    return Prompteval(request.node, config.stash[SESSION_KEY], prompt_dir(config))


@pytest.fixture
def anthropic_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """An Anthropic-compatible server on 127.0.0.1; the SDK in this process is pointed at it."""
    from pytest_prompteval.testing import AnthropicServer

    with AnthropicServer() as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key-not-secret")
        yield server
