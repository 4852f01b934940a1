"""A repository item's verdict as the pages show it: resolved or not, each listed test
with its outcome, the agent's diff file by file, and the test run's output when the item
was not resolved."""

from __future__ import annotations

from dataclasses import dataclass

from pytest_prompteval.core.result import RepoResult
from pytest_prompteval.report import diffview


@dataclass(frozen=True)
class TestRow:
    __test__ = False  # not a pytest class

    test: str
    #: fail_to_pass | pass_to_pass
    listed: str
    outcome: str
    passes: bool


@dataclass(frozen=True)
class RepoView:
    resolved: bool
    tests: tuple[TestRow, ...]
    fixed: float
    kept: float
    files: tuple[diffview.FileDiff, ...]
    restored: tuple[str, ...]
    broken: str | None
    output: str | None

    @property
    def added(self) -> int:
        return sum(f.added for f in self.files)

    @property
    def removed(self) -> int:
        return sum(f.removed for f in self.files)


def repo_view(repo: RepoResult) -> RepoView:
    """Tests not passing first (the ones that decided), each list in its order."""
    rows = [
        TestRow(test, listed, repo.outcomes.get(test, "missing"), repo.passes(test))
        for listed, tests in (
            ("fail_to_pass", repo.fail_to_pass),
            ("pass_to_pass", repo.pass_to_pass),
        )
        for test in tests
    ]
    rows.sort(key=lambda row: row.passes)
    return RepoView(
        repo.resolved,
        tuple(rows),
        repo.fail_to_pass_fixed,
        repo.pass_to_pass_kept,
        tuple(diffview.parse(repo.diff)),
        tuple(repo.restored),
        repo.broken,
        repo.output if not repo.resolved else None,
    )
