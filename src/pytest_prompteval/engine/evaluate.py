"""One item's work: render the request, get the response through the store, score it.

Every call goes on the item's ledger, whose usage (tokens, cost, calls) is the result's;
``evaluate`` returns what the work found (the answer, the conversation, scoring's parts, the
verdict, the usage, the error), which ``engine/assemble.py`` makes the item's result from.
Whatever was computed before a failure (request, model, response, calls) stays on it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pluggy

from pytest_prompteval.core.cases import Case
from pytest_prompteval.core.errors import PromptevalError, user_code_error
from pytest_prompteval.core.prompts import PromptVersion, build_request, template_variables
from pytest_prompteval.core.request import Request
from pytest_prompteval.core.response import Response
from pytest_prompteval.core.result import ItemResult, Trajectory
from pytest_prompteval.core.safetext import safe_text
from pytest_prompteval.engine.assemble import Decision, Found, Parts, Subject, answer_cost
from pytest_prompteval.engine.engine import Engine
from pytest_prompteval.interaction.agent import AgentSpec, converse, executor, with_tools
from pytest_prompteval.interaction.agent import shown as agent_shown
from pytest_prompteval.interaction.deadline import Deadline
from pytest_prompteval.interaction.strategies import Strategy, apply
from pytest_prompteval.providers.base import CallContext
from pytest_prompteval.providers.ledger import ANSWER, Ledger
from pytest_prompteval.providers.store import Fetched, MissingRecording
from pytest_prompteval.scoring.assertions import (
    FILE_TYPES,
    JUDGED_TYPES,
    TRAJECTORY_TYPES,
    Assertion,
    Checked,
    Observed,
    check_simple,
    check_trajectory,
    combine,
    custom_score,
    file_job,
    scored,
)
from pytest_prompteval.scoring.automatic import expected_topics
from pytest_prompteval.scoring.code.spec import CodeSpec
from pytest_prompteval.scoring.kinds.builtin import ASSERTIONS_ONLY
from pytest_prompteval.scoring.kinds.protocol import Answer, Context, Options, Scored, Shape
from pytest_prompteval.scoring.kinds.registry import checked, choose, kind, running
from pytest_prompteval.scoring.score import Score

if TYPE_CHECKING:  # a repository case's machinery loads with the first such case
    from pytest_prompteval.interaction.repository import RepoTask
    from pytest_prompteval.scoring.repo import RepoVerdict


class CaseFailed(AssertionError):
    """The response scored under the threshold; the message says why."""


def make_request(
    hook: pluggy.HookRelay,
    engine: Engine,
    case: Case,
    prompt: PromptVersion,
    agent: AgentSpec | None = None,
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
    return request if agent is None else with_tools(request, agent)


def _sample_texts(
    engine: Engine, request: Request, ctx: CallContext, own: Fetched, n: int
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
    #: the prompt version's strategy, for a code case
    strategy: Strategy | None = None
    #: the name of the scorer kind that decides the item (``scorer_for``)
    scorer: str = "automatic"
    #: an agent case's tools, scripted world and turns with this prompt version
    agent: AgentSpec | None = None
    #: a repository case's task with this prompt version (its agent is ``agent``)
    repo: RepoTask | None = None

    @property
    def scripted_agent(self) -> AgentSpec | None:
        """The agent of a conversation none of whose tools re-runs on replay (scripted
        results, the project's Python tools): what may be walked ahead of the item or in
        batch rounds. A re-run tool (a repository task's, in its sandbox) runs with the
        item."""
        agent = self.agent
        return agent if self.code is None and agent is not None and not agent.reruns else None


def scorer_for(
    engine: Engine,
    case: Case,
    assertions: tuple[Assertion, ...],
    code: CodeSpec | None,
    repository: bool = False,
) -> str:
    """The name of the registered scorer kind that decides the case (``kinds.registry``)."""
    shape = Shape(case, assertions, code, repository)
    return choose(shape, engine.settings.scorer, engine.settings.scorer_named).name


@dataclass(frozen=True)
class Given:
    """What a check is given beside the answer: the item's threshold, its conversation and
    the answer's cost so far."""

    threshold: float
    trajectory: Trajectory | None = None
    cost_usd: float | None = None


def run_check(
    engine: Engine,
    spec: ItemSpec,
    assertion: Assertion,
    request: Request,
    response: Response,
    given: Given,
    ledger: Ledger,
    repo: RepoVerdict | None = None,
) -> Checked:
    seen = Observed(
        response.text,
        request.prefill,
        response.output_tokens,
        response.latency_ms,
        given.cost_usd,
    )
    if assertion.type in TRAJECTORY_TYPES:
        assert given.trajectory is not None  # the spec admits them on agent cases only
        return check_trajectory(assertion, given.trajectory)
    if assertion.type in FILE_TYPES:
        assert repo is not None  # the spec admits them on repository cases only
        from pytest_prompteval.scoring.repo import file_key

        passed, reason = repo.files[file_key(file_job(assertion))]
        return Checked(assertion.type, passed, float(passed), assertion.weight, reason)
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
    if assertion.type in JUDGED_TYPES:
        return _judged(engine, spec, assertion, text, given, ledger)
    function = engine.scorers()[assertion.type]
    try:
        returned = function(spec.case, request, response)
    except Exception as exc:
        raise user_code_error(
            f"scorer {assertion.type!r}, scoring case {spec.case.id!r}", exc
        ) from None
    value, dims = custom_score(assertion.type, returned)
    detail = "".join(f" {k} {v:.2f}" for k, v in dims.items())
    return scored(assertion, value, given.threshold, f"scorer {assertion.type}{detail}")


BASELINE_QUESTION = (
    "Is the answer (and what the assistant did, if shown) at least as good as this reference "
    "for the user's request: as correct, as complete, as useful? 100: at least as good; 50: "
    "somewhat worse; 0: far worse.\n\n<reference>\n{reference}\n</reference>"
)


def _judged(
    engine: Engine,
    spec: ItemSpec,
    assertion: Assertion,
    text: str,
    given: Given,
    ledger: Ledger,
) -> Checked:
    """A judge question's check (``baseline``: is the answer at least as good as the
    reference?); with ``votes: N`` the majority of N votes decides: the median score passes
    exactly when most votes do."""
    judge, case = engine.judge(), spec.case
    question = assertion.value
    if assertion.type == "baseline":
        question = BASELINE_QUESTION.format(reference=assertion.value)
    if assertion.votes == 1:
        score, reason = judge.ask(case, spec.prompt, text, question, ledger, given.trajectory)
        return scored(assertion, score, given.threshold, f"judge: {reason}")
    votes = [
        judge.ask(case, spec.prompt, text, question, ledger, given.trajectory, n)
        for n in range(assertion.votes)
    ]
    scores = sorted(score for score, _ in votes)
    median = scores[len(scores) // 2]
    threshold = assertion.threshold if assertion.threshold is not None else given.threshold
    passing = sum(score >= threshold for score, _ in votes)
    agreeing = max(passing, len(votes) - passing)
    reason = next(why for score, why in votes if score == median)
    shown = ", ".join(f"{score:.2f}" for score, _ in votes)
    return scored(
        assertion,
        median,
        given.threshold,
        f"judge: {passing}/{len(votes)} votes pass (scores {shown}; agreement "
        f"{agreeing}/{len(votes)}): {reason}",
    )


def _final(
    engine: Engine,
    spec: ItemSpec,
    request: Request,
    ctx: CallContext,
    response: Response,
    ledger: Ledger,
) -> tuple[str, str]:
    """The final text and prefill: a code case's strategy (self-repair...) may call again."""
    if spec.strategy is None or spec.code is None:
        return response.text, request.prefill
    runner = engine.code_runner()
    return apply(
        spec.strategy, engine.store, ledger, runner, spec.case, spec.code, request, ctx, response
    )


def options(engine: Engine) -> Options:
    """The run's settings that decide scoring."""
    s = engine.settings
    return Options(s.code_pass, s.seed, s.judge_rate)


def _main(
    engine: Engine,
    spec: ItemSpec,
    request: Request,
    ctx: CallContext,
    ledger: Ledger,
    found: Found,
) -> Score | None:
    """The deciding kind's score (None: the assertions alone decide), its parts kept in
    ``found`` as they come."""
    fetched = found.fetched
    assert fetched is not None
    response = fetched.response
    text, prefill = _final(engine, spec, request, ctx, response, ledger)
    answer = Answer(
        spec.case,
        spec.prompt,
        request,
        response,
        text,
        prefill,
        found.trajectory,
        spec.code,
        found.repo,
    )

    def keep(scored: Scored) -> None:
        found.parts = Parts(spec.scorer, scored.automatic, scored.verdict, scored.execution, text)

    def samples() -> list[str]:
        if spec.samples <= 1:
            return []
        return _sample_texts(engine, request, ctx, fetched, spec.samples)

    context = Context(
        ledger,
        options(engine),
        engine.scorer,
        engine.judge,
        engine.code_runner,
        lambda: engine.sandboxes,
        samples,
        keep,
    )
    deciding = kind(spec.scorer)
    with running(deciding, f"scoring case {spec.case.id!r}"):
        scored = checked(deciding, deciding.score(answer, context))
    keep(scored)
    return scored.main


def _decide(
    engine: Engine,
    spec: ItemSpec,
    main: Score | None,
    checks: list[Checked],
    given: Given,
) -> Decision:
    """The item's score and verdict from its main score and its checks."""
    threshold = given.threshold
    if main is None:  # scored by its assertions alone
        score = round(combine(None, checks), 6)
        main_passes = score >= threshold
    else:
        score = round(combine(main.value, checks), 6) if checks else main.value
        deciding = kind(spec.scorer)
        with running(deciding, f"scoring case {spec.case.id!r}"):
            main_passes = bool(deciding.passes(main, threshold, options(engine)))
    trajectory = given.trajectory
    ended = trajectory is None or trajectory.failure is None
    passed = ended and main_passes and all(c.passed for c in checks)
    return Decision(score, main, passed, tuple(checks))


def _answer(
    engine: Engine,
    spec: ItemSpec,
    request: Request,
    ctx: CallContext,
    ledger: Ledger,
    found: Found,
    deadline: Deadline | None,
) -> None:
    """The item's final answer: one call, an agent's conversation, or a repository task's
    conversation and verdict."""
    if spec.repo is not None:
        from pytest_prompteval.interaction.repository import run_task

        found.fetched, found.trajectory, found.repo = run_task(
            spec.repo, engine.store, ledger, request, ctx, engine.sandboxes, deadline
        )
    elif spec.agent is None:
        found.fetched = ledger.get(engine.store, request, ctx, "generation")
    else:
        tools = executor(spec.agent, spec.case)
        found.fetched, found.trajectory = converse(
            spec.agent, engine.store, ledger, request, ctx, tools, deadline=deadline
        )


def evaluate(
    hook: pluggy.HookRelay,
    engine: Engine,
    spec: ItemSpec,
    subject: Subject,
    request: Request | None = None,
    deadline: Deadline | None = None,
) -> Found:
    """The item's work, as far as it got: ``found.error`` says what went wrong, if anything
    did (whatever was computed before stays). ``request``: the one already built for this
    item, if any; ``deadline``: an agent item's, if its conversation was walked before
    (ahead, in batch rounds)."""
    ledger, found = Ledger(engine.prices), Found()
    try:
        if request is None:
            request = make_request(hook, engine, spec.case, spec.prompt, spec.agent)
        found.request = request
        ctx = CallContext(spec.case, spec.prompt, spec.sample)
        _answer(engine, spec, request, ctx, ledger, found, deadline)
        assert found.fetched is not None
        main = _main(engine, spec, request, ctx, ledger, found)
        # the checks see the answer's figures so far
        cost = answer_cost(ledger.usage(*ANSWER))
        given = Given(subject.threshold, found.trajectory, cost)
        response = found.fetched.response
        checks = [
            run_check(engine, spec, a, request, response, given, ledger, found.repo)
            for a in spec.assertions
        ]
        found.decision = _decide(engine, spec, main, checks, given)
    except PromptevalError as exc:
        found.error = exc
    finally:
        found.spent = ledger.spent()
    return found


def trajectory_lines(trajectory: Trajectory, shown: int = 200) -> list[str]:
    """The conversation, a line per step, tool call and user turn."""
    lines = ["  trajectory:"]
    for step in trajectory.steps:
        said = step.text.replace("\n", " ")
        said = said if len(said) <= 80 else said[:77] + "..."
        lines.append(f"    step {step.number} ({step.stop_reason or '-'}): {said!r}")
        for call in step.calls:
            result = call.result if len(call.result) <= shown else call.result[:shown] + "..."
            what = "error" if call.is_error else "result"
            lines.append(f"      {call.name}({agent_shown(call.input)}) -> {what}: {result}")
        if step.turn is not None:
            lines.append(f"      user: {step.turn}")
    return lines


RESPONSE_SHOWN = 300  # characters of the answer in a failure, unless -vv


def _failure_reason(result: ItemResult) -> tuple[str, bool]:
    """Why the item failed first, and whether that is its first failed assertion."""
    main, threshold = result.main_score or 0.0, result.threshold
    failed_checks = [c for c in result.assertions if not c.passed]
    run, trajectory, repo = result.execution, result.trajectory, result.repo
    if trajectory is not None and trajectory.failure is not None:
        return trajectory.failure, False
    if repo is not None and not repo.resolved:
        from pytest_prompteval.scoring.repo import RepoVerdict

        return "not resolved: " + RepoVerdict.of(repo).message().replace("\n", "\n    "), False
    if run is not None and run.error_class is not None:
        return (
            f"{run.tests_passed}/{run.tests_total} tests passed, partial correctness {main:.3f}",
            False,
        )
    if failed_checks and (run is not None or main >= threshold or result.scorer == ASSERTIONS_ONLY):
        first = failed_checks[0]
        return f"failed assert {first.type}: {first.reason}", True
    return f"{result.scorer} score {main:.3f} below threshold {threshold:.2f}", False


def failure_reason(result: ItemResult) -> str:
    """Why a failed item failed, in one line (the first of its failure message)."""
    return _failure_reason(result)[0].split("\n", 1)[0]


def failure_message(result: ItemResult, whole_response: bool = False) -> str:
    """Why the item failed first, then the score as the summary counts it, then what the
    model said and where it is kept. Text from the answer and the files is made safe for a
    terminal and a CI log."""
    suffix = f"-s{result.sample}" if result.samples > 1 else ""
    label = f"{result.case_id} [{result.prompt}{suffix}]"
    why, check_named = _failure_reason(result)
    failed_checks = [c for c in result.assertions if not c.passed][1 if check_named else 0 :]
    run, trajectory = result.execution, result.trajectory
    lines = [f"{label}: {why}"]
    if run is not None and run.error_class is not None:
        lines.append(f"  {run.error_class}: {run.first_failure}")
    lines += _score_lines(result, check_named)
    lines += [f"  failed assert {c.type}: {c.reason}" for c in failed_checks]
    if trajectory is not None:
        lines += trajectory_lines(trajectory)
    answer = result.response or ""
    if not whole_response and len(answer) > RESPONSE_SHOWN:
        answer = answer[:RESPONSE_SHOWN] + f"... ({len(answer)} characters; -vv shows all)"
    lines.append("  response: " + answer.replace("\n", "\n    "))
    if result.recording:
        lines.append(f"  recording: {result.recording}")
    return safe_text("\n".join(lines), indent="")


def _score_lines(result: ItemResult, check_named: bool) -> list[str]:
    """The score as the summary counts it, and what the scorer found."""
    lines = []
    score, threshold = result.score or 0.0, result.threshold
    run, trajectory, repo = result.execution, result.trajectory, result.repo
    if check_named:
        # not the threshold: a score beside it would read as a near miss
        passed = sum(c.passed for c in result.assertions)
        lines.append(
            f"  assertions: {passed}/{len(result.assertions)} passed; any failure fails the "
            f"item, whatever its score ({score:.3f})"
        )
    elif trajectory is None or trajectory.failure is None:
        lines.append(f"  score {score:.3f} (threshold {threshold:.2f})")
    if result.missing_topics:
        lines.append("  missing topics: " + ", ".join(result.missing_topics))
    lines += [f"  incorrect claim: {claim}" for claim in result.incorrect_claims]
    if result.dimensions and run is None and repo is None:
        dims = "  ".join(f"{k} {v:.2f}" for k, v in result.dimensions.items())
        lines.append(f"  dimensions: {dims}")
    if result.judge is not None and result.judge.notes:
        lines.append(f"  judge notes: {result.judge.notes}")
    return lines
