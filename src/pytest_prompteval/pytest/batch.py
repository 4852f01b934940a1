"""``--prompteval-batch``: the run's calls as Message Batches (half price).

Before the first item runs, every request whose recording is missing (or, with
``--prompteval-record all``, every request) goes into a batch, matched back by ``custom_id``
(the recording key), with best_of_n's other candidates. Strategies' later calls (refine and
self_verify rounds) and agent conversations' later steps depend on the answers before them:
they go into further batches, one round at a time (a step per round; the scripted results
and Python tools answer the step's calls between rounds, each tool's outcome kept with its
answer so that the item does not run it again), until no item needs another call. Each batch
is polled with progress lines, cancelled on Ctrl-C, and each result is kept as a recording
like any other, so the items then replay. Only the items whose result errored, expired or was
cancelled fail, with the reason.
"""

from __future__ import annotations

from typing import cast

import pytest

from pytest_prompteval.core.errors import PromptevalError
from pytest_prompteval.core.request import Request
from pytest_prompteval.core.response import Response
from pytest_prompteval.engine.engine import Engine
from pytest_prompteval.interaction.agent import for_purpose
from pytest_prompteval.interaction.recorded import walk_recorded
from pytest_prompteval.interaction.strategies import pending
from pytest_prompteval.providers.base import Call, CallContext, SdkProvider
from pytest_prompteval.providers.batches import run_batch
from pytest_prompteval.providers.ledger import Purpose
from pytest_prompteval.pytest.work import Work, WorkList

#: More rounds than any strategy has attempts: a bound should a batch leave a call unanswered
#: (an agent's conversation takes up to its max_steps rounds).
ROUNDS = 32


def next_calls(engine: Engine, work: Work, request: Request) -> list[Call]:
    """The item's calls not answered yet that can be sent now: its own, or its strategy's
    next round given the answers recorded so far."""
    store = engine.store
    context = work.context
    code, strategy, agent = work.spec.code, work.spec.strategy, work.spec.scripted_agent

    def known(request: Request, context: CallContext) -> Response | None:
        if store.needs_call(request, context.sample):
            return None
        return store.get(request, context).response

    if agent is not None:

        def keep(said: Request, answer: Response) -> None:
            store.record(said, context, answer)

        def answered(asked: Request, purpose: Purpose) -> Response | None:
            return known(asked, for_purpose(context, purpose))

        walked = walk_recorded(
            agent, work.spec.case, request, answered, keep, deadline=work.deadline
        )
        missing = walked.missing
        if missing is None or missing.key(context.sample) in store.batch_failures:
            return []
        return [(missing, for_purpose(context, walked.purpose))]
    if strategy is None or code is None:
        return [(request, context)] if store.needs_call(request, context.sample) else []

    calls = pending(strategy, engine.code_runner(), work.spec.case, code, request, context, known)
    return [(r, c) for r, c in calls if r.key(c.sample) not in store.batch_failures]


def send_session_batch(
    session: pytest.Session, work: WorkList, engine: Engine, poll: float
) -> None:
    """Batch the calls of every item the session will run whose answer is not recorded, in
    rounds while strategies need more."""
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    progress = reporter.write_line if reporter else print
    provider = engine.store.provider
    if not provider.capabilities.batches:  # said once; the items then call one by one
        progress(
            f"prompteval: --prompteval-batch: {provider.name} has no Message Batches, so the "
            "calls are sent one by one, at full price"
        )
        return
    waiting = []
    for item in work:
        if item is None:
            continue
        try:
            waiting.append((item, item.request()))
        except PromptevalError:
            continue  # the item reports it when it runs
    steps = [w.spec.agent.max_steps for w, _ in waiting if w.spec.agent is not None]
    for round_number in range(1, max([ROUNDS, *steps]) + 1):
        calls: dict[str, Call] = {}
        still = []
        for item, request in waiting:
            try:
                wanted = next_calls(engine, item, request)
            except PromptevalError:
                continue  # the item reports it when it runs
            if wanted:
                still.append((item, request))
                calls.update((r.key(c.sample), (r, c)) for r, c in wanted)
        if not calls:
            return
        if round_number > 1:
            progress(f"prompteval: batch round {round_number}: strategies' and agents' next calls")
        run_batch(
            engine.store,
            cast(SdkProvider, provider),  # its capabilities say it has a client with batches
            list(calls.values()),
            progress,
            poll=poll,
        )
        waiting = still
