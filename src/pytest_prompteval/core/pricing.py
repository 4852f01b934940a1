"""Cost of a response from a per-model price table (USD per million tokens)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_prompteval.core.response import Response


class PriceTable:
    def __init__(self, table: Mapping[str, Mapping[str, Any]]):
        # Longest prefix first, so "claude-opus-4-5" wins over "claude-opus-4".
        self._prices = sorted(table.items(), key=lambda kv: len(kv[0]), reverse=True)

    def prices_for(self, model: str) -> Mapping[str, Any] | None:
        return next((p for prefix, p in self._prices if model.startswith(prefix)), None)

    def cost(self, response: Response, model: str | None = None) -> float | None:
        """USD for one response, or None when the model is not in the table."""
        prices = self.prices_for(model or response.model)
        if prices is None:
            return None
        total = (
            response.input_tokens * float(prices.get("input", 0))
            + response.output_tokens * float(prices.get("output", 0))
            + response.cache_write_tokens * float(prices.get("cache_write", 0))
            + response.cache_read_tokens * float(prices.get("cache_read", 0))
        )
        if response.batch:
            total /= 2
        return round(total / 1_000_000, 8)
