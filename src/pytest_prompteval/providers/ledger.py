"""One item's calls, each recorded as it is made: what for, replayed or live, tokens, cost and
latency. The item's token, cost and call figures are derived from it in one place
(``Ledger.settle``), so every call is counted the same way."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from pytest_prompteval.core.pricing import PriceTable
from pytest_prompteval.core.request import Request
from pytest_prompteval.core.result import ItemResult
from pytest_prompteval.providers.base import CallContext
from pytest_prompteval.providers.store import Check, Fetched, Store

#: generation: the item's own call; strategy: a strategy's later calls; agent: an agent's
#: later steps; user: a simulated user's; judge: the judge's
Purpose = Literal["generation", "strategy", "agent", "user", "judge"]


@dataclass(frozen=True)
class Entry:
    purpose: Purpose
    replayed: bool
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    #: None for a model the price table does not know
    cost_usd: float | None
    latency_ms: float


@dataclass
class Ledger:
    prices: PriceTable
    entries: list[Entry] = field(default_factory=list)

    def get(
        self,
        store: Store,
        request: Request,
        context: CallContext,
        purpose: Purpose,
        check: Check | None = None,
        answers: Request | None = None,
    ) -> Fetched:
        """``store.get``, recorded."""
        fetched = store.get(request, context, check, answers=answers)
        response = fetched.response
        self.entries.append(
            Entry(
                purpose,
                fetched.replayed,
                response.input_tokens,
                response.output_tokens,
                response.cache_read_tokens,
                response.cache_write_tokens,
                self.prices.cost(response, request.model),
                response.latency_ms,
            )
        )
        return fetched

    def judge_totals(self, purpose: Purpose = "judge") -> tuple[int, int, float]:
        """The judge's (or the simulated user's) (input tokens, cache reads included; output
        tokens; cost)."""
        judge = [e for e in self.entries if e.purpose == purpose]
        return (
            sum(e.input_tokens + e.cache_read_tokens for e in judge),
            sum(e.output_tokens for e in judge),
            round(sum(e.cost_usd or 0.0 for e in judge), 8),
        )

    def settle(self, result: ItemResult) -> None:
        """The item's figures from its calls: tokens, cost and latency of the answer's calls
        (the generation, a strategy's later ones, an agent's steps), the judge's and a
        simulated user's apart, calls by source."""
        answer = [e for e in self.entries if e.purpose not in ("judge", "user")]
        if answer:
            costs = [e.cost_usd for e in answer]
            result.answer_calls = len(answer)
            result.input_tokens = sum(e.input_tokens for e in answer)
            result.output_tokens = sum(e.output_tokens for e in answer)
            result.cache_read_tokens = sum(e.cache_read_tokens for e in answer)
            result.cache_write_tokens = sum(e.cache_write_tokens for e in answer)
            result.cost_usd = None if None in costs else round(sum(c or 0.0 for c in costs), 8)
            # one call's latency as it was measured (or recorded)
            result.latency_ms = (
                answer[0].latency_ms
                if len(answer) == 1
                else round(sum(e.latency_ms for e in answer), 1)
            )
        (
            result.judge_input_tokens,
            result.judge_output_tokens,
            result.judge_cost_usd,
        ) = self.judge_totals()
        (
            result.user_input_tokens,
            result.user_output_tokens,
            result.user_cost_usd,
        ) = self.judge_totals("user")
        result.user_calls = sum(e.purpose == "user" for e in self.entries)
        result.judge_calls = len(self.entries) - len(answer) - result.user_calls
        result.calls_replayed = sum(e.replayed for e in self.entries)
        result.calls_live = len(self.entries) - result.calls_replayed
