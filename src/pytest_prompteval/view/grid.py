"""The grid: cases against runs (the latest of each version, or the runs named), a cell per
case and run coloured by its verdict, with k/n and the mean score; filters, a text search,
sorting, pages of rows. Everything comes from the runs' digests (``view/digest``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from pytest_prompteval.core.errors import PromptevalError
from pytest_prompteval.report.pages import ORDER
from pytest_prompteval.view.digest import KINDS, CaseCell, Digests, RunDigest
from pytest_prompteval.view.index import Index, page_numbers

ROWS_PER_PAGE = 100
MAX_COLUMNS = 12
MAX_TERM = 200
#: the grid's front end, beside the shared view.css and view.js
STATIC = ("grid.css", "grid.js")
SORTS = {
    "case": "case",
    "worst": "failures first",
    "score": "lowest score first",
    "-score": "highest score first",
    "spread": "largest score difference first",
}
FLAGS = ("failed", "errored", "flipped", "flaky")
#: outcomes that are the prompt's verdict; an error or a skip is not
DECIDED = ("passed", "failed")


@dataclass(frozen=True)
class Row:
    key: str
    file: str
    case_id: str
    cells: tuple[CaseCell | None, ...]

    @property
    def present(self) -> list[CaseCell]:
        return [c for c in self.cells if c is not None]

    @property
    def flipped(self) -> bool:
        """Passed in one run and failed in another (an error is the infrastructure's)."""
        return len({c.outcome for c in self.present if c.outcome in DECIDED}) > 1

    @property
    def worst(self) -> int:
        return min(ORDER[c.outcome] for c in self.present)

    @property
    def scores(self) -> list[float]:
        return [c.score for c in self.present if c.score is not None]


@dataclass(frozen=True)
class Query:
    """What the grid's form asks for; every value checked (a URL is anyone's to write)."""

    text: str = ""
    flags: frozenset[str] = frozenset()
    category: str = ""
    difficulty: str = ""
    marker: str = ""
    kind: str = ""
    sort: str = "case"
    page: int = 1

    @classmethod
    def of(cls, params: Mapping[str, str]) -> Query:
        page = params.get("page", "")
        kind, sort = params.get("kind", ""), params.get("sort", "case")
        return cls(
            text=params.get("q", "").strip()[:MAX_TERM],
            flags=frozenset(f for f in FLAGS if params.get(f) == "1"),
            category=params.get("category", "")[:MAX_TERM],
            difficulty=params.get("difficulty", "")[:MAX_TERM],
            marker=params.get("marker", "").strip()[:MAX_TERM],
            kind=kind if kind in KINDS else "",
            sort=sort if sort in SORTS else "case",
            page=max(1, int(page)) if page.isdigit() and len(page) < 9 else 1,
        )

    def keeps(self, row: Row) -> bool:
        present = row.present
        flags = self.flags
        return (
            ("failed" not in flags or any(c.outcome == "failed" for c in present))
            and ("errored" not in flags or any(c.outcome == "error" for c in present))
            and ("flipped" not in flags or row.flipped)
            and ("flaky" not in flags or any(c.flaky for c in present))
            and (not self.category or any(c.category == self.category for c in present))
            and (not self.difficulty or any(c.difficulty == self.difficulty for c in present))
            and (not self.marker or any(self.marker in c.markers for c in present))
            and (not self.kind or any(c.kind == self.kind for c in present))
        )


def _sorted(rows: list[Row], sort: str) -> list[Row]:
    if sort == "worst":
        return sorted(rows, key=lambda r: r.worst)
    if sort == "score":
        return sorted(rows, key=lambda r: min(r.scores, default=2.0))
    if sort == "-score":
        return sorted(rows, key=lambda r: -max(r.scores, default=-1.0))
    if sort == "spread":
        return sorted(rows, key=lambda r: -(max(r.scores) - min(r.scores)) if r.scores else 0)
    return rows  # already in case order


def columns(index: Index, digests: Digests, names: Sequence[str]) -> list[RunDigest]:
    """The runs named, or the latest run of each version (at most ``MAX_COLUMNS``)."""
    if not names:
        latest: dict[str, str] = {}
        for name in index.names():  # newest first
            latest.setdefault(Index.version_of(name), name)
        names = [latest[v] for v in sorted(latest)][:MAX_COLUMNS]
    if len(names) > MAX_COLUMNS:
        raise PromptevalError(f"at most {MAX_COLUMNS} runs side by side")
    return [digests.get(name) for name in dict.fromkeys(names)]


def rows_of(runs: Sequence[RunDigest]) -> list[Row]:
    """A row per case any of the runs has, in case order."""
    cells: dict[str, list[CaseCell | None]] = {}
    for column, digest in enumerate(runs):
        for cell in digest.cases:
            row = cells.get(cell.key)
            if row is None:
                row = cells[cell.key] = [None] * len(runs)
            row[column] = cell
    rows = []
    for key in sorted(cells):
        first = next(c for c in cells[key] if c is not None)
        rows.append(Row(key, first.file, first.case_id, tuple(cells[key])))
    return rows


def grid(index: Index, digests: Digests, names: Sequence[str], query: Query) -> dict[str, Any]:
    """What grid.html shows for ``names`` (empty: the latest run of each version)."""
    runs = columns(index, digests, names)
    rows = rows_of(runs)
    total = len(rows)
    if query.text:
        found = {runs[i].cases[p].key for i in range(len(runs)) for p in runs[i].search(query.text)}
        rows = [row for row in rows if row.key in found]
    rows = _sorted([row for row in rows if query.keeps(row)], query.sort)
    count = max(1, -(-len(rows) // ROWS_PER_PAGE))
    page = min(query.page, count)
    categories = sorted({c for run in runs for c in run.categories})
    difficulties = sorted({d for run in runs for d in run.difficulties})
    return {
        "runs": runs, "rows": rows[(page - 1) * ROWS_PER_PAGE : page * ROWS_PER_PAGE],
        "first": (page - 1) * ROWS_PER_PAGE, "shown": len(rows), "total": total,
        "query": query, "page": page, "pages": page_numbers(page, count), "last": count,
        "sorts": SORTS, "kinds": KINDS, "categories": categories, "difficulties": difficulties,
        "link": lambda number: page_link(names, query, number),
    }  # fmt: skip


def page_link(names: Sequence[str], query: Query, page: int) -> str:
    """The grid's URL for page ``page`` of the same runs, filters and search."""
    params = [("run", n) for n in names]
    params += [(k, v) for k, v in (("q", query.text), ("category", query.category),
               ("difficulty", query.difficulty), ("marker", query.marker), ("kind", query.kind))
               if v]  # fmt: skip
    params += [(f, "1") for f in FLAGS if f in query.flags]
    params += [("sort", query.sort), ("page", str(page))]
    return "/grid?" + urlencode(params)
