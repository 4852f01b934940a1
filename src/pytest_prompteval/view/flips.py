"""Two runs side by side, the cases that flipped first: those that passed in the first run
and not in the second (newly failing), then the reverse (newly passing), each with why its
failing side failed and a link to the two answers' diff. The statistics of the two runs
(paired tests, the gate's verdict) stay on the comparison page; this one is what to read."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pytest_prompteval.view.digest import CaseCell, Digests
from pytest_prompteval.view.grid import DECIDED, Row, rows_of
from pytest_prompteval.view.index import page_numbers

FLIPS_PER_PAGE = 100


@dataclass(frozen=True)
class Flip:
    """One case that flipped from ``a`` to ``b``: ``worse`` when it newly fails."""

    worse: bool
    key: str
    a: CaseCell
    b: CaseCell

    @property
    def failing(self) -> CaseCell:
        return self.b if self.worse else self.a

    @property
    def reason(self) -> str:
        return self.failing.reason or self.failing.min_pass_text

    @property
    def diff_item(self) -> int:
        """The first run's sample beside the failing side's shown one (the diff reads first
        run to second); its first sample when it has not that one."""
        failing = self.failing
        sample = failing.sample_of(failing.shown)
        number = self.a.item_of(sample)
        return self.a.items[0][1] if number is None else number


def flips_of(rows: list[Row]) -> tuple[list[Flip], list[Flip], dict[str, int]]:
    """Newly failing and newly passing cases, and counts of the rest (a case that errored
    or was skipped in either run did not flip: the infrastructure failed, not the prompt)."""
    worse, better = [], []
    counts = {"still failing": 0, "still passing": 0, "errored or skipped": 0, "in one run": 0}
    for row in rows:
        a, b = row.cells
        if a is None or b is None:
            counts["in one run"] += 1
            continue
        if a.outcome not in DECIDED or b.outcome not in DECIDED:
            counts["errored or skipped"] += 1
        elif a.passing and not b.passing:
            worse.append(Flip(True, row.key, a, b))
        elif b.passing and not a.passing:
            better.append(Flip(False, row.key, a, b))
        else:
            counts["still passing" if a.passing else "still failing"] += 1
    return worse, better, counts


def flips(digests: Digests, a_name: str, b_name: str, page: int) -> dict[str, Any]:
    """What flips.html shows for the runs ``a_name`` then ``b_name``."""
    a, b = digests.get(a_name), digests.get(b_name)
    worse, better, counts = flips_of(rows_of([a, b]))
    flipped = worse + better
    count = max(1, -(-len(flipped) // FLIPS_PER_PAGE))
    page = min(page, count)
    return {
        "a": a, "b": b, "worse": len(worse), "better": len(better), "counts": counts,
        "flips": flipped[(page - 1) * FLIPS_PER_PAGE : page * FLIPS_PER_PAGE],
        "page": page, "pages": page_numbers(page, count), "last": count,
    }  # fmt: skip
