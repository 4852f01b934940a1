"""Calls sent ahead of the items that consume them: model calls wait on the network, so a
process keeps up to ``--prompteval-concurrency`` of them in flight while items still report
one by one, in pytest's order. Code items' samples are queued on the sandbox pool as soon as
their answers are there.

Which items come next: the rest of ``session.items`` without xdist; under xdist, the
indices waiting in this worker's queue (xdist hands each worker its share in advance).
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_prompteval.core.errors import PromptevalError
from pytest_prompteval.engine.engine import Engine
from pytest_prompteval.providers.base import CallContext
from pytest_prompteval.pytest.adapters import xdist_upcoming
from pytest_prompteval.pytest.items import CaseItem
from pytest_prompteval.scoring.strategies import parse_strategy


class Lookahead:
    def __init__(self, session: pytest.Session, engine: Engine, concurrency: int):
        self.session = session
        self.engine = engine
        # Far enough ahead that the calls go on while an item waits on a slow one (a stall,
        # a retry): the calls in flight are held to the concurrency by the pool and the gate.
        self.window = 16 * concurrency
        self.submitted: set[str] = set()
        self.positions = {item.nodeid: i for i, item in enumerate(session.items)}
        self.queued = xdist_upcoming(session.config, self.window)
        engine.store.start_pool(concurrency)

    def _upcoming(self, item: pytest.Item) -> list[Any]:
        if self.queued is not None:
            return [self.session.items[i] for i in self.queued()]
        start = self.positions.get(item.nodeid, -1) + 1
        return list(self.session.items[start : start + self.window])

    def ahead(self, item: CaseItem) -> None:
        if self.session.shouldstop or self.session.shouldfail:
            self.engine.stop()  # -x or a stop: no new calls
            return
        for other in self._upcoming(item):
            if not isinstance(other, CaseItem) or other.nodeid in self.submitted:
                continue
            self.submitted.add(other.nodeid)
            try:
                request = other.prepare()
                ahead_code = other.spec.code is not None and parse_strategy(other.prompt) is None
            except PromptevalError:
                continue  # the item reports it when it runs
            context = CallContext(other.case, other.prompt, other.spec.sample)
            self.engine.store.prefetch(request, context)
            if ahead_code and other.spec.code is not None:
                self.engine.code_scorer().ahead(
                    other.case, other.spec.code, self._answer(request, context)
                )

    def _answer(self, request: Any, context: CallContext) -> Any:
        """The answer as it arrives: the call sent ahead, or the recording."""

        def answer() -> tuple[str, str]:
            if self.session.shouldstop or self.session.shouldfail:
                raise PromptevalError("stopping: no new calls")  # left for the item
            return self.engine.store.get(request, context).response.text, request.prefill

        return answer
