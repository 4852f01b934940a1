"""What model calls spent: one ``Usage`` value for the answer's calls, the judge's and a
simulated user's, added up by one function (``total``).

The convention, the Messages API's own: ``input_tokens`` are the input tokens billed at the
base rate; cache reads and cache writes are counted apart, never in ``input_tokens``. So the
judge's "tokens in" and the answer's mean the same thing, and a history file's
``input_tokens`` means what it always did. ``cost_usd`` prices all four kinds, for the calls
whose model has a price (``unpriced`` counts the others). Each purpose's usage is kept apart
(the answer's ``cost_usd`` holds neither the judge's nor a simulated user's); what a run
spent is their ``total``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    #: the calls that have a price
    cost_usd: float = 0.0
    #: calls whose model has no price (left out of ``cost_usd``)
    unpriced: int = 0
    latency_ms: float = 0.0
    calls: int = 0
    #: of ``calls``, those answered from recordings
    replayed: int = 0

    @property
    def live(self) -> int:
        return self.calls - self.replayed


def total(usages: Iterable[Usage]) -> Usage:
    """The sum, in the order given (float sums depend on it)."""
    parts = list(usages)
    return Usage(
        input_tokens=sum(u.input_tokens for u in parts),
        output_tokens=sum(u.output_tokens for u in parts),
        cache_read_tokens=sum(u.cache_read_tokens for u in parts),
        cache_write_tokens=sum(u.cache_write_tokens for u in parts),
        cost_usd=sum((u.cost_usd for u in parts), 0.0),
        unpriced=sum(u.unpriced for u in parts),
        latency_ms=sum((u.latency_ms for u in parts), 0.0),
        calls=sum(u.calls for u in parts),
        replayed=sum(u.replayed for u in parts),
    )


@dataclass(frozen=True)
class Spent:
    """An item's usage by purpose: its answer's calls (the generation, a strategy's later
    calls, an agent's steps), the judge's and a simulated user's."""

    answer: Usage = Usage()
    judge: Usage = Usage()
    user: Usage = Usage()

    @property
    def every(self) -> Usage:
        return total((self.answer, self.judge, self.user))
