"""pytest nodes: one CaseFile per YAML file, one CaseItem per case x version x sample."""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Protocol

import pytest

from pytest_prompteval.core.cases import Case, LoadedCaseFile, load_case_file_cached
from pytest_prompteval.core.errors import PromptevalError, StopRun, display, is_infrastructure
from pytest_prompteval.core.minpass import MinPass, parse_min_pass
from pytest_prompteval.core.prompts import PromptVersion
from pytest_prompteval.core.request import Request
from pytest_prompteval.core.result import RESULT_KEY, STOPPED_EARLY_KEY
from pytest_prompteval.core.safetext import safe_line, safe_text
from pytest_prompteval.core.yamlload import line_of
from pytest_prompteval.engine.assemble import Subject
from pytest_prompteval.engine.assemble import result as assembled
from pytest_prompteval.engine.engine import Engine
from pytest_prompteval.engine.evaluate import (
    CaseFailed,
    ItemSpec,
    evaluate,
    failure_message,
    make_request,
)
from pytest_prompteval.engine.settings import Settings
from pytest_prompteval.engine.specs import item_specs
from pytest_prompteval.providers.budget import BudgetSpent
from pytest_prompteval.pytest.adapters import TerminalRepr, marker_expression
from pytest_prompteval.pytest.work import Work
from pytest_prompteval.report.flaky import SampleTally

#: how a case item's location names it (``case ID [version]``), and its files
CASE_DOMAIN = "case "
CASE_SUFFIXES = (".yaml", ".yml")


class ItemContext(Protocol):
    """What collectors and items need of the run, and all they may use of it."""

    settings: Settings
    tally: SampleTally | None
    case_ids: dict[str, str]  # case id -> where it was first defined

    @property
    def engine(self) -> Engine: ...

    def register_marker(self, marker: str) -> None: ...

    def unrun(self, case: Case) -> None: ...

    def ahead(self, session: pytest.Session, work: Work) -> None: ...


def _short(excinfo: pytest.ExceptionInfo[BaseException]) -> str | None:
    if isinstance(excinfo.value, PromptevalError | CaseFailed):
        return _shown(excinfo.value)
    return None


def _shown(error: BaseException) -> str:
    """An error for the terminal, the CI log and JUnit: it quotes file names, model names,
    verdicts and answers, any of which may hold control characters or workflow commands."""
    return safe_text(str(error), indent="")


class CaseFile(pytest.File):
    def __init__(self, *, context: ItemContext, **kwargs: Any):
        super().__init__(**kwargs)
        self.context = context

    loaded: LoadedCaseFile | None = None  # the validated file, for `prompteval list`

    @classmethod
    def make(cls, parent: pytest.Collector, path: Path, context: ItemContext) -> CaseFile:
        """The file's collector. Its node id, and its items' (made from it), has the path
        escaped: a file name is the PR's to choose, and pytest prints node ids as they are
        (a collection error's header, -v, the short summary, JUnit)."""
        node = cls.from_parent(parent, path=path, context=context)
        shown = safe_line(node.nodeid)
        if shown == node.nodeid:
            return node
        return cls.from_parent(parent, path=path, context=context, nodeid=shown)

    def collect(self) -> Iterator[CaseItem]:
        context = self.context
        engine = context.engine
        pytest_cache = getattr(self.config, "cache", None)  # absent under -p no:cacheprovider
        cache = pytest_cache.mkdir("prompteval-cases") if pytest_cache is not None else None
        fields = engine.declared.case_fields
        case_file = load_case_file_cached(self.path, cache, fields, self.config.rootpath)
        self.loaded = case_file
        shown = display(self.path)
        for prompt in engine.versions:  # a bad prompt version fails each file's collection
            engine.prompt_assertions(prompt)
        scopes = {prompt.version: prompt_scope(prompt) for prompt in engine.versions}
        decorators: dict[str, pytest.MarkDecorator] = {}  # one per label, not per item
        for case in case_file.cases:
            where = f"{shown}:{case.line}"
            first = context.case_ids.setdefault(case.id, where)
            if first != where:
                raise PromptevalError(
                    f"duplicate case id {case.id!r}: also defined at {first}", case.path, case.line
                )
            markers = case.markers
            for marker in markers:
                context.register_marker(marker)
                if marker not in decorators:
                    decorators[marker] = getattr(pytest.mark, marker)
            samples = case.samples or context.settings.samples
            min_pass = case_min_pass(case, context.settings.min_pass)
            spec = item_specs(engine, case)
            runs = [p for p in engine.versions if scopes[p.version](case)]
            if not runs:
                context.unrun(case)
            for prompt in runs:
                for sample in range(samples):
                    suffix = f"-s{sample}" if samples > 1 else ""
                    params = f"{prompt.version}{suffix}"
                    item = CaseItem.from_parent(
                        self,
                        context=context,
                        name=f"{case.id}[{params}]",
                        # given whole, so pytest 9 parses ``[params]`` as parameters, as
                        # --lf, --ff, --sw and --nf read them back from the cache
                        nodeid=f"{self.nodeid}::{case.id}[{params}]",
                        spec=spec(prompt, sample, samples),
                        min_pass=min_pass,
                    )
                    for marker in markers:
                        item.add_marker(decorators[marker])
                    yield item

    def repr_failure(  # type: ignore[override]
        self, excinfo: pytest.ExceptionInfo[BaseException]
    ) -> str | TerminalRepr:
        return _short(excinfo) or super().repr_failure(excinfo)


def prompt_scope(prompt: PromptVersion) -> Callable[[Case], bool]:
    """Which cases a version applies to: ``applies_to: {markers: "code and not slow", ids:
    [clamp_*]}`` (both optional; a case must satisfy each one given). Without it, all."""
    scope = prompt.raw.get("applies_to")
    if scope is None:
        return lambda case: True
    where = (prompt.path, prompt.line_of("applies_to"))
    if not isinstance(scope, Mapping) or not set(scope) <= {"markers", "ids"} or not scope:
        raise PromptevalError(
            "applies_to: expected a mapping with 'markers' (an expression like -m's) and/or "
            "'ids' (a list of case id patterns)",
            *where,
        )
    tests: list[Callable[[Case], bool]] = []
    if "markers" in scope:
        try:
            matches = marker_expression(str(scope["markers"]))
        except ValueError as exc:
            raise PromptevalError(f"applies_to.markers: {exc}", *where) from None
        tests.append(lambda case: matches(case.markers))
    if "ids" in scope:
        ids = scope["ids"]
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise PromptevalError("applies_to.ids: expected a list of case id patterns", *where)
        tests.append(lambda case: any(fnmatch.fnmatchcase(case.id, p) for p in ids))
    return lambda case: all(test(case) for test in tests)


def case_min_pass(case: Case, default: MinPass | None) -> MinPass | None:
    """The case's ``min_pass:``, else the option's or ini's."""
    value = case.raw.get("min_pass")
    if value is None:
        return default
    try:
        return parse_min_pass(value)
    except ValueError as exc:
        raise PromptevalError(
            f"case {case.id!r} field 'min_pass': expected {exc}",
            case.path,
            line_of(case.raw, "min_pass"),
        ) from None


class CaseItem(pytest.Item):
    def __init__(
        self,
        *,
        spec: ItemSpec,
        context: ItemContext,
        min_pass: MinPass | None = None,
        **kwargs: Any,
    ):
        super().__init__(**kwargs)
        self.spec = spec
        self.context = context
        self.case: Case = spec.case
        self.prompt: PromptVersion = spec.prompt
        settings = context.settings
        threshold = spec.case.threshold if spec.case.threshold is not None else settings.threshold
        self.subject = Subject(
            spec.case,
            spec.prompt,
            spec.sample,
            spec.samples,
            threshold,
            settings.scorer,
            min_pass,
        )
        #: its labels until its work is done, then all it found
        self.result = assembled(self.subject)
        self.work = Work(spec, self._request)

    def _request(self) -> Request:
        return make_request(
            self.ihook, self.context.engine, self.case, self.prompt, self.spec.agent
        )

    def setup(self) -> None:
        """The item's calls and scoring, before the test phase: a call that fails for good
        (an API error after retries, a missing recording, an invalid judge verdict) raises
        here, so pytest reports an *error*, never a failure of the prompt. What the prompt
        itself causes (a template error) is kept and fails the item in ``runtest``."""
        tally, min_pass = self.context.tally, self.subject.min_pass
        case = (self.prompt.version, str(self.path), self.case.id)
        if (
            tally is not None
            and min_pass is not None
            and tally.decided(case, self.spec.samples, min_pass)
        ):
            self.user_properties.append((STOPPED_EARLY_KEY, self.prompt.version))
            pytest.skip("--prompteval-stop-early: the case's verdict is already decided")
        self.failure: PromptevalError | None = None
        request = self.work.take()
        try:
            self.context.ahead(self.session, self.work)
            self.work.walked()
            self._evaluate(request)
        finally:
            # the result as it stands once the calls are done (or failed): user_properties
            # cross to the xdist controller as plain data
            self.user_properties.append((RESULT_KEY, self.result.to_json()))
        if tally is not None:
            tally.add(case, self.result.passed)

    def _evaluate(self, request: Request | None) -> None:
        engine, deadline = self.context.engine, self.work.deadline
        found = evaluate(self.ihook, engine, self.spec, self.subject, request, deadline)
        self.result = assembled(self.subject, found)
        exc = found.error
        if exc is None:
            return
        if isinstance(exc, BudgetSpent):  # reported at the case, not at this line
            raise pytest.skip.Exception(_shown(exc), _use_item_location=True)
        if not is_infrastructure(exc):
            self.failure = exc
            return
        if isinstance(exc, StopRun):
            self.session.shouldstop = safe_line(str(exc))  # pytest prints it as it is
        raise pytest.fail.Exception(_shown(exc), pytrace=False)

    def runtest(self) -> None:
        if self.failure is not None:
            raise self.failure
        if not self.result.passed:
            message = failure_message(self.result, whole_response=self.config.get_verbosity() >= 2)
            if self.result.min_pass is not None:
                # one sample of several: the case's verdict follows min_pass at the end
                pytest.xfail(f"sample failed, case verdict by min_pass: {message}")
            raise CaseFailed(message)

    def repr_failure(
        self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None
    ) -> str | TerminalRepr:
        return _short(excinfo) or super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        params = self.name[len(self.case.id) :]  # "[version]" or "[version-s2]"
        # the location pytest prints (-vv) and reports: the path escaped as in the node id
        where = Path(safe_line(str(self.path)))
        return where, self.case.line - 1, f"{CASE_DOMAIN}{self.case.id} {params}"
