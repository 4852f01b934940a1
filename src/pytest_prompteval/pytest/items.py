"""pytest nodes: one CaseFile per YAML file, one CaseItem per case x version x sample."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from _pytest._code.code import TerminalRepr

from pytest_prompteval.core.cases import Case, load_case_file_cached
from pytest_prompteval.core.cases import CaseFile as LoadedCaseFile
from pytest_prompteval.core.errors import PromptevalError, StopRun, display
from pytest_prompteval.core.prompts import PromptVersion
from pytest_prompteval.core.request import Request
from pytest_prompteval.core.yamlload import line_of
from pytest_prompteval.engine.declared import declared_fields
from pytest_prompteval.engine.evaluate import (
    CaseFailed,
    ItemSpec,
    evaluate,
    failure_message,
    make_request,
    new_result,
)
from pytest_prompteval.engine.session import PromptevalSession
from pytest_prompteval.providers.budget import BudgetSpent
from pytest_prompteval.pytest.fixture import RESULT_KEY
from pytest_prompteval.pytest.lookahead import Lookahead
from pytest_prompteval.scoring.assertions import Assertion, parse_assertions
from pytest_prompteval.scoring.code import is_code_case, parse_code_spec
from pytest_prompteval.scoring.strategies import parse_strategy

SESSION_KEY = pytest.StashKey[PromptevalSession]()
LOOKAHEAD_KEY = pytest.StashKey[Lookahead]()


def _short(excinfo: pytest.ExceptionInfo[BaseException]) -> str | None:
    if isinstance(excinfo.value, PromptevalError | CaseFailed):
        return str(excinfo.value)
    return None


class CaseFile(pytest.File):
    loaded: LoadedCaseFile | None = None  # the validated file, for `prompteval list`

    def collect(self) -> Iterator[CaseItem]:
        ps = self.config.stash[SESSION_KEY]
        store = getattr(self.config, "cache", None)  # absent under -p no:cacheprovider
        cache = store.mkdir("prompteval-cases") if store is not None else None
        fields = declared_fields(self.config).case_fields
        case_file = load_case_file_cached(self.path, cache, fields, self.config.rootpath)
        self.loaded = case_file
        shown = display(self.path)
        from_prompts = {prompt.version: prompt_assertions(prompt) for prompt in ps.versions}
        decorators: dict[str, pytest.MarkDecorator] = {}  # one per label, not per item
        for case in case_file.cases:
            where = f"{shown}:{case.line}"
            first = ps.case_ids.setdefault(case.id, where)
            if first != where:
                raise PromptevalError(
                    f"duplicate case id {case.id!r}: also defined at {first}", case.path, case.line
                )
            markers = case.markers
            for marker in markers:
                if marker not in ps.registered_markers:
                    self.config.addinivalue_line("markers", f"{marker}: prompt case label")
                    ps.registered_markers.add(marker)
                if marker not in decorators:
                    decorators[marker] = getattr(pytest.mark, marker)
            samples = case.samples or ps.samples
            code = parse_code_spec(case) if is_code_case(case) else None
            own = parse_assertions(
                case.raw.get("assert"),
                (case.path, line_of(case.raw, "assert")),
                f"case {case.id!r}",
            )
            for prompt in ps.versions:
                assertions = (*from_prompts[prompt.version], *own)
                for sample in range(samples):
                    suffix = f"-s{sample}" if samples > 1 else ""
                    item = CaseItem.from_parent(
                        self,
                        name=f"{case.id}[{prompt.version}{suffix}]",
                        spec=ItemSpec(case, prompt, sample, samples, assertions, code),
                    )
                    for marker in markers:
                        item.add_marker(decorators[marker])
                    yield item

    def repr_failure(  # type: ignore[override]
        self, excinfo: pytest.ExceptionInfo[BaseException]
    ) -> str | TerminalRepr:
        return _short(excinfo) or super().repr_failure(excinfo)


def prompt_assertions(prompt: PromptVersion) -> tuple[Assertion, ...]:
    """A prompt version's own ``assert:`` entries, which apply to every case (a bad
    ``strategy:`` is reported here too, as a collection error naming the prompt file)."""
    parse_strategy(prompt)
    return tuple(
        parse_assertions(
            prompt.raw.get("assert"),
            (prompt.path, prompt.line_of("assert")),
            f"prompt {prompt.version!r}",
        )
    )


class CaseItem(pytest.Item):
    def __init__(self, *, spec: ItemSpec, **kwargs: Any):
        super().__init__(**kwargs)
        self.spec = spec
        self.case: Case = spec.case
        self.prompt: PromptVersion = spec.prompt
        ps = self.config.stash[SESSION_KEY]
        threshold = spec.case.threshold if spec.case.threshold is not None else ps.threshold
        self.result = new_result(spec.case, spec.prompt, spec.sample, threshold, ps.scorer_mode)
        self.prepared: Request | None = None

    def prepare(self) -> Request:
        """The item's request, built once: calls sent ahead and batches need it before the
        item runs (a template error raises here and again when the item runs)."""
        if self.prepared is None:
            ps = self.config.stash[SESSION_KEY]
            self.prepared = make_request(self.ihook, ps, self.case, self.prompt)
        return self.prepared

    def runtest(self) -> None:
        ps = self.config.stash[SESSION_KEY]
        self.user_properties.append((RESULT_KEY, self.result))
        if ps.concurrency > 1:
            if LOOKAHEAD_KEY not in self.session.stash:
                self.session.stash[LOOKAHEAD_KEY] = Lookahead(self.session, ps, ps.concurrency)
            self.session.stash[LOOKAHEAD_KEY].ahead(self)
        try:
            request, self.prepared = self.prepared, None
            evaluate(self.ihook, ps, self.spec, self.result, request)
            if not self.result["passed"]:
                raise CaseFailed(failure_message(self.result))
        except StopRun as exc:
            self.session.shouldstop = str(exc)
            raise
        except BudgetSpent as exc:
            # reported at the case, not at this line
            raise pytest.skip.Exception(str(exc), _use_item_location=True) from None

    def repr_failure(
        self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None
    ) -> str | TerminalRepr:
        return _short(excinfo) or super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, self.case.line - 1, f"case {self.case.id} [{self.prompt.version}]"
