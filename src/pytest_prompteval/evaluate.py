"""One item's work: render the request, get the response through the store, score it.

The result dict is filled in as the work goes, so whatever was computed before a failure
(request, model, response, usage) stays on the report.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import pluggy

from pytest_prompteval.cases import Case
from pytest_prompteval.errors import PromptevalError
from pytest_prompteval.prompts import PromptVersion, build_request, template_variables
from pytest_prompteval.providers.base import CallContext
from pytest_prompteval.providers.store import MissingRecording, Outcome
from pytest_prompteval.request import Request
from pytest_prompteval.session import PromptevalSession

SCORER = "automatic"


class CaseFailed(AssertionError):
    """The response scored under the threshold; the message says why."""


def new_result(case: Case, prompt: PromptVersion, sample: int, threshold: float) -> dict[str, Any]:
    return {
        "case_id": case.id,
        "file": case.path.name,
        "prompt": prompt.version,
        "prompt_sha256": prompt.sha256,
        "sample": sample,
        "category": case.category,
        "difficulty": case.difficulty,
        "quality": case.quality,
        "scorer": SCORER,
        "threshold": threshold,
        "model": None,
        "passed": False,
        "score": None,
        "dimensions": {},
        "missing_topics": [],
        "incorrect_claims": [],
        "input_tokens": 0,
        "output_tokens": 0,
        "cache_read_tokens": 0,
        "cache_write_tokens": 0,
        "cost_usd": None,
        "latency_ms": None,
        "replayed": None,
        "response": None,
        "error_type": None,
        "error": None,
    }


def make_request(
    hook: pluggy.HookRelay, ps: PromptevalSession, case: Case, prompt: PromptVersion
) -> Request:
    variables = template_variables(case)
    for extra in reversed(hook.pytest_prompteval_template_vars(case=case, prompt=prompt)):
        if extra:
            variables.update(extra)
    built = hook.pytest_prompteval_build_request(case=case, prompt=prompt, variables=variables)
    if built is None:
        request = build_request(case, prompt, variables, ps.default_model)
    elif isinstance(built, Request):
        request = built
    elif isinstance(built, Mapping):
        request = Request.from_api(built)
    else:
        raise PromptevalError(
            f"pytest_prompteval_build_request returned {type(built).__name__}; expected a "
            "Request, a mapping of messages.create arguments, or None"
        )
    if ps.model_override:
        request = dataclasses.replace(request, model=ps.model_override)
    return request


def _sample_texts(
    ps: PromptevalSession, request: Request, ctx: CallContext, own: Outcome, n: int
) -> list[str]:
    """Every sample's text, for consistency; samples not recorded yet are fetched now."""
    texts = []
    for sample in range(n):
        if sample == ctx.sample:
            texts.append(own.response.text)
            continue
        try:
            other = ps.store.get(request, dataclasses.replace(ctx, sample=sample))
        except MissingRecording:
            continue
        texts.append(other.response.text)
    return texts


def evaluate(
    hook: pluggy.HookRelay,
    ps: PromptevalSession,
    case: Case,
    prompt: PromptVersion,
    sample: int,
    samples: int,
    result: dict[str, Any],
) -> None:
    """Fill ``result``; raise PromptevalError for what went wrong, CaseFailed for a low score."""
    try:
        request = make_request(hook, ps, case, prompt)
        result["model"] = request.model
        ctx = CallContext(case, prompt, sample)
        outcome = ps.store.get(request, ctx)
        response = outcome.response
        result.update(
            response=response.text,
            prefill=request.prefill,
            replayed=outcome.replayed,
            recording=outcome.recording.relative_to(ps.rootpath).as_posix()
            if outcome.recording.is_relative_to(ps.rootpath)
            else str(outcome.recording),
            input_tokens=response.input_tokens,
            output_tokens=response.output_tokens,
            cache_read_tokens=response.cache_read_tokens,
            cache_write_tokens=response.cache_write_tokens,
            latency_ms=response.latency_ms,
            cost_usd=ps.prices.cost(response, request.model),
            stop_reason=response.stop_reason,
            request_id=response.request_id,
        )
        texts = _sample_texts(ps, request, ctx, outcome, samples) if samples > 1 else []
        score = ps.scorer.score(case, response.text, texts)
    except PromptevalError as exc:
        result.update(error_type=exc.kind, error=str(exc))
        raise
    result.update(
        score=score.value,
        dimensions=score.dimensions,
        missing_topics=score.details["missing_topics"],
        incorrect_claims=score.details["incorrect_claims"],
        passed=score.value >= result["threshold"],
    )
    if not result["passed"]:
        raise CaseFailed(failure_message(result))


def failure_message(result: Mapping[str, Any]) -> str:
    lines = [
        f"{result['case_id']} [{result['prompt']}]: score {result['score']:.3f} < threshold "
        f"{result['threshold']:.2f}"
    ]
    if result["missing_topics"]:
        lines.append("  missing topics: " + ", ".join(result["missing_topics"]))
    for claim in result["incorrect_claims"]:
        lines.append(f"  incorrect claim: {claim}")
    dims = "  ".join(f"{k} {v:.2f}" for k, v in result["dimensions"].items())
    lines.append(f"  dimensions: {dims}")
    return "\n".join(lines)
