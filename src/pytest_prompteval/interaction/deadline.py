"""An agent item's deadline: the time the tool calls the model makes may run in all
(``item_timeout``).

The clock runs only while a tool the model called runs, never while the model or a
simulated user answers: it counts what the model controls (how many calls, and what each
runs), so a slow API never fails an item and a deadline passed is the agent's failure. Each
call may run at most the time left (the repository sandbox gets min(its timeout, the time
left) per command); a Python tool, the project's own code, is not interrupted: its time
counts when it returns.

One deadline per item, shared by every walk of its conversation (ahead on the pool, in
batch rounds, the item's own): each walk starts again from the first call, and a call an
earlier walk ran counts the time it took then (its outcome is held, not run again), so
every walk stops at the same call.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from time import monotonic
from typing import Any

from pytest_prompteval.core.content import ToolExecutor, ToolOutcome

#: seconds of tool time an agent item may use, unless its case or the ini says otherwise
DEFAULT_ITEM_TIMEOUT = 600.0
#: at most, from any file: a pull request may not hold a CI runner for hours
MAX_ITEM_TIMEOUT = 3600.0


class Deadline:
    """``seconds`` of tool time for one item; ``clock``: seconds (a test's fake clock)."""

    def __init__(self, seconds: float, clock: Callable[[], float] | None = None) -> None:
        self.seconds = seconds
        self.clock = clock or monotonic
        #: the time spent after each call, in the conversation's order, over every walk
        self.after: list[float] = []
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

    def run(self, execute: ToolExecutor, name: str, arguments: Mapping[str, Any]) -> ToolOutcome:
        """The call's outcome, its time counted (once, however many walks make it)."""
        index, self.calls = self.calls, self.calls + 1
        if index < len(self.after):  # an earlier walk ran it: its outcome is held
            self.spent = self.after[index]
            return execute(name, arguments)
        began = self.clock()
        outcome = execute(name, arguments)  # raising, it ends the walk: nothing to count
        self.spent += max(0.0, self.clock() - began)
        self.after.append(self.spent)
        return outcome
