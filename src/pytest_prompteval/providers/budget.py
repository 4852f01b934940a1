"""``--prompteval-max-cost``: stop starting new calls once the run has spent its budget.

What is spent lives in a small file under a lock, so xdist workers share one budget. Only
live calls count; replays are free. A call already in flight finishes, so a run can go over
the budget by at most the calls in flight when it ran out.
"""

from __future__ import annotations

import os
from pathlib import Path

from pytest_prompteval.core.errors import PromptevalError
from pytest_prompteval.core.filelock import lock_exclusive
from pytest_prompteval.core.pricing import PriceTable
from pytest_prompteval.core.response import Response


class BudgetSpent(PromptevalError):
    kind = "budget"


class Budget:
    def __init__(self, limit: float, ledger: Path, prices: PriceTable):
        self.limit = limit
        self.ledger = ledger
        self.prices = prices
        ledger.touch()

    def _update(self, add: float) -> float:
        with self.ledger.open("r+") as handle:
            lock_exclusive(handle, "--prompteval-max-cost")
            text = handle.read().strip()
            spent = float(text) if text else 0.0
            if add:
                spent += add
                handle.seek(0)
                handle.truncate()
                handle.write(repr(spent))
                handle.flush()
                os.fsync(handle.fileno())
            return spent

    def check(self) -> None:
        spent = self._update(0.0)
        if spent >= self.limit:
            raise BudgetSpent(
                f"cost budget spent: ${spent:.4f} of --prompteval-max-cost ${self.limit:g}; "
                "no new call started"
            )

    def charge(self, response: Response, model: str) -> None:
        self._update(self.prices.budget_cost(response, model))
