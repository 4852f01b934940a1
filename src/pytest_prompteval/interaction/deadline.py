"""An agent item's deadline: the time the tool calls the model makes may run in all
(``item_timeout``).

The clock runs only while a tool the model called runs, never while the model or a
simulated user answers: it counts what the model controls (how many calls, and what each
runs), so a slow API never fails an item and a deadline passed is the agent's failure. Each
call may run at most the time left: the repository sandbox gets min(its timeout, the time
left) per command; a Python tool (the project's code, given the model's arguments) runs on
a thread of its own, waited for the time left: one still running then is left behind (a
thread cannot be stopped; it ends with the process) and the item fails at its call.

One deadline per item, shared by every walk of its conversation (ahead on the pool, in
batch rounds, the item's own): each walk starts again from the first call, and a call
counts the time of every run of it: once, when its outcome is held with the answer for the
walks after; each time, when it is run again (an answer without it: a recording made
without the outcome, or edited), so running a call in every walk cannot multiply the
deadline. A call left running is not run again.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable, Mapping
from time import monotonic
from typing import Any

from pytest_prompteval.core.content import ToolExecutor, ToolOutcome

#: seconds of tool time an agent item may use, unless its case or the ini says otherwise
DEFAULT_ITEM_TIMEOUT = 600.0
#: at most, from any file: a pull request may not hold a CI runner for hours
MAX_ITEM_TIMEOUT = 3600.0
#: the outcome of a call still running at the deadline (the item fails at it)
LEFT_RUNNING = ToolOutcome("not finished when the item's deadline passed", is_error=True)


class Deadline:
    """``seconds`` of tool time for one item; ``clock``: seconds (a test's fake clock)."""

    def __init__(self, seconds: float, clock: Callable[[], float] | None = None) -> None:
        self.seconds = seconds
        self.clock = clock or monotonic
        #: each call's time, in the conversation's order, over every run of it in any walk
        self.took: list[float] = []
        self.abandoned: set[int] = set()  # the calls left running
        self.calls = 0  # calls of the current walk
        self.spent = 0.0  # the current walk's time, up to its last call

    def start(self) -> None:
        """A walk of the conversation begins at its first call."""
        self.calls, self.spent = 0, 0.0

    def left(self) -> float:
        return max(0.0, self.seconds - self.spent)

    @property
    def passed(self) -> bool:
        return self.spent >= self.seconds

    def run(
        self,
        execute: ToolExecutor,
        name: str,
        arguments: Mapping[str, Any],
        waited: bool = False,
    ) -> ToolOutcome:
        """The call's outcome, its time counted over every walk that runs it.
        ``waited``: a call that bounds no time of its own (a Python tool), run on a thread
        waited for the time left."""
        index, self.calls = self.calls, self.calls + 1
        if index in self.abandoned:  # left running by an earlier walk: not run again
            self.spent += self.took[index]
            return LEFT_RUNNING
        began = self.clock()
        # raising, it ends the walk: nothing to count
        outcome = self._waited(execute, name, arguments) if waited else execute(name, arguments)
        if index == len(self.took):
            self.took.append(0.0)
        self.took[index] += max(0.0, self.clock() - began)  # ~0 for an outcome held
        if outcome is LEFT_RUNNING:
            self.abandoned.add(index)
            self.took[index] = max(self.took[index], self.seconds)
        self.spent += self.took[index]
        return outcome

    def _waited(
        self, execute: ToolExecutor, name: str, arguments: Mapping[str, Any]
    ) -> ToolOutcome:
        ended: list[ToolOutcome | BaseException] = []
        context = contextvars.copy_context()  # the tool sees the caller's context

        def call() -> None:
            try:
                ended.append(context.run(execute, name, arguments))
            except BaseException as exc:  # raised in the caller
                ended.append(exc)

        thread = threading.Thread(target=call, name=f"prompteval tool {name}", daemon=True)
        thread.start()
        thread.join(self.left())
        if not ended:
            return LEFT_RUNNING
        if isinstance(ended[0], BaseException):
            raise ended[0]
        return ended[0]
