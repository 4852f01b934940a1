"""The ``prompteval`` fixture: run a prompt version on an inline case from a Python test."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pytest

from pytest_prompteval.core.cases import Case, inline_case
from pytest_prompteval.core.prompts import PromptVersion
from pytest_prompteval.core.request import Request
from pytest_prompteval.core.response import Response
from pytest_prompteval.engine.declared import declared_fields
from pytest_prompteval.engine.evaluate import ItemSpec, evaluate, new_result, run_check
from pytest_prompteval.engine.session import PromptevalSession, resolve_versions
from pytest_prompteval.scoring.assertions import parse_assertions
from pytest_prompteval.scoring.judge import JudgeUsage

RESULT_KEY = "prompteval"


@dataclass(frozen=True)
class RunResult:
    case: Case
    prompt: PromptVersion
    request: Request
    response: Response
    result: dict[str, Any]

    @property
    def text(self) -> str:
        return self.response.text

    @property
    def score(self) -> float:
        return float(self.result["score"])


class Prompteval:
    def __init__(self, node: pytest.Item, session: PromptevalSession, prompt_dir: Any):
        self.node = node
        self.session = session
        self.prompt_dir = prompt_dir
        self._prompts: dict[str, PromptVersion] = {}

    def prompt(self, version: str) -> PromptVersion:
        if version not in self._prompts:
            fields = declared_fields(self.node.config).prompt_fields
            (self._prompts[version],) = resolve_versions(self.prompt_dir, [version], fields)
        return self._prompts[version]

    def run(
        self,
        version: str,
        input: Mapping[str, Any] | None = None,
        *,
        id: str = "inline",
        sample: int = 0,
        **fields: Any,
    ) -> RunResult:
        """Send ``version`` rendered with an inline case; score it with the session's scorer.

        ``fields`` are the case's other fields (``expected_topics``, ``difficulty``, ...).
        """
        _, line, _ = self.node.reportinfo()
        case = inline_case(
            self.node.path,
            (line or 0) + 1,
            {"id": id, "input": dict(input or {}), **fields},
            declared_fields(self.node.config).case_fields,
        )
        prompt = self.prompt(version)
        ps = self.session
        threshold = case.threshold if case.threshold is not None else ps.threshold
        result = new_result(case, prompt, sample, threshold, ps.scorer_mode)
        self.node.user_properties.append((RESULT_KEY, result))
        request, response = evaluate(self.node.ihook, ps, ItemSpec(case, prompt, sample, 1), result)
        return RunResult(case, prompt, request, response, result)

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
        threshold = run.result["threshold"] if min_score is None else min_score
        usage = JudgeUsage()
        if scorer == "automatic":
            score, reason = float(run.result["automatic_score"]), "automatic score"
        elif scorer == "claude":
            verdict = self.session.judge().verdict(run.case, run.prompt, run.text, usage)
            notes = verdict.score.details["notes"]
            score, reason = verdict.score.value, f"judge: {notes}"
        else:
            entry = {"type": scorer, "value": value, "threshold": threshold}
            (assertion,) = parse_assertions([entry], (self.node.path, None), "check")
            spec = ItemSpec(run.case, run.prompt, 0, 1, (assertion,))
            checked = run_check(
                self.session, spec, assertion, run.request, run.response, run.result, usage
            )
            if not checked.passed:
                pytest.fail(f"{scorer}: {checked.reason}", pytrace=False)
            return checked.score
        if score < threshold:
            pytest.fail(f"{scorer} score {score:.3f} < {threshold:.2f} ({reason})", pytrace=False)
        return score
