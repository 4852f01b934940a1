"""The verdict on a repository task: the item's tests, in a fresh sandbox, on the copy the
agent left.

The agent's sandbox is gone by then (nothing it started still runs); a new one shows the
copy at ``/repo`` and the snapshot read-only at ``/base``. There the diff the agent made is
taken, the case's hidden ``test_patch`` applied (SWE-bench's test files win over the
agent's), and the tests run. The item passes when every ``fail_to_pass`` test passes and
every ``pass_to_pass`` test still does; the result keeps the diff, each test's outcome and
the seed's partial-correctness view (share of ``fail_to_pass`` fixed, of ``pass_to_pass``
kept).
"""

from __future__ import annotations

import secrets
import shlex
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_prompteval.core.repocases import RepoCase
from pytest_prompteval.core.result import RepoResult
from pytest_prompteval.sandbox.environments import Environment
from pytest_prompteval.sandbox.install import install
from pytest_prompteval.sandbox.workspace import Copy, Snapshot, Workspace

#: pytest on the listed ids, its summary naming every test's outcome (``-rA``).
DEFAULT_TEST_COMMAND = "python -m pytest -q -p no:cacheprovider"
#: Outcomes pytest's ``-rA`` summary names; the first two count as passing (as SWE-bench).
PASSING = ("PASSED", "XFAIL")
OUTCOMES = (*PASSING, "FAILED", "ERROR", "SKIPPED", "XPASS")
#: How much of the diff a failure message shows.
MESSAGE_DIFF = 4000


@dataclass(frozen=True)
class RepoVerdict:
    """The verdict and what it rests on; ``outcomes`` maps each listed test to its outcome
    (``missing`` when the run did not name it)."""

    outcomes: Mapping[str, str]
    fail_to_pass: tuple[str, ...]
    pass_to_pass: tuple[str, ...]
    diff: str
    output: str = field(repr=False, default="")

    @classmethod
    def of(cls, result: RepoResult) -> RepoVerdict:
        """The verdict a result keeps (for its failure message, wherever it is read)."""
        return cls(
            result.outcomes, tuple(result.fail_to_pass), tuple(result.pass_to_pass), result.diff
        )

    @property
    def listed(self) -> tuple[str, ...]:
        return (*self.fail_to_pass, *self.pass_to_pass)

    def _passing(self, tests: Sequence[str]) -> list[str]:
        return [t for t in tests if self.outcomes.get(t) in PASSING]

    @property
    def passed(self) -> bool:
        return len(self._passing(self.listed)) == len(self.listed)

    @property
    def fixed(self) -> float:
        """Share of fail_to_pass tests that pass (1.0 when there are none)."""
        tests = self.fail_to_pass
        return len(self._passing(tests)) / len(tests) if tests else 1.0

    @property
    def kept(self) -> float:
        """Share of pass_to_pass tests that still pass (1.0 when there are none)."""
        tests = self.pass_to_pass
        return len(self._passing(tests)) / len(tests) if tests else 1.0

    def failing(self, tests: Iterable[str]) -> list[str]:
        return [
            f"{t} ({self.outcomes.get(t, 'missing').lower()})"
            for t in tests
            if self.outcomes.get(t) not in PASSING
        ]

    def message(self) -> str:
        """Why the item failed: the tests by list, then the agent's diff."""
        lines = []
        if broken := self.failing(self.fail_to_pass):
            lines.append("fail_to_pass not fixed: " + ", ".join(broken))
        if broken := self.failing(self.pass_to_pass):
            lines.append("pass_to_pass broken: " + ", ".join(broken))
        shown = self.diff[:MESSAGE_DIFF] + (
            "\n[diff truncated]" if len(self.diff) > MESSAGE_DIFF else ""
        )
        lines.append("the agent's diff:\n" + (shown or "(no change)"))
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {
            "resolved": self.passed,
            "outcomes": dict(self.outcomes),
            "fail_to_pass_fixed": self.fixed,
            "pass_to_pass_kept": self.kept,
            "diff": self.diff,
        }


def snapshot_of(case: RepoCase) -> Snapshot:
    if case.folder is not None:
        return Snapshot(folder=case.folder)
    return Snapshot(git=case.git, ref=case.ref)


def outcomes(output: str, tests: Sequence[str]) -> dict[str, str]:
    """Each test's outcome as pytest's ``-rA`` summary names it; with no ``tests``, every
    test the summary names. Plain string matching: the output is the repository's."""
    found: dict[str, str] = {}
    for line in output.splitlines():
        word, _, rest = line.partition(" ")
        if word not in OUTCOMES:
            continue
        if tests:
            for test in tests:
                if rest == test or rest.startswith(test + " - "):
                    found[test] = word
        else:
            found[rest.split(" - ", 1)[0]] = word
    return found


def apply_patch(workspace: Workspace, patch: str, timeout: float) -> dict[str, Any]:
    """``git apply`` of ``patch`` on /repo, in the sandbox (the copy is the agent's: no git
    of ours runs on it outside)."""
    end = f"PATCH_{secrets.token_hex(8)}"
    script = f"cd /repo && git apply --whitespace=nowarn - <<'{end}'\n{patch}\n{end}\n"
    return workspace.run(script, timeout)


def run_tests(
    workspace: Workspace, case: RepoCase, tests: Sequence[str]
) -> tuple[dict[str, str], str]:
    """The tests' outcomes (all the command runs, when ``tests`` is empty) and the output."""
    command = case.test_command or DEFAULT_TEST_COMMAND
    script = f"cd /repo && {command} -rA {' '.join(shlex.quote(t) for t in tests)}"
    done = workspace.run(script, case.timeout)
    return outcomes(str(done["output"]), tests), str(done["output"])


def verdict(
    case: RepoCase,
    copy: Copy,
    hidden: Sequence[str | Path] = (),
    environment: Environment | None = None,
    products: Collection[str] = (),
) -> RepoVerdict:
    """The item's verdict on ``copy`` as the agent left it, in a fresh sandbox; the
    install's ``products`` are not the agent's diff."""
    with Workspace(copy.path, copy.base(), hidden, environment) as workspace:
        diff = workspace.diff(exclude=products)
        if case.test_patch:
            apply_patch(workspace, case.test_patch, case.timeout)
        if case.install:  # built again: the agent's changes to built code count
            install(workspace, case.install, case.timeout)
        tests = (*case.fail_to_pass, *case.pass_to_pass)
        found, output = run_tests(workspace, case, tests)
    return RepoVerdict(found, case.fail_to_pass, case.pass_to_pass, diff, output)
