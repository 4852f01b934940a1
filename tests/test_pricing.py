from __future__ import annotations

import pytest

from pytest_prompteval.core.pricing import PriceTable
from pytest_prompteval.core.response import Response
from pytest_prompteval.core.tables import load_table


def test_longest_prefix_wins_and_all_token_kinds_count() -> None:
    table = PriceTable(load_table("prices"))
    response = Response(
        text="",
        model="claude-opus-4-5-20251101",
        input_tokens=1_000_000,
        output_tokens=100_000,
        cache_read_tokens=1_000_000,
        cache_write_tokens=0,
    )
    assert table.cost(response) == pytest.approx(5.0 + 2.5 + 0.5)
    assert table.cost(Response(text="", model="claude-opus-4-1", input_tokens=1000)) == 0.015
    assert table.cost(Response(text="", model="some-local-model", input_tokens=1)) is None


def test_project_file_overrides_and_extends(tmp_path) -> None:  # type: ignore[no-untyped-def]
    extra = tmp_path / "prices.yaml"
    extra.write_text("my-model: {input: 1.0, output: 2.0}\nclaude-haiku-4-5: {input: 9.0}\n")
    table = PriceTable(load_table("prices", extra))
    assert table.cost(Response(text="", model="my-model", output_tokens=500_000)) == 1.0
    haiku = table.prices_for("claude-haiku-4-5")
    assert haiku == {"input": 9.0, "output": 5.0, "cache_write": 1.25, "cache_read": 0.1}
