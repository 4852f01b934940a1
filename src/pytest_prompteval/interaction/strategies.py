"""Accuracy strategies a prompt version can declare for code cases (seed 003), evaluated like
any version so their accuracy and cost sit beside the plain ones in the summary:

- ``strategy: {name: self_verify, attempts: 3}``: run the case's visible (basic) tests on
  the answer; on failure, send the conversation back with the failures, up to N attempts;
- ``strategy: {name: refine, attempts: 3}``: iterative refinement: a fresh request with the
  task, the current code and the failed tests, "fix the code";
- ``strategy: {name: best_of_n, n: 5}``: n independent answers, keep the one that passes
  the most visible tests.

Every attempt is its own recorded call, on the item's ledger: the item's tokens and cost
are the sum of them.
The final answer is scored against all the tests, edge ones included.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Generator, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pytest_prompteval.core.cases import Case
from pytest_prompteval.core.errors import PromptevalError
from pytest_prompteval.core.prompts import PromptVersion
from pytest_prompteval.core.request import Message, Request
from pytest_prompteval.core.response import Response
from pytest_prompteval.core.schema import check_keys
from pytest_prompteval.providers.base import Call, CallContext
from pytest_prompteval.providers.ledger import Ledger
from pytest_prompteval.providers.store import Store
from pytest_prompteval.scoring.code.spec import CodeSpec

if TYPE_CHECKING:  # a strategy's code runs load them (a run without one has no code to run)
    from pytest_prompteval.sandbox.client import SampleReport
    from pytest_prompteval.scoring.code.measure import Metrics
    from pytest_prompteval.scoring.code.runner import CodeRunner

NAMES = ("self_verify", "refine", "best_of_n")
EXTRA_SAMPLES = 10_000  # best_of_n's extra draws use sample keys far from the items' own


@dataclass(frozen=True)
class Strategy:
    #: one of NAMES
    name: str
    #: attempts, or best_of_n's n
    count: int


def parse_strategy(prompt: PromptVersion) -> Strategy | None:
    spec = prompt.raw.get("strategy")
    if spec is None:
        return None
    line = prompt.line_of("strategy")
    if not isinstance(spec, Mapping) or spec.get("name") not in NAMES:
        raise PromptevalError(
            f"field 'strategy': expected {{name: one of {', '.join(NAMES)}, attempts: N}}}}",
            prompt.path,
            line,
        )
    count_field = "n" if spec["name"] == "best_of_n" else "attempts"
    check_keys(spec, ("name", count_field), prompt.path, f"strategy {spec['name']}: ")
    count = spec.get(count_field, 3)
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= 20:
        raise PromptevalError("field 'strategy': expected a count from 1 to 20", prompt.path, line)
    return Strategy(spec["name"], count)


def _visible(spec: CodeSpec) -> CodeSpec:
    basic = tuple(t for t in spec.tests if t.tag == "basic")
    return dataclasses.replace(spec, tests=basic or spec.tests, properties=None)


def _submit(
    scorer: CodeRunner, case: Case, spec: CodeSpec, text: str, prefill: str
) -> tuple[str, Future[SampleReport]]:
    """The answer's code, and its run on the visible tests handed to the sandbox pool (the
    case's calibration made with all of them)."""
    from pytest_prompteval.sandbox.client import Limits
    from pytest_prompteval.scoring.code.extract import extract_code

    visible = _visible(spec)
    code, _ = extract_code(text, prefill, visible)
    limits = Limits(scorer.timeout_for(case, spec), scorer.memory_mb)
    return code, scorer.sandbox.submit(visible.job(code), limits)


def _check(
    scorer: CodeRunner, case: Case, spec: CodeSpec, text: str, prefill: str
) -> tuple[str, Metrics]:
    from pytest_prompteval.scoring.code.measure import measure

    code, run = _submit(scorer, case, spec, text, prefill)
    outputs = scorer.calibration(case, spec).outputs  # what reference-compared tests need
    return code, measure(_visible(spec), code, run.result(), outputs)


def _failures(metrics: Metrics, spec: CodeSpec) -> str:
    return (
        f"{metrics.tests_passed} of {len(spec.tests)} tests passed. First failure: "
        f"{metrics.first_failure}"
    )


def _task(request: Request) -> str:
    """The task as the first request stated it: its last user turn."""
    turn = next((m for m in reversed(request.messages) if m.role == "user"), None)
    return "\n".join(b for b in turn.content if isinstance(b, str)) if turn else ""


def _refine_prompt(request: Request, code: str, failures: str) -> str:
    """A fresh request that still carries the task, so that refine is judged on the same
    information as self_verify, which continues the conversation."""
    return (
        f"Task:\n{_task(request)}\n\nCurrent code:\n```python\n{code}\n```\n"
        f"Failed tests: {failures}\nFix the code so that it does the task and passes all "
        "tests. Answer with the complete code in one ```python block."
    )


#: A strategy's course: yields the calls it needs next, is sent their responses, and
#: returns the final answer and its prefill.
Course = Generator[list[Call], list[Response], tuple[str, str]]


def course(
    strategy: Strategy,
    scorer: CodeRunner,
    case: Case,
    spec: CodeSpec,
    request: Request,
    context: CallContext,
) -> Course:
    """The strategy's calls in rounds, each decided by the answers to the ones before: the
    same course whether it is walked call by call (``apply``) or round by round in message
    batches (``pending``)."""
    visible = _visible(spec)
    if strategy.name == "best_of_n":
        from pytest_prompteval.scoring.code.measure import measure

        draws = [
            dataclasses.replace(context, sample=EXTRA_SAMPLES + context.sample * strategy.count + j)
            for j in range(1, strategy.count)
        ]
        responses = yield [(request, context), *((request, d) for d in draws)]
        # every candidate handed to the pool at once: its servers run them side by side
        runs = [_submit(scorer, case, spec, r.text, request.prefill) for r in responses]
        outputs = scorer.calibration(case, spec).outputs
        tallies = [measure(visible, code, run.result(), outputs).tests_passed for code, run in runs]
        best = responses[tallies.index(max(tallies))]
        return best.text, request.prefill
    (first,) = yield [(request, context)]
    text, prefill = first.text, request.prefill
    for _attempt in range(1, strategy.count):
        code, metrics = _check(scorer, case, spec, text, prefill)
        if metrics.functional:
            break
        if strategy.name == "self_verify":
            turns = list(request.messages)
            if turns and turns[-1].role == "assistant":
                turns = turns[:-1]
            turns += [
                Message("assistant", (prefill + text,)),
                Message(
                    "user",
                    (
                        f"Your solution failed its tests. {_failures(metrics, visible)}\n"
                        "Write the corrected complete solution.",
                    ),
                ),
            ]
        else:
            turns = [Message("user", (_refine_prompt(request, code, _failures(metrics, visible)),))]
        retry = dataclasses.replace(request, messages=tuple(turns))
        (response,) = yield [(retry, context)]
        text, prefill = response.text, ""
    return text, prefill


def apply(
    strategy: Strategy,
    store: Store,
    ledger: Ledger,
    scorer: CodeRunner,
    case: Case,
    spec: CodeSpec,
    request: Request,
    context: CallContext,
    first: Response,
) -> tuple[str, str]:
    """(final answer, its prefill); the calls after the first go on ``ledger``."""
    walk = course(strategy, scorer, case, spec, request, context)
    calls = next(walk)
    while True:
        for call in calls:  # a round's calls go out together (when calls are sent ahead)
            if call != (request, context):
                store.prefetch(*call)
        got = []
        for call in calls:
            if call == (request, context):
                got.append(first)
                continue
            got.append(ledger.get(store, *call, "strategy").response)
        try:
            calls = walk.send(got)
        except StopIteration as done:
            text, prefill = done.value
            return text, prefill


def pending(
    strategy: Strategy,
    scorer: CodeRunner,
    case: Case,
    spec: CodeSpec,
    request: Request,
    context: CallContext,
    known: Callable[[Request, CallContext], Response | None],
) -> list[Call]:
    """The calls the strategy needs next whose responses ``known`` does not have yet (none
    when the course is complete)."""
    walk = course(strategy, scorer, case, spec, request, context)
    calls = next(walk)
    while True:
        got = [known(*call) for call in calls]
        missing = [call for call, response in zip(calls, got, strict=True) if response is None]
        if missing:
            walk.close()
            return missing
        try:
            calls = walk.send([r for r in got if r is not None])
        except StopIteration:
            return []
