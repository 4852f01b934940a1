"""One item's work: render the request, get the response through the store, score it.

The ItemResult is filled in as the work goes, so whatever was computed before a failure
(request, model, response, usage) stays on the report.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

import pluggy

from pytest_prompteval.core.cases import Case
from pytest_prompteval.core.errors import ApiError, PromptevalError, display, user_code_error
from pytest_prompteval.core.prompts import PromptVersion, build_request, template_variables
from pytest_prompteval.core.request import Request
from pytest_prompteval.core.response import Response
from pytest_prompteval.core.result import ExecutionResult, ItemResult, JudgeResult
from pytest_prompteval.core.safetext import safe_text
from pytest_prompteval.engine.engine import Engine
from pytest_prompteval.providers.base import CallContext
from pytest_prompteval.providers.store import MissingRecording, Outcome
from pytest_prompteval.scoring.assertions import (
    Assertion,
    Checked,
    Observed,
    check_simple,
    combine,
    custom_score,
    scored,
)
from pytest_prompteval.scoring.automatic import expected_topics
from pytest_prompteval.scoring.code import CodeSpec
from pytest_prompteval.scoring.hybrid import judged
from pytest_prompteval.scoring.judge import JudgeUsage
from pytest_prompteval.scoring.score import Score
from pytest_prompteval.scoring.strategies import apply, parse_strategy


class CaseFailed(AssertionError):
    """The response scored under the threshold; the message says why."""


def new_result(
    case: Case,
    prompt: PromptVersion,
    sample: int,
    threshold: float,
    scorer: str,
    samples: int = 1,
) -> ItemResult:
    return ItemResult(
        case_id=case.id,
        file=case.path.name,
        prompt=prompt.version,
        prompt_sha256=prompt.sha256,
        sample=sample,
        samples=samples,
        category=case.category,
        difficulty=case.difficulty,
        quality=case.quality,
        scorer=scorer,
        threshold=threshold,
    )


def make_request(
    hook: pluggy.HookRelay, engine: Engine, case: Case, prompt: PromptVersion
) -> Request:
    variables = template_variables(case)
    for extra in reversed(hook.pytest_prompteval_template_vars(case=case, prompt=prompt)):
        if extra:
            variables.update(extra)
    built = hook.pytest_prompteval_build_request(case=case, prompt=prompt, variables=variables)
    if built is None:
        request = build_request(case, prompt, variables, engine.settings.default_model)
    elif isinstance(built, Request):
        request = built
    elif isinstance(built, Mapping):
        request = Request.from_api(built)
    else:
        raise PromptevalError(
            f"pytest_prompteval_build_request returned {type(built).__name__}; expected a "
            "Request, a mapping of messages.create arguments, or None"
        )
    if engine.settings.model_override:
        request = dataclasses.replace(request, model=engine.settings.model_override)
    return request


def _sample_texts(
    engine: Engine, request: Request, ctx: CallContext, own: Outcome, n: int
) -> list[str]:
    """Every sample's text, for consistency; samples not recorded yet are fetched now."""
    texts = []
    # --prompteval-stop-early: only the samples drawn so far, or every sample would be drawn
    for sample in range(ctx.sample + 1 if engine.settings.stop_early else n):
        if sample == ctx.sample:
            texts.append(own.response.text)
            continue
        try:
            other = engine.store.get(request, dataclasses.replace(ctx, sample=sample))
        except MissingRecording:
            continue
        texts.append(other.response.text)
    return texts


@dataclass(frozen=True)
class ItemSpec:
    case: Case
    prompt: PromptVersion
    sample: int
    samples: int
    assertions: tuple[Assertion, ...] = ()
    code: CodeSpec | None = None


#: ``ItemResult.scorer`` of an item scored by its assertions alone
ASSERTIONS_ONLY = "assertions"


def seed_scorer_applies(engine: Engine, spec: ItemSpec) -> bool:
    """The seed's scorer (topics, clarity by sentence length, length by difficulty; or the
    judge's rubric) fits an answer that explains: it scores a case that gives expected topics,
    a case with nothing else to score it (no ``assert:``), and every case when the project
    names the scorer (``--prompteval-scorer`` or ini ``prompteval_scorer``). Any other case,
    a JSON answer checked by its assertions say, is scored by its assertions alone: sentence
    length of a JSON document is no measure of it."""
    return engine.settings.scorer_named or not spec.assertions or bool(expected_topics(spec.case))


def _main_score(
    engine: Engine,
    spec: ItemSpec,
    text: str,
    automatic: Score,
    usage: JudgeUsage,
    result: ItemResult,
) -> Score:
    """The score that decides pass/fail: automatic, the judge's, or (hybrid) automatic with
    the judge's verdict recorded beside it on the sampled cases."""
    if engine.settings.scorer == "automatic":
        return automatic
    judge = engine.judge()
    if engine.settings.scorer == "hybrid" and not judged(
        spec.case.id, engine.settings.seed, engine.settings.judge_rate
    ):
        result.judged = False
        return automatic
    verdict = judge.verdict(spec.case, spec.prompt, text, usage)
    result.judged = True
    result.judge = JudgeResult(
        score=verdict.score.value,
        dimensions=verdict.score.dimensions,
        notes=verdict.score.details["notes"],
        repeats=verdict.repeats,
        spread=round(verdict.spread, 6),
        model=verdict.model,
        template=verdict.template,
    )
    return verdict.score if engine.settings.scorer == "claude" else automatic


def run_check(
    engine: Engine,
    spec: ItemSpec,
    assertion: Assertion,
    request: Request,
    response: Response,
    result: ItemResult,
    usage: JudgeUsage,
) -> Checked:
    seen = Observed(
        response.text,
        request.prefill,
        response.output_tokens,
        response.latency_ms,
        result.cost_usd,
    )
    simple = check_simple(assertion, seen)
    if simple is not None:
        return simple
    text = seen.prefill + seen.text if assertion.include_prefill else seen.text
    if assertion.type == "topics":
        topics = assertion.value or list(expected_topics(spec.case))
        covered = [t for t in topics if engine.scorer.covers(t, text)]
        missing = [t for t in topics if t not in covered]
        score = len(covered) / len(topics) if topics else 1.0
        reason = f"missing topics: {', '.join(missing)}" if missing else "all topics covered"
        return scored(assertion, score, 1.0, reason)
    if assertion.type == "judge":
        score, reason = engine.judge().ask(spec.case, spec.prompt, text, assertion.value, usage)
        return scored(assertion, score, result.threshold, f"judge: {reason}")
    function = engine.scorers()[assertion.type]
    try:
        returned = function(spec.case, request, response)
    except Exception as exc:
        raise user_code_error(
            f"scorer {assertion.type!r}, scoring case {spec.case.id!r}", exc
        ) from None
    value, dims = custom_score(assertion.type, returned)
    detail = "".join(f" {k} {v:.2f}" for k, v in dims.items())
    return scored(assertion, value, result.threshold, f"scorer {assertion.type}{detail}")


def _code_score(
    engine: Engine,
    code: CodeSpec,
    case: Case,
    text: str,
    prefill: str,
    result: ItemResult,
) -> Score:
    score, metrics = engine.code_scorer().score(case, code, text, prefill)
    result.scorer = "execution"
    result.execution = ExecutionResult(
        error_class=metrics.error_class,
        first_failure=metrics.first_failure,
        tests_passed=metrics.tests_passed,
        tests_total=metrics.tests_total,
        **metrics.details,
    )
    return score


def _add_attempts(
    engine: Engine, result: ItemResult, responses: list[Response], model: str, final: str
) -> None:
    """A strategy's item costs every attempt it made."""
    costs = [engine.prices.cost(r, model) for r in responses]
    result.attempts = len(responses)
    result.response = final
    result.input_tokens = sum(r.input_tokens for r in responses)
    result.output_tokens = sum(r.output_tokens for r in responses)
    result.cost_usd = None if None in costs else round(sum(c or 0.0 for c in costs), 8)
    result.latency_ms = round(sum(r.latency_ms for r in responses), 1)


def _main_passes(engine: Engine, main: Score, result: ItemResult) -> bool:
    """Code: all tests pass (or, with --prompteval-code-pass threshold, the partial score
    reaches the threshold); anything else: the score reaches the threshold."""
    if result.scorer == "execution" and engine.settings.code_pass == "all":
        return bool(main.dimensions["functional_correctness"] == 1.0)
    return bool(main.value >= result.threshold)


def evaluate(
    hook: pluggy.HookRelay,
    engine: Engine,
    spec: ItemSpec,
    result: ItemResult,
    request: Request | None = None,
) -> tuple[Request, Response]:
    """Fill ``result`` (``passed`` says whether the item passes); raise PromptevalError for
    what went wrong, keeping in ``result`` what was computed before. ``request``: the one
    already built for this item, if any."""
    case, prompt = spec.case, spec.prompt
    usage = JudgeUsage()
    main: Score | None
    try:
        if request is None:
            request = make_request(hook, engine, case, prompt)
        result.model = request.model
        ctx = CallContext(case, prompt, spec.sample)
        outcome = engine.store.get(request, ctx)
        response = outcome.response
        result.response = response.text
        result.prefill = request.prefill
        result.replayed = outcome.replayed
        result.recording = display(outcome.recording)
        result.unverified = outcome.unverified
        result.input_tokens = response.input_tokens
        result.output_tokens = response.output_tokens
        result.cache_read_tokens = response.cache_read_tokens
        result.cache_write_tokens = response.cache_write_tokens
        result.latency_ms = response.latency_ms
        result.cost_usd = engine.prices.cost(response, request.model)
        result.stop_reason = response.stop_reason
        result.request_id = response.request_id
        result.calls_replayed, result.calls_live = (1, 0) if outcome.replayed else (0, 1)
        if spec.code is not None:
            text, prefill = response.text, request.prefill
            strategy = parse_strategy(prompt)
            if strategy is not None:
                text, prefill, responses, replays = apply(
                    strategy,
                    engine.store,
                    engine.code_scorer(),
                    case,
                    spec.code,
                    request,
                    ctx,
                    response,
                )
                _add_attempts(engine, result, responses, request.model, text)
                result.calls_replayed += replays
                result.calls_live += len(responses) - 1 - replays
            main = _code_score(engine, spec.code, case, text, prefill, result)
        elif seed_scorer_applies(engine, spec):
            texts = (
                _sample_texts(engine, request, ctx, outcome, spec.samples)
                if spec.samples > 1
                else []
            )
            automatic = engine.scorer.score(case, response.text, texts)
            result.automatic_score = automatic.value
            main = _main_score(engine, spec, response.text, automatic, usage, result)
        else:
            main, result.scorer = None, ASSERTIONS_ONLY
        checks = [
            run_check(engine, spec, a, request, response, result, usage) for a in spec.assertions
        ]
    except PromptevalError as exc:
        result.error_type, result.error = exc.kind, str(exc)
        if isinstance(exc, ApiError):  # which call failed, for the provider's support
            result.api_error_class, result.status = exc.error_class, exc.status
            result.request_id = exc.request_id
        raise
    finally:
        usage.add_to(result)
    result.assertions = [c.result() for c in checks]
    if main is None:  # scored by its assertions alone
        result.score = result.main_score = round(combine(None, checks), 6)
        main_passes = result.score >= result.threshold
    else:
        result.score = round(combine(main.value, checks), 6) if checks else main.value
        result.dimensions = main.dimensions
        result.missing_topics = main.details["missing_topics"]
        result.incorrect_claims = main.details["incorrect_claims"]
        result.main_score = main.value
        main_passes = _main_passes(engine, main, result)
    result.passed = main_passes and all(c.passed for c in checks)
    result.outcome = "passed" if result.passed else "failed"
    return request, response


RESPONSE_SHOWN = 300  # characters of the answer in a failure, unless -vv


def failure_message(result: ItemResult, whole_response: bool = False) -> str:
    """Why the item failed first, then the score as the summary counts it, then what the
    model said and where it is kept. Text from the answer and the files is made safe for a
    terminal and a CI log."""
    suffix = f"-s{result.sample}" if result.samples > 1 else ""
    label = f"{result.case_id} [{result.prompt}{suffix}]"
    main, threshold = result.main_score or 0.0, result.threshold
    failed_checks = [c for c in result.assertions if not c.passed]
    run = result.execution
    if run is not None and run.error_class is not None:
        why = f"{run.tests_passed}/{run.tests_total} tests passed, partial correctness {main:.3f}"
    elif failed_checks and (
        run is not None or main >= threshold or result.scorer == ASSERTIONS_ONLY
    ):
        first = failed_checks.pop(0)
        why = f"failed assert {first.type}: {first.reason}"
    else:
        why = f"{result.scorer} score {main:.3f} below threshold {threshold:.2f}"
    lines = [f"{label}: {why}"]
    if run is not None and run.error_class is not None:
        lines.append(f"  {run.error_class}: {run.first_failure}")
    lines.append(f"  score {result.score or 0.0:.3f} (threshold {threshold:.2f})")
    if result.missing_topics:
        lines.append("  missing topics: " + ", ".join(result.missing_topics))
    lines += [f"  incorrect claim: {claim}" for claim in result.incorrect_claims]
    if result.dimensions and run is None:
        dims = "  ".join(f"{k} {v:.2f}" for k, v in result.dimensions.items())
        lines.append(f"  dimensions: {dims}")
    if result.judge is not None and result.judge.notes:
        lines.append(f"  judge notes: {result.judge.notes}")
    lines += [f"  failed assert {c.type}: {c.reason}" for c in failed_checks]
    answer = result.response or ""
    if not whole_response and len(answer) > RESPONSE_SHOWN:
        answer = answer[:RESPONSE_SHOWN] + f"... ({len(answer)} characters; -vv shows all)"
    lines.append("  response: " + answer.replace("\n", "\n    "))
    if result.recording:
        lines.append(f"  recording: {result.recording}")
    return safe_text("\n".join(lines), indent="")
