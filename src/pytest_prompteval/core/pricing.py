"""Cost of a response from a per-model price table (USD per million tokens)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_prompteval.core.modelids import canonical_model
from pytest_prompteval.core.response import Response

PRICE_FIELDS = ("input", "output", "cache_write", "cache_read")


class PriceTable:
    def __init__(self, table: Mapping[str, Mapping[str, Any]]):
        # Longest prefix first, so "claude-opus-4-5" wins over "claude-opus-4".
        self._prices = sorted(table.items(), key=lambda kv: len(kv[0]), reverse=True)

    def prices_for(self, model: str) -> Mapping[str, Any] | None:
        """The prices of ``model`` as the table spells it, else of its Anthropic API id (a
        Bedrock or Vertex AI id a project's table does not name)."""
        found = self._prefixed(model)
        return self._prefixed(canonical_model(model)) if found is None else found

    def _prefixed(self, model: str) -> Mapping[str, Any] | None:
        return next((p for prefix, p in self._prices if model.startswith(prefix)), None)

    def highest(self) -> dict[str, float]:
        """Each kind of token at the highest price any model has."""
        return {
            field: max((float(p.get(field, 0)) for _, p in self._prices), default=0.0)
            for field in PRICE_FIELDS
        }

    def cost(self, response: Response, model: str | None = None) -> float | None:
        """USD for one response, or None when the model is not in the table."""
        prices = self.prices_for(model or response.model)
        return None if prices is None else _priced(response, prices)

    def budget_cost(self, response: Response, model: str | None = None) -> float:
        """USD for one response as a budget counts it: a model not in the table at the
        highest known prices (a model a pull request names cannot spend for free)."""
        prices = self.prices_for(model or response.model)
        return _priced(response, self.highest() if prices is None else prices)


def _priced(response: Response, prices: Mapping[str, Any]) -> float:
    total = (
        response.input_tokens * float(prices.get("input", 0))
        + response.output_tokens * float(prices.get("output", 0))
        + response.cache_write_tokens * float(prices.get("cache_write", 0))
        + response.cache_read_tokens * float(prices.get("cache_read", 0))
    )
    if response.batch:
        total /= 2
    return round(total / 1_000_000, 8)
