"""Calls sent ahead of the items that consume them: model calls wait on the network, so a
process keeps up to ``--prompteval-concurrency`` of them in flight while items still report
one by one, in pytest's order. Code items' samples are queued on the sandbox pool as soon as
their answers are there.

An agent item's whole conversation is walked ahead, step after step, on a walker thread of
its own, each step a call of the pool in turn with the others: its item waits for the walk
and finds every step answered (the Python tools' outcomes with them, so each runs once).

Which items come next: the rest of the work list (in ``session.items``' order) without
xdist; under xdist, the indices waiting in this worker's queue (xdist hands each worker its
share in advance).
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_prompteval.core.errors import PromptevalError
from pytest_prompteval.core.request import Request
from pytest_prompteval.engine.engine import Engine
from pytest_prompteval.interaction.agent import AgentSpec, converse_ahead, executor
from pytest_prompteval.providers.base import CallContext
from pytest_prompteval.pytest.adapters import xdist_upcoming
from pytest_prompteval.pytest.work import Work, WorkList


class Lookahead:
    def __init__(self, session: pytest.Session, work: WorkList, engine: Engine, concurrency: int):
        self.session = session
        self.work = work
        self.engine = engine
        # Far enough ahead that the calls go on while an item waits on a slow one (a stall,
        # a retry): the calls in flight are held to the concurrency by the pool and the gate.
        self.window = 16 * concurrency
        self.submitted: set[int] = set()  # under xdist: indices of items already sent ahead
        self.horizon = 0  # without xdist: every item before this index was sent ahead
        self.positions = {id(w): i for i, w in enumerate(work) if w is not None}
        self.queued = xdist_upcoming(session.config, self.window)
        engine.store.start_pool(concurrency)

    def _upcoming(self, work: Work) -> range | list[int]:
        """Indices of the items after ``work``'s not sent ahead yet: each is looked at once."""
        if self.queued is not None:
            fresh = [i for i in self.queued() if i not in self.submitted]
            self.submitted.update(fresh)
            return fresh
        start = self.positions.get(id(work), -1) + 1
        stop = min(start + self.window, len(self.work))
        upcoming = range(max(start, self.horizon), stop)
        self.horizon = max(self.horizon, stop)
        return upcoming

    def ahead(self, work: Work) -> None:
        if self.session.shouldstop or self.session.shouldfail:
            self.engine.stop()  # -x or a stop: no new calls
            return
        for index in self._upcoming(work):
            other = self.work[index]
            if other is None:
                continue
            try:
                request = other.request()
            except PromptevalError:
                continue  # the item reports it when it runs
            spec, context = other.spec, other.context
            if spec.scripted_agent is not None:
                self._converse(other, spec.scripted_agent, request)
                continue
            waits = self.engine.store.prefetch(request, context)
            if spec.code is not None and spec.strategy is None:
                self.engine.code_runner().ahead(
                    spec.case, spec.code, self._answer(request, context), index, waits
                )

    def _converse(self, work: Work, agent: AgentSpec, request: Request) -> None:
        """The whole conversation walked ahead, step after step, on a walker; its item
        waits for the walk, then finds its steps answered."""
        spec, context, store = work.spec, work.context, self.engine.store

        def going() -> bool:
            return not (self.session.shouldstop or self.session.shouldfail)

        def walk() -> None:
            tools = executor(agent, spec.case)
            converse_ahead(agent, store, request, context, tools, going, work.deadline)

        work.walking = store.submit(walk)

    def _answer(self, request: Any, context: CallContext) -> Any:
        """The answer as it arrives: the call sent ahead, or the recording."""

        def answer() -> tuple[str, str]:
            if self.session.shouldstop or self.session.shouldfail:
                raise PromptevalError("stopping: no new calls")  # left for the item
            fetched = self.engine.store.get(request, context, keep=True)  # the item's too
            return fetched.response.text, request.prefill

        return answer
