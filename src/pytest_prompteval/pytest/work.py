"""The plain work list the glue around items reads (calls sent ahead, batches, the estimate,
the inventory): each item's spec and request, in pytest's order, built once after collection.
The glue never needs the items themselves, so it does not import them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future, wait
from dataclasses import dataclass, field

import pytest

from pytest_prompteval.core.request import Request
from pytest_prompteval.engine.evaluate import ItemSpec
from pytest_prompteval.interaction.deadline import Deadline
from pytest_prompteval.providers.base import CallContext


@dataclass(eq=False)
class Work:
    spec: ItemSpec
    build: Callable[[], Request]  # raises PromptevalError on a template error
    _request: Request | None = field(default=None, repr=False)
    #: an agent item's conversation walked ahead on the pool (``Lookahead``)
    walking: Future[None] | None = field(default=None, repr=False)
    #: an agent item's deadline, shared by every walk of its conversation
    deadline: Deadline | None = field(init=False, repr=False)

    def __post_init__(self) -> None:
        agent = self.spec.agent
        self.deadline = None if agent is None else Deadline(agent.item_timeout)

    def request(self) -> Request:
        """Built once: calls sent ahead and batches need it before the item runs (a template
        error raises here, and again when the item runs)."""
        if self._request is None:
            self._request = self.build()
        return self._request

    def take(self) -> Request | None:
        """The request if it was built ahead, handed to the item that runs it (and no longer
        held here)."""
        request, self._request = self._request, None
        return request

    def walked(self) -> None:
        """Wait for the conversation walked ahead, if any: the item then finds its steps
        answered (and walks on itself from a step the walk ahead failed at)."""
        if self.walking is not None:
            wait([self.walking])
            self.walking = None

    @property
    def context(self) -> CallContext:
        return CallContext(self.spec.case, self.spec.prompt, self.spec.sample)


#: one entry per ``session.items`` index: the item's work, or None for a plain test
WorkList = Sequence[Work | None]


def work_list(items: Sequence[pytest.Item]) -> list[Work | None]:
    work = [getattr(item, "work", None) for item in items]
    return [w if isinstance(w, Work) else None for w in work]
