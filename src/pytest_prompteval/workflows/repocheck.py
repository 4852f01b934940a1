"""``prompteval check-cases`` for repository cases: SWE-bench's gold validation.

Each case's tests run twice in fresh sandboxes on private copies: on the snapshot as it is
(with the case's ``test_patch``), and with its ``reference_patch`` applied too. Every
``fail_to_pass`` test must fail before and pass after, every ``pass_to_pass`` test pass both
times. A case without the lists gets them derived from the two runs of the whole suite:
failing before and passing after, passing both times.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_prompteval.core.repocases import RepoCase
from pytest_prompteval.sandbox.workspace import Copy, Snapshot, Workspace
from pytest_prompteval.scoring.repo import PASSING, apply_patch, run_tests


@dataclass
class RepoCheck:
    """One case's validation; ``problems`` is empty when it holds."""

    case: str
    fail_to_pass: tuple[str, ...]
    pass_to_pass: tuple[str, ...]
    derived: bool
    problems: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "case": self.case,
            "fail_to_pass": list(self.fail_to_pass),
            "pass_to_pass": list(self.pass_to_pass),
            "derived": self.derived,
            "problems": self.problems,
        }


def snapshot_of(case: RepoCase) -> Snapshot:
    if case.folder is not None:
        return Snapshot(folder=case.folder)
    return Snapshot(git=case.git, ref=case.ref)


def _outcomes(
    case: RepoCase, tests: Sequence[str], patch: str | None, hidden: Sequence[str | Path]
) -> dict[str, str]:
    with Copy(snapshot_of(case)) as copy, Workspace(copy.path, hidden=hidden) as workspace:
        for text in (case.test_patch, patch):
            if text:
                done = apply_patch(workspace, text, case.timeout)
                if done["status"] != 0:
                    raise ValueError(f"the patch does not apply: {done['output'].strip()}")
        return run_tests(workspace, case, tests)[0]


def check_repo_case(case: RepoCase, hidden: Sequence[str | Path] = ()) -> RepoCheck:
    if not case.reference_patch:
        return RepoCheck(
            case.id, case.fail_to_pass, case.pass_to_pass, False, ["no reference_patch"]
        )
    tests = (*case.fail_to_pass, *case.pass_to_pass) if case.listed else ()
    try:
        before = _outcomes(case, tests, None, hidden)
        after = _outcomes(case, tests, case.reference_patch, hidden)
    except ValueError as exc:
        return RepoCheck(case.id, case.fail_to_pass, case.pass_to_pass, False, [str(exc)])
    if not case.listed:
        names = sorted(before.keys() | after.keys())
        fail_to_pass = tuple(
            t for t in names if before.get(t) not in PASSING and after.get(t) in PASSING
        )
        pass_to_pass = tuple(
            t for t in names if before.get(t) in PASSING and after.get(t) in PASSING
        )
        check = RepoCheck(case.id, fail_to_pass, pass_to_pass, True)
        if not fail_to_pass:
            check.problems.append("the reference patch makes no failing test pass")
        return check
    check = RepoCheck(case.id, case.fail_to_pass, case.pass_to_pass, False)

    def shown(test: str, run: dict[str, str]) -> str:
        return f"{test} ({run.get(test, 'missing').lower()})"

    for test in case.fail_to_pass:
        if before.get(test) in PASSING:
            check.problems.append(
                f"fail_to_pass {shown(test, before)} already passes without the patch"
            )
        if after.get(test) not in PASSING:
            check.problems.append(f"fail_to_pass {shown(test, after)} does not pass with the patch")
    for test in case.pass_to_pass:
        if before.get(test) not in PASSING:
            check.problems.append(
                f"pass_to_pass {shown(test, before)} does not pass without the patch"
            )
        elif after.get(test) not in PASSING:
            check.problems.append(f"pass_to_pass {shown(test, after)} fails with the patch")
    return check
