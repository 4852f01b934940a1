"""pytest nodes: one CaseFile per YAML file, one CaseItem per case x version x sample."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from _pytest._code.code import TerminalRepr

from pytest_prompteval.cases import Case, load_case_file
from pytest_prompteval.errors import PromptevalError, StopRun, display
from pytest_prompteval.evaluate import CaseFailed, evaluate, new_result
from pytest_prompteval.prompts import PromptVersion
from pytest_prompteval.session import PromptevalSession

RESULT_KEY = "prompteval"
SESSION_KEY = pytest.StashKey[PromptevalSession]()


def _short(excinfo: pytest.ExceptionInfo[BaseException]) -> str | None:
    if isinstance(excinfo.value, PromptevalError | CaseFailed):
        return str(excinfo.value)
    return None


class CaseFile(pytest.File):
    def collect(self) -> Iterator[CaseItem]:
        ps = self.config.stash[SESSION_KEY]
        case_file = load_case_file(self.path)
        for case in case_file.cases:
            where = display(case.path, case.line)
            first = ps.case_ids.setdefault(case.id, where)
            if first != where:
                raise PromptevalError(
                    f"duplicate case id {case.id!r}: also defined at {first}", case.path, case.line
                )
            for marker in case.markers:
                if marker not in ps.registered_markers:
                    self.config.addinivalue_line("markers", f"{marker}: prompt case label")
                    ps.registered_markers.add(marker)
            samples = case.samples or ps.samples
            for prompt in ps.versions:
                for sample in range(samples):
                    suffix = f"-s{sample}" if samples > 1 else ""
                    item = CaseItem.from_parent(
                        self,
                        name=f"{case.id}[{prompt.version}{suffix}]",
                        case=case,
                        prompt=prompt,
                        sample=sample,
                        samples=samples,
                    )
                    for marker in case.markers:
                        item.add_marker(marker)
                    yield item

    def repr_failure(  # type: ignore[override]
        self, excinfo: pytest.ExceptionInfo[BaseException]
    ) -> str | TerminalRepr:
        return _short(excinfo) or super().repr_failure(excinfo)


class CaseItem(pytest.Item):
    def __init__(
        self, *, case: Case, prompt: PromptVersion, sample: int, samples: int, **kwargs: Any
    ):
        super().__init__(**kwargs)
        self.case = case
        self.prompt = prompt
        self.sample = sample
        self.samples = samples
        ps = self.config.stash[SESSION_KEY]
        threshold = case.threshold if case.threshold is not None else ps.threshold
        self.result = new_result(case, prompt, sample, threshold)

    def runtest(self) -> None:
        ps = self.config.stash[SESSION_KEY]
        self.user_properties.append((RESULT_KEY, self.result))
        try:
            evaluate(self.ihook, ps, self.case, self.prompt, self.sample, self.samples, self.result)
        except StopRun as exc:
            self.session.shouldstop = str(exc)
            raise

    def repr_failure(
        self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None
    ) -> str | TerminalRepr:
        return _short(excinfo) or super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, self.case.line - 1, f"case {self.case.id} [{self.prompt.version}]"
