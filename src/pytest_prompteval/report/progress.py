"""A line every tenth of a long run that makes calls (a replay needs none)."""

from __future__ import annotations

from pytest_prompteval.core.result import ItemResult
from pytest_prompteval.report import figures

#: runs with fewer items print no progress
SHORT = 20


class Progress:
    def __init__(self) -> None:
        self.total = 0  # the items collected
        self.done = 0
        self.next = 0.1
        self.live = False  # running totals, so a progress check never rescans the results
        self.tokens = 0
        self.cost = 0.0

    def add(self, result: ItemResult) -> str | None:
        """The line to print after this result, if it crosses the next tenth."""
        self.done += 1
        self.live |= result.replayed is False
        self.tokens += result.input_tokens + result.output_tokens
        self.cost += result.cost_usd or 0.0
        if self.total < SHORT or not self.live or self.done < self.total * self.next:
            return None
        self.next += 0.1
        return (
            f"prompteval: {self.done}/{self.total} items, {self.tokens} tokens, "
            f"{figures.dollars(self.cost)}"
        )
