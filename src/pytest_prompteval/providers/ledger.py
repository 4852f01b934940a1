"""One item's calls, each recorded as it is made: what for, and its ``Usage`` (replayed or
live, tokens, cost and latency). The item's figures are sums of these (``Ledger.usage``), so
every call is counted the same way."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from pytest_prompteval.core.pricing import PriceTable
from pytest_prompteval.core.request import Request
from pytest_prompteval.core.usage import Spent, Usage, total
from pytest_prompteval.providers.base import CallContext
from pytest_prompteval.providers.store import Check, Fetched, Store

#: generation: the item's own call; strategy: a strategy's later calls; agent: an agent's
#: later steps; user: a simulated user's; judge: the judge's
Purpose = Literal["generation", "strategy", "agent", "user", "judge"]
#: the calls that make the answer
ANSWER: tuple[Purpose, ...] = ("generation", "strategy", "agent")


@dataclass(frozen=True)
class Entry:
    purpose: Purpose
    usage: Usage


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
        cost = self.prices.cost(response, request.model)
        self.entries.append(
            Entry(
                purpose,
                Usage(
                    input_tokens=response.input_tokens,
                    output_tokens=response.output_tokens,
                    cache_read_tokens=response.cache_read_tokens,
                    cache_write_tokens=response.cache_write_tokens,
                    cost_usd=cost or 0.0,
                    unpriced=int(cost is None),
                    latency_ms=response.latency_ms,
                    calls=1,
                    replayed=int(fetched.replayed),
                ),
            )
        )
        return fetched

    def usage(self, *purposes: Purpose) -> Usage:
        """The calls made for these purposes (every call when none is named), summed."""
        return total(e.usage for e in self.entries if not purposes or e.purpose in purposes)

    def spent(self) -> Spent:
        return Spent(self.usage(*ANSWER), self.usage("judge"), self.usage("user"))
