from __future__ import annotations

from pathlib import Path

import pytest

from pytest_prompteval.core.errors import PromptevalError
from pytest_prompteval.core.pricing import PriceTable
from pytest_prompteval.core.response import Response
from pytest_prompteval.core.tables import load_table
from pytest_prompteval.providers.budget import Budget, BudgetSpent


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


def test_project_file_overrides_and_extends(tmp_path: Path) -> None:
    extra = tmp_path / "prices.yaml"
    extra.write_text("my-model: {input: 1.0, output: 2.0}\nclaude-haiku-4-5: {input: 9.0}\n")
    table = PriceTable(load_table("prices", extra, allow_lower_prices=True))
    assert table.cost(Response(text="", model="my-model", output_tokens=500_000)) == 1.0
    haiku = table.prices_for("claude-haiku-4-5")
    assert haiku == {"input": 9.0, "output": 5.0, "cache_write": 1.25, "cache_read": 0.1}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("claude-haiku-4-5: {output: 0.5}\n", "1: claude-haiku-4-5.output: 0.5 is below the "
         "shipped price, 5"),
        ("claude-haiku-4-5-2026:\n  input: 1.0\n", "1: claude-haiku-4-5-2026.output: 0 is below "
         "the shipped price, 5"),
        ("claude: {input: 20, output: 80, cache_write: 20, cache_read: 0}\n",
         "1: claude.cache_read: 0 is below the highest known price, 1.5"),
    ],
    ids=["known", "longer-prefix", "unknown"],
)  # fmt: skip
def test_a_project_price_file_may_not_price_below_the_shipped_table(
    tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "prices.yaml"
    path.write_text(text)
    with pytest.raises(PromptevalError) as caught:
        load_table("prices", path)
    assert str(caught.value) == (
        f"{path}:{message}; give --prompteval-allow-lower-prices on the command line to use it"
    )
    assert load_table("prices", path, allow_lower_prices=True)  # the user's typed choice


def test_the_budget_counts_an_unknown_model_at_the_highest_known_price(tmp_path: Path) -> None:
    table = PriceTable(load_table("prices"))
    budget = Budget(0.01, tmp_path / "ledger", table)
    unknown = Response(text="", model="my-own-model", input_tokens=1000)
    assert table.cost(unknown) is None  # reported as unpriced...
    budget.charge(unknown, "my-own-model")  # ...but not free: $15 per million input tokens
    with pytest.raises(BudgetSpent, match=r"cost budget spent: \$0.0150 of"):
        budget.check()
