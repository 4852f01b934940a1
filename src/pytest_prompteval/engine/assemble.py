"""The one place an item's result is built: from what the item is (``Subject``, known at
collection) and what its work found (``Found``, from ``evaluate``), once; ``ItemResult`` is
frozen, so nothing changes it after. Scoring's parts (the judge's ``Verdict``, the
repository's ``RepoVerdict``, the checks) become the result's typed parts here and nowhere
else, and the call figures come from the item's ledger (``Spent``) here and nowhere else."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pytest_prompteval.core.cases import Case
from pytest_prompteval.core.errors import ApiError, PromptevalError, display, is_infrastructure
from pytest_prompteval.core.minpass import MinPass
from pytest_prompteval.core.prompts import PromptVersion
from pytest_prompteval.core.request import Request
from pytest_prompteval.core.result import (
    ExecutionResult,
    ItemResult,
    JudgeResult,
    RepoResult,
    Trajectory,
)
from pytest_prompteval.core.usage import Spent, Usage
from pytest_prompteval.providers.budget import BudgetSpent
from pytest_prompteval.providers.store import Fetched
from pytest_prompteval.scoring.assertions import Checked
from pytest_prompteval.scoring.judge import Verdict
from pytest_prompteval.scoring.score import Score

if TYPE_CHECKING:  # loaded by the repository case that made one
    from pytest_prompteval.scoring.repo import RepoVerdict


@dataclass(frozen=True)
class Subject:
    """What an item evaluates, known before any call: its result's labels."""

    case: Case
    prompt: PromptVersion
    sample: int
    samples: int
    threshold: float
    #: the setting's scorer; the item's own (``ItemSpec.scorer``) once scoring decided it
    scorer: str
    min_pass: MinPass | None = None
    #: a case item: an error decides its outcome (an inline run's error fails its test)
    item: bool = True
    #: an inline run of the ``prompteval`` fixture, and the test that made it
    inline: bool = False
    test: str | None = None


@dataclass(frozen=True)
class Decision:
    """The item's score and verdict, when scoring finished."""

    score: float
    #: the deciding scorer's score (None: scored by its assertions alone)
    main: Score | None
    passed: bool
    checks: tuple[Checked, ...]


@dataclass(frozen=True)
class Parts:
    """What scoring found, as far as it got."""

    #: the scorer that decides the item, once its main score is known
    scorer: str | None = None
    automatic: Score | None = None
    verdict: Verdict | None = None
    execution: ExecutionResult | None = None
    #: the final answer, when a strategy's later calls changed it
    text: str | None = None


@dataclass
class Found:
    """What an item's work found, as far as it got: ``evaluate`` fills it as it goes."""

    request: Request | None = None
    fetched: Fetched | None = None
    trajectory: Trajectory | None = None
    repo: RepoVerdict | None = None
    parts: Parts = field(default_factory=Parts)
    decision: Decision | None = None
    spent: Spent = field(default_factory=Spent)
    error: PromptevalError | None = None


def answer_cost(usage: Usage) -> float | None:
    """An answer's cost as a result gives it: None when a call has no price (or none ran)."""
    return None if usage.unpriced or not usage.calls else round(usage.cost_usd, 8)


def _cost(usage: Usage) -> float:
    # no call: 0, as results have always written it
    return round(usage.cost_usd, 8) if usage.calls else 0


def _labels(subject: Subject, found: Found) -> dict[str, Any]:
    case, prompt = subject.case, subject.prompt
    return {
        "case_id": case.id,
        "file": case.path.name,
        "prompt": prompt.version,
        "prompt_sha256": prompt.sha256,
        "sample": subject.sample,
        "samples": subject.samples,
        "category": case.category,
        "difficulty": case.difficulty,
        "quality": case.quality,
        "scorer": found.parts.scorer or subject.scorer,
        "threshold": subject.threshold,
        "min_pass": subject.min_pass,
        "inline": subject.inline,
        "test": subject.test,
        # the case's own labels (-m picks by them): the view filters on them
        "extra": {"tags": list(case.tags)} if case.tags else {},
    }


def _answered(found: Found) -> dict[str, Any]:
    """What the result says of the answer and where it came from."""
    fetched, request = found.fetched, found.request
    if fetched is None or request is None:
        return {"model": request.model if request is not None else None}
    response = fetched.response
    return {
        "model": request.model,
        "response": response.text if found.parts.text is None else found.parts.text,
        "prefill": request.prefill,
        "replayed": fetched.replayed,
        "recording": display(fetched.recording),
        "unverified": fetched.unverified,
        "stop_reason": response.stop_reason,
        "request_id": response.request_id,
    }


def _spent(spent: Spent) -> dict[str, Any]:
    """The call figures: the answer's, the judge's and a simulated user's apart."""
    answer, judge, user = spent.answer, spent.judge, spent.user
    every = spent.every
    figures: dict[str, Any] = {
        "judge_input_tokens": judge.input_tokens,
        "judge_output_tokens": judge.output_tokens,
        "judge_cost_usd": _cost(judge),
        "judge_calls": judge.calls,
        "user_input_tokens": user.input_tokens,
        "user_output_tokens": user.output_tokens,
        "user_cost_usd": _cost(user),
        "user_calls": user.calls,
        "calls_replayed": every.replayed,
        "calls_live": every.live,
    }
    if answer.calls:
        figures.update(
            answer_calls=answer.calls,
            input_tokens=answer.input_tokens,
            output_tokens=answer.output_tokens,
            cache_read_tokens=answer.cache_read_tokens,
            cache_write_tokens=answer.cache_write_tokens,
            cost_usd=answer_cost(answer),
            # one call's latency as it was measured (or recorded)
            latency_ms=answer.latency_ms if answer.calls == 1 else round(answer.latency_ms, 1),
        )
    return figures


def _scored(found: Found) -> dict[str, Any]:
    """What scoring found (kept on the result of an item that then erred)."""
    parts, verdict = found.parts, found.parts.verdict
    return {
        "automatic_score": parts.automatic.value if parts.automatic is not None else None,
        "judge": None
        if verdict is None
        else JudgeResult(
            score=verdict.score.value,
            dimensions=verdict.score.dimensions,
            notes=verdict.score.notes,
            repeats=verdict.repeats,
            spread=round(verdict.spread, 6),
            model=verdict.model,
            template=verdict.template,
        ),
        "judged": verdict is not None,
        "execution": parts.execution,
        "trajectory": found.trajectory,
        "repo": _repo(found.repo) if found.repo is not None else None,
    }


def _repo(found: RepoVerdict) -> RepoResult:
    return RepoResult(
        resolved=found.passed,
        outcomes={t: found.outcomes.get(t, "missing") for t in found.listed},
        fail_to_pass=list(found.fail_to_pass),
        pass_to_pass=list(found.pass_to_pass),
        fail_to_pass_fixed=found.fixed,
        pass_to_pass_kept=found.kept,
        diff=found.diff,
        restored=list(found.restored),
        broken=found.broken,
        output=None if found.passed else found.output,
    )


def _decided(decision: Decision) -> dict[str, Any]:
    main = decision.main
    decided: dict[str, Any] = {
        "assertions": [c.result() for c in decision.checks],
        "score": decision.score,
        "main_score": decision.score if main is None else main.value,
        "passed": decision.passed,
        "outcome": "passed" if decision.passed else "failed",
    }
    if main is not None:
        decided.update(
            dimensions=main.dimensions,
            missing_topics=main.missing_topics,
            incorrect_claims=main.incorrect_claims,
        )
    return decided


def _erred(error: PromptevalError, item: bool) -> dict[str, Any]:
    """An error's fields, and the outcome it decides: a spent budget skips the item; an
    infrastructure failure errs it; anything else the prompt caused fails it with score 0.
    An inline run's error fails its test and leaves the outcome open."""
    erred: dict[str, Any] = {"error_type": error.kind, "error": str(error)}
    if isinstance(error, ApiError):  # which call failed, for the provider's support
        erred.update(
            api_error_class=error.error_class, status=error.status, request_id=error.request_id
        )
    if isinstance(error, BudgetSpent):
        erred["outcome"] = "skipped"
    elif item and is_infrastructure(error):
        erred["outcome"] = "error"
    elif item:
        erred.update(outcome="failed", passed=False, score=0.0)
    return erred


def result(subject: Subject, found: Found | None = None) -> ItemResult:
    """The item's result: its labels alone before its work, then all it found."""
    found = Found() if found is None else found
    values = {**_labels(subject, found), **_answered(found), **_spent(found.spent)}
    values.update(_scored(found))
    if found.decision is not None:
        values.update(_decided(found.decision))
    if found.error is not None:
        values.update(_erred(found.error, subject.item))
    return ItemResult(**values)
