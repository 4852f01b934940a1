"""The ``prompteval`` fixture: run a prompt version on an inline case from a Python test."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NoReturn

import pytest

from pytest_prompteval.core.cases import Case, inline_case
from pytest_prompteval.core.errors import PromptevalError
from pytest_prompteval.core.prompts import PromptVersion
from pytest_prompteval.core.request import Request
from pytest_prompteval.core.response import Response
from pytest_prompteval.core.result import RESULT_KEY, ItemResult
from pytest_prompteval.core.safetext import safe_text
from pytest_prompteval.engine.assemble import Subject
from pytest_prompteval.engine.assemble import result as assembled
from pytest_prompteval.engine.engine import Engine
from pytest_prompteval.engine.evaluate import Given, ItemSpec, evaluate, run_check
from pytest_prompteval.engine.specs import item_specs
from pytest_prompteval.providers.budget import BudgetSpent
from pytest_prompteval.providers.ledger import Ledger
from pytest_prompteval.scoring.assertions import parse_assertions


@dataclass(frozen=True)
class RunResult:
    case: Case
    prompt: PromptVersion
    request: Request
    response: Response
    result: ItemResult

    @property
    def text(self) -> str:
        return self.response.text

    @property
    def score(self) -> float:
        return self.result.score or 0.0


def _fail(message: object) -> NoReturn:
    """Fail the test with ``message``: it quotes answers, the judge's notes and file text,
    which pytest prints as they are (the terminal, the CI log, JUnit)."""
    raise pytest.fail.Exception(safe_text(str(message), indent=""), pytrace=False) from None


class Prompteval:
    """Evaluates through the run's engine, so inline runs share its budget, rate gate,
    recordings and judge with the items."""

    def __init__(self, node: pytest.Item, engine: Engine):
        self.node = node
        self.engine = engine

    def prompt(self, version: str) -> PromptVersion:
        try:
            return self.engine.prompt(version)
        except PromptevalError as exc:
            _fail(exc)

    def run(
        self,
        version: str,
        input: Mapping[str, Any] | None = None,
        *,
        id: str = "inline",
        sample: int = 0,
        suite: bool = False,
        **fields: Any,
    ) -> RunResult:
        """Send ``version`` rendered with an inline case; score it with the session's scorer.

        ``fields`` are the case's other fields (``expected_topics``, ``difficulty``, ...).
        The result is reported in a block of inline runs, under the test's node id; with
        ``suite=True`` it joins the version's summary, history and gates instead.
        """
        _, line, _ = self.node.reportinfo()
        try:
            case = inline_case(
                self.node.path,
                (line or 0) + 1,
                {"id": id, "input": dict(input or {}), **fields},
                self.engine.declared.case_fields,
            )
            prompt = self.prompt(version)
            # built as a case file's items are: assertions, and a code case (entry_point=,
            # tests=) run in the sandbox
            spec = item_specs(self.engine, case)(prompt, sample, 1)
        except PromptevalError as exc:
            _fail(exc)
        settings = self.engine.settings
        threshold = case.threshold if case.threshold is not None else settings.threshold
        subject = Subject(
            case,
            prompt,
            sample,
            1,
            threshold,
            settings.scorer,
            item=False,
            inline=not suite,
            test=self.node.nodeid,
        )
        found = evaluate(self.node.ihook, self.engine, spec, subject)
        result = assembled(subject, found)
        # user_properties cross to the xdist controller as plain data
        self.node.user_properties.append((RESULT_KEY, result.to_json()))
        if isinstance(found.error, BudgetSpent):
            # as items are: the budget stops calls, it fails nothing
            raise pytest.skip.Exception(
                safe_text(str(found.error), indent=""), _use_item_location=True
            )
        if found.error is not None:
            raise found.error
        assert found.request is not None and found.fetched is not None
        return RunResult(case, prompt, found.request, found.fetched.response, result)

    def check(
        self,
        run: RunResult,
        scorer: str = "automatic",
        *,
        min_score: float | None = None,
        value: Any = None,
    ) -> float:
        """Score ``run`` with ``scorer`` (automatic, claude, an assertion type or a custom
        scorer); fail the test when below ``min_score`` (default: the case's threshold)."""
        threshold = run.result.threshold if min_score is None else min_score
        # the check's judge calls are not added to the item's figures
        ledger = Ledger(self.engine.prices)
        if scorer == "automatic":
            automatic = run.result.automatic_score
            if automatic is None:  # a case scored by its assertions alone: asked for now
                automatic = self.engine.scorer.score(run.case, run.text).value
            score, reason = automatic, "automatic score"
        elif scorer == "claude":
            verdict = self.engine.judge().verdict(run.case, run.prompt, run.text, ledger)
            score, reason = verdict.score.value, f"judge: {verdict.score.notes}"
        else:
            entry = {"type": scorer, "value": value, "threshold": threshold}
            (assertion,) = parse_assertions(
                [entry], (self.node.path, None), "check", self.engine.scorers()
            )
            spec = ItemSpec(run.case, run.prompt, 0, 1, (assertion,))
            given = Given(run.result.threshold, run.result.trajectory, run.result.cost_usd)
            checked = run_check(
                self.engine, spec, assertion, run.request, run.response, given, ledger
            )
            if not checked.passed:
                _fail(f"{scorer}: {checked.reason}")
            return checked.score
        if score < threshold:
            _fail(f"{scorer} score {score:.3f} < {threshold:.2f} ({reason})")
        return score
