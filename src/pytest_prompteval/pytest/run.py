"""The run's lifecycle, in one object registered in ``pytest_configure`` (as xdist's DSession
is): settings, the engine, the directory the run's processes share, collection state, calls
sent ahead, the batch and shards. The report on the controller is a plugin of its own
(``reporting.RunReport``)."""

from __future__ import annotations

import fnmatch
import gc
import os
import re
import shlex
import shutil
import tempfile
from collections.abc import Callable, Generator, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_prompteval.core.cases import Case, load_case_file
from pytest_prompteval.core.errors import PromptevalError, display
from pytest_prompteval.core.safetext import safe_line, safe_text
from pytest_prompteval.core.schema import Declared, suggestion
from pytest_prompteval.core.sharding import shard_of
from pytest_prompteval.engine.engine import Engine, owned_directories
from pytest_prompteval.engine.settings import SETTINGS, SettingError, Settings, typed_names
from pytest_prompteval.interaction.tools import marked_tools
from pytest_prompteval.pytest.adapters import rootdir_moved_by, unknown_ini_keys
from pytest_prompteval.pytest.items import CaseFile, CaseItem
from pytest_prompteval.pytest.lookahead import Lookahead
from pytest_prompteval.pytest.snapshots import snapshot_folders
from pytest_prompteval.pytest.work import Work, WorkList, work_list
from pytest_prompteval.report.flaky import SampleTally
from pytest_prompteval.scoring.registry import marked_scorers

if TYPE_CHECKING:
    from pytest_prompteval.workflows.affected import Affected

RUN_DIR_KEY = "prompteval_run_dir"
RUN_KEY = pytest.StashKey["RunPlugin"]()
PATH_OPTIONS = tuple(
    name for s in SETTINGS if s.option and s.metavar in ("FILE", "DIR") for name in (s.option,)
)


INI_PREFIX = "prompteval_"
#: pytest's options that end a run without running its items
_NO_EVALUATION = (
    ("--collect-only", "collectonly"),
    ("--markers", "markers"),
    ("--fixtures", "showfixtures"),
    ("--fixtures-per-test", "show_fixtures_per_test"),
    ("--setup-plan", "setupplan"),
)
LABEL_WARNING_KEY = "prompteval_label_warning"
UNRUN_KEY = "prompteval_unrun"
#: unrun cases named in the summary (all with --prompteval-details)
UNRUN_SHOWN = 10
# a name in a -m expression, as pytest's own grammar reads it, and its keywords
_MARKER_NAME = re.compile(r"(?:\w|:|\+|-|\.|\[|\]|\\|/)+(?!\s*=)")
_MARKER_WORDS = frozenset({"and", "or", "not", "True", "False", "None"})


def typed_settings(config: pytest.Config) -> frozenset[str] | None:
    """The settings the command line and ``PYTEST_ADDOPTS`` gave (``typed_names``), not an
    ini file's ``addopts``; None on an xdist worker, whose controller checked them."""
    if hasattr(config, "workerinput"):
        return None
    extra = shlex.split(os.environ.get("PYTEST_ADDOPTS", ""))
    return typed_names([*map(str, config.invocation_params.args), *extra])


def build_settings(config: pytest.Config) -> Settings:
    _check_ini_keys(config)
    moved = rootdir_moved_by(config, PATH_OPTIONS)
    if moved is not None:
        option = moved.split(" ", 1)[0]
        raise pytest.UsageError(
            f"{moved}: pytest took the value for a test path and moved the rootdir to "
            f"{config.rootpath}; write it as {option}=VALUE"
        )
    try:
        settings = Settings.build(
            config.rootpath,
            vars(config.option),
            config.getini,
            typed=typed_settings(config),
            invocation_dir=config.invocation_params.dir,
        )
    except SettingError as exc:
        raise pytest.UsageError(safe_text(str(exc), indent="")) from None
    _check_together(config, settings)
    return settings


def _check_ini_keys(config: pytest.Config) -> None:
    """A misspelt key of ours would silently keep the default (min_pass off, a gate open)."""
    known = sorted(s.ini for s in SETTINGS if s.ini)
    for key in sorted(unknown_ini_keys(config)):
        if key.startswith(INI_PREFIX):
            where = display(config.inipath) if config.inipath else "the ini file"
            raise pytest.UsageError(
                safe_text(
                    f"ini {key}: unknown prompteval option{suggestion(key, known)} (in {where})"
                )
            )


def _check_together(config: pytest.Config, settings: Settings) -> None:
    """Options that cannot go with pytest's: gates with no evaluation, and what xdist's
    -n cannot do."""
    if settings.exit == "gates" and not settings.estimate:
        # a gate exits 0 only on a verdict: an ini's addopts = --co would pass it unread
        listing = [
            flag
            for flag, dest in _NO_EVALUATION
            if getattr(config.option, dest, False) and settings.prompt is not None
        ]
        if listing:
            raise pytest.UsageError(
                f"--prompteval-exit=gates decides on evaluated cases: {listing[0]} evaluates "
                "none (from the command line or the ini's addopts)"
            )
    if settings.estimate and getattr(config.option, "numprocesses", None):
        raise pytest.UsageError("--prompteval-estimate runs no items: use it without -n (xdist)")
    if settings.stop_early and getattr(config.option, "numprocesses", None):
        raise pytest.UsageError(
            "--prompteval-stop-early decides from the samples drawn before: use it without -n"
        )
    if settings.batch and getattr(config.option, "numprocesses", None):
        raise pytest.UsageError(
            "--prompteval-batch sends one batch per run: use it without -n (xdist)"
        )


#: Whether this process froze a collection's objects (``pytest_collection``).
_collection_frozen = False


class RunPlugin:
    """The run's lifecycle as a pytest plugin: settings, the engine, collection, the work
    list and the calls sent ahead (an item sees it as its ``ItemContext``)."""

    def __init__(self, config: pytest.Config, settings: Settings):
        self.config = config
        self.settings = settings
        self.worker = hasattr(config, "workerinput")
        # State the run's processes share (budget, rate-limit pauses) lives in one
        # directory, made by the controller and handed to each xdist worker.
        inherited = getattr(config, "workerinput", {}).get(RUN_DIR_KEY)
        self.run_dir = Path(inherited or tempfile.mkdtemp(prefix="prompteval-run-"))
        self._engine: Engine | None = None
        self.lookahead: Lookahead | None = None
        self.work: WorkList = ()  # made once the items are collected
        # collection state: markers registered so far, and where each case id was defined
        self.registered_markers: set[str] = set()
        #: a -m expression's labels that no case has, said at the end of the run
        self.label_warning: str | None = None
        self.case_ids: dict[str, str] = {}
        #: cases no selected version runs: id -> (file:line, listed in prompteval_unrun_ok)
        self.unrun_cases: dict[str, tuple[str, bool]] = {}
        self._skip_dirs = owned_directories(settings)
        self._snapshots: frozenset[Path] | None = None
        #: set by ``prompteval list`` and ``check-cases``: collect the cases even when no
        #: prompt version loads, to report every problem
        self.checking = False
        self.affected: Affected | None = None
        self.tally = SampleTally() if settings.stop_early else None

    @property
    def engine(self) -> Engine:
        """Built on first use: a run that never evaluates (no --prompt, no fixture) never
        loads tables or providers."""
        if self._engine is None:
            try:
                self._engine = Engine(
                    self.settings, self.run_dir, self._scorers, self._declared(), self._tools
                )
            except PromptevalError as exc:
                raise pytest.UsageError(safe_text(str(exc), indent="")) from None
            self._engine.progress = self._progress
            ref = self.settings.affected
            if self.collecting and ref is not None:
                from pytest_prompteval.workflows.affected import affected_since  # when asked

                try:  # before anything is written: a bad ref is a usage error
                    self.affected = affected_since(
                        self.settings.rootpath, ref, self.settings.case_dirs, self._engine.versions
                    )
                except PromptevalError as exc:
                    message = safe_text(f"--prompteval-affected: {exc}", indent="")
                    raise pytest.UsageError(message) from None
        return self._engine

    def _progress(self, line: str) -> None:
        """A long step at collection (an environment's build), on the terminal."""
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.ensure_newline()
            reporter.write_line(safe_text(line, indent=""))

    def _declared(self) -> Declared:
        """The ini's declared fields and those the project's hooks claim."""
        hook = self.config.hook

        def names(ini: tuple[str, ...], answers: list[Any]) -> frozenset[str]:
            return frozenset(ini).union(str(n) for answer in answers for n in answer or ())

        return Declared(
            names(self.settings.case_fields, hook.pytest_prompteval_case_fields()),
            names(self.settings.prompt_fields, hook.pytest_prompteval_prompt_fields()),
        )

    def _scorers(self) -> dict[str, Any]:
        """``@scorer`` functions in the run's plugins (conftests first of all), then what
        the ``pytest_prompteval_scorers`` hook returns."""
        return self._named(marked_scorers, self.config.hook.pytest_prompteval_scorers)

    def _tools(self) -> dict[str, Any]:
        """``@tool`` functions in the run's plugins, then the ``pytest_prompteval_tools``
        hook's."""
        return self._named(marked_tools, self.config.hook.pytest_prompteval_tools)

    def _named(
        self, marked: Callable[[Iterable[Any]], dict[str, Any]], hook: Any
    ) -> dict[str, Any]:
        found = dict(marked(self.config.pluginmanager.get_plugins()))
        for named in reversed(hook()):
            found.update(named or {})
        return found

    def register_marker(self, marker: str) -> None:
        if marker not in self.registered_markers:
            self.config.addinivalue_line("markers", f"{marker}: prompt case label")
            self.registered_markers.add(marker)

    def register_case_markers(self) -> None:
        """For ``pytest --markers``, which collects nothing: the labels of every case."""
        for directory in self.settings.case_dirs:
            for path in sorted(directory.rglob("*.y*ml")) if directory.is_dir() else ():
                try:
                    cases = load_case_file(
                        path, self.engine.declared.case_fields, self.settings.rootpath
                    ).cases
                except PromptevalError:
                    continue  # reported where it matters: collection
                for case in cases:
                    for marker in case.markers:
                        self.register_marker(marker)

    def unrun(self, case: Case) -> None:
        """A case that no selected version's ``applies_to`` takes: named at the end of the
        run, and in gates mode an error unless ini ``prompteval_unrun_ok`` lists it (a gate
        must not pass on fewer cases than the project holds without a word)."""
        ok = any(fnmatch.fnmatchcase(case.id, p) for p in self.settings.unrun_ok)
        if not ok and self.settings.exit == "gates" and not self.checking:
            names = ", ".join(v.version for v in self.engine.versions)
            raise PromptevalError(
                f"case {case.id!r} runs under no selected version (the applies_to of {names} "
                "leaves it out): label it for one, or list it in ini prompteval_unrun_ok",
                case.path,
                case.line,
            )
        self.unrun_cases[case.id] = (display(case.path, case.line), ok)

    def unrun_line(self) -> str | None:
        """One line naming the cases no selected version ran."""
        if not self.unrun_cases:
            return None
        named = [f"{where} {case}" for case, (where, ok) in self.unrun_cases.items() if not ok]
        listed = len(self.unrun_cases) - len(named)
        parts = []
        if named:
            shown = named if self.settings.details else named[:UNRUN_SHOWN]
            more = len(named) - len(shown)
            parts.append(
                f"{len(named)} case(s) ran under no selected version (applies_to left them "
                f"out): {', '.join(shown)}"
                + (f" (+{more} more, --prompteval-details)" if more else "")
            )
        if listed:
            parts.append(f"{listed} case(s) listed in prompteval_unrun_ok ran under none")
        return "prompteval: " + "; ".join(parts)

    @property
    def collecting(self) -> bool:
        return self.settings.prompt is not None or self.checking

    # -- xdist ----------------------------------------------------------------------------

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput[RUN_DIR_KEY] = str(self.run_dir)

    # -- collection -----------------------------------------------------------------------

    @pytest.hookimpl(wrapper=True)
    def pytest_collection(self, session: pytest.Session) -> Generator[None, object, object]:
        """Collecting makes objects that live as long as the run, tens of thousands of them:
        the garbage collector, which went over them again and again as they piled up (a
        third of the CPU time of collecting 10,000 cases), waits until collection is over
        and then leaves them out of its rounds (pytest's end-of-session ones too): once per
        process, so one that runs pytest several times keeps one run's objects frozen."""
        global _collection_frozen
        if not self.collecting or not gc.isenabled():
            return (yield)
        gc.disable()
        try:
            return (yield)
        finally:
            gc.enable()
            if not _collection_frozen:
                _collection_frozen = True
                gc.freeze()

    def pytest_ignore_collect(self, collection_path: Path) -> bool | None:
        # Recordings and run history hold thousands of files and never a test: not walked.
        if self.collecting and collection_path in self._skip_dirs:
            return True
        # a repository case's snapshot: its tests (and conftest) are the sandbox's only
        if self._snapshots is None:
            self._snapshots = snapshot_folders(self.settings.case_dirs)
        return True if collection_path in self._snapshots else None

    def pytest_collect_file(self, file_path: Path, parent: pytest.Collector) -> Any:
        if (
            self.collecting
            and file_path.suffix in (".yaml", ".yml")
            and any(
                d == file_path.parent or d in file_path.parents for d in self.settings.case_dirs
            )
        ):
            return CaseFile.make(parent, file_path, self)
        return None

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if self.affected is not None and not self.worker:
            terminalreporter.write_line(self.affected.describe())
        if self.label_warning is not None:
            terminalreporter.write_line(self.label_warning, yellow=True)
        unrun = self.unrun_line()
        if unrun is not None:
            terminalreporter.write_line(safe_line(unrun), yellow=True)

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        samples = [i.spec.samples for i in items if isinstance(i, CaseItem)]
        if samples and self.config.option.markexpr:
            self._check_labels(self.config.option.markexpr)
        k = max(self.settings.pass_ks)
        if samples and k > max(samples):
            raise pytest.UsageError(
                f"--prompteval-pass-k {k}: more than the {max(samples)} sample(s) any case "
                f"has; draw more with --prompteval-samples {k} (or a case's samples:)"
            )
        if self.affected is not None:
            keeps = self.affected.keeps
            deselect(self.config, items, lambda i: keeps(i.case.path, i.case.id))
        if self.settings.shard is None:
            return
        index, count = self.settings.shard
        keep: list[pytest.Item] = []
        drop: list[pytest.Item] = []
        for item in items:
            mine = not isinstance(item, CaseItem) or shard_of(item.nodeid, count) == index
            (keep if mine else drop).append(item)
        if drop:
            self.config.hook.pytest_deselected(items=drop)
            items[:] = keep

    def _check_labels(self, expression: str) -> None:
        """``-m biling`` deselects every case without a word: one line names the labels no
        marker has (from an xdist worker, it reaches the controller's summary)."""
        known = {line.split(":")[0].split("(")[0].strip() for line in self.config.getini("markers")}
        names = dict.fromkeys(_MARKER_NAME.findall(expression))
        unknown = [n for n in names if n not in known and n not in _MARKER_WORDS]
        if unknown:
            labels = sorted(self.registered_markers)
            named = ", ".join(
                f"{n!r}"
                + (f" ({hint.removeprefix('; ')})" if (hint := suggestion(n, labels)) else "")
                for n in unknown
            )
            self.label_warning = (
                f"prompteval: -m {expression!r}: no case or test has the label {named}; case "
                f"labels: {', '.join(labels) or 'none'}"
            )
            if self.worker:
                self.config.workeroutput[LABEL_WARNING_KEY] = self.label_warning  # type: ignore[attr-defined]

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        output = getattr(node, "workeroutput", {})
        self.label_warning = output.get(LABEL_WARNING_KEY) or self.label_warning
        # every worker collects the same cases: any one's list is the run's
        for case, (where, ok) in output.get(UNRUN_KEY, []):
            self.unrun_cases[case] = (where, ok)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Start the sandbox servers while pytest reports the collection (and, under xdist,
        while the worker waits for its first items), so that the first code item finds them
        ready; not when no code item is left to run."""
        self.work = work_list(session.items)
        if self.worker and self.unrun_cases:
            self.config.workeroutput[UNRUN_KEY] = [  # type: ignore[attr-defined]
                [case, list(entry)] for case, entry in self.unrun_cases.items()
            ]
        option = self.config.option
        if self.checking or self.settings.estimate or option.collectonly:
            return
        code = [w.spec.code for w in self.work if w is not None and w.spec.code]
        if code:  # with hypothesis if the first code item, the first to run, needs it
            self.engine.code_runner().sandbox.warm(code[0].properties is not None)

    # -- running --------------------------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> bool | None:
        if self.settings.estimate and self.collecting:
            if not session.config.option.collectonly:
                from pytest_prompteval.pytest.estimating import run_estimate  # when asked

                run_estimate(session, self.work, self.engine)
            return True  # no item runs
        if self.settings.batch and not session.config.option.collectonly and session.items:
            from pytest_prompteval.pytest.batch import send_session_batch  # when asked

            send_session_batch(session, self.work, self.engine, self.settings.batch_poll)
        return None

    def ahead(self, session: pytest.Session, work: Work) -> None:
        """Calls for the items after ``work``'s sent ahead of them (not with concurrency 1)."""
        if self.settings.concurrency <= 1 or self.tally is not None:
            return  # stop-early: a sample's call waits for the verdict of those before it
        if self.lookahead is None:
            self.lookahead = Lookahead(session, self.work, self.engine, self.settings.concurrency)
        self.lookahead.ahead(work)

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.session = session
        xdist = bool(getattr(self.config.option, "numprocesses", None))
        if xdist and not self.worker and self.collecting:
            self._build_environments()

    def _build_environments(self) -> None:
        """Under xdist the controller collects nothing: it builds the repository cases'
        environments first, saying so on the terminal, and the workers find them built. A
        problem is left to the workers' collection, which names it."""
        from pytest_prompteval.workflows.envs import build_all, project_environments  # xdist

        found = project_environments(self.settings, list(self.settings.case_dirs))
        build_all(self.settings, found.specs, self._progress)

    @pytest.hookimpl(trylast=True)  # after pytest's own, which sets shouldfail for -x
    def pytest_runtest_logreport(self) -> None:
        session = getattr(self, "session", None)
        if self._engine is not None and session and (session.shouldfail or session.shouldstop):
            self._engine.stop()  # -x or a stop: nothing queued ahead starts

    def pytest_sessionfinish(self) -> None:
        if self._engine is not None:
            self._engine.stop()

    def pytest_unconfigure(self) -> None:
        if self._engine is not None:
            self._engine.close()
        if not self.worker:
            shutil.rmtree(self.run_dir, ignore_errors=True)


def deselect(
    config: pytest.Config, items: list[pytest.Item], keep: Callable[[CaseItem], bool]
) -> None:
    """Deselect the case items ``keep`` rejects (other tests stay)."""
    drop = [i for i in items if isinstance(i, CaseItem) and not keep(i)]
    if drop:
        config.hook.pytest_deselected(items=drop)
        dropped = set(map(id, drop))
        items[:] = [i for i in items if id(i) not in dropped]


def include_case_dirs(config: pytest.Config, case_dirs: tuple[Path, ...]) -> None:
    """With no explicit paths on the command line, collect the case directories too."""
    if config.args_source == pytest.Config.ArgsSource.ARGS:
        return
    given = [Path(a).resolve() for a in config.args]
    for directory in case_dirs:
        if directory.is_dir() and not any(g == directory or g in directory.parents for g in given):
            config.args.append(str(directory))
