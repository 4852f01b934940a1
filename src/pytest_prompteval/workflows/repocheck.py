"""``prompteval check-cases`` for repository cases: SWE-bench's gold validation.

Each case's tests run twice in fresh sandboxes on private copies: on the snapshot as it is
(with the case's ``test_patch``), and with its ``reference_patch`` applied too. Every
``fail_to_pass`` test must fail before and pass after, every ``pass_to_pass`` test pass both
times. A list the case omits is derived from the two runs of the whole suite: failing
before and passing after, passing both times.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from pytest_prompteval.core.cases import Case
from pytest_prompteval.core.envspec import EnvironmentSpec
from pytest_prompteval.core.errors import PromptevalError
from pytest_prompteval.core.repocases import RepoCase, is_repo_case, parse_repo_case
from pytest_prompteval.core.result import PASSING
from pytest_prompteval.core.yamlload import line_of
from pytest_prompteval.sandbox.environments import Environment
from pytest_prompteval.sandbox.install import install
from pytest_prompteval.sandbox.provider import NamespaceSandboxes, SandboxProvider
from pytest_prompteval.scoring.repo import apply_patch, sandbox_for, snapshot_of
from pytest_prompteval.scoring.testrun import run_tests


class Problem(NamedTuple):
    """What is wrong with a case, and the field it is about (whose line names it)."""

    key: str
    message: str


@dataclass
class RepoCheck:
    """One case's validation; ``problems`` is empty when it holds. ``derived`` names the
    lists the case omitted and the check derived; ``validated`` is False for a case without
    a reference patch (nothing to validate its lists against)."""

    case: str
    fail_to_pass: tuple[str, ...]
    pass_to_pass: tuple[str, ...]
    derived: tuple[str, ...] = ()
    problems: list[Problem] = field(default_factory=list)
    validated: bool = True

    def to_json(self) -> dict[str, Any]:
        return {
            "case": self.case,
            "fail_to_pass": list(self.fail_to_pass),
            "pass_to_pass": list(self.pass_to_pass),
            "derived": list(self.derived),
            "validated": self.validated,
            "problems": [p.message for p in self.problems],
        }


#: A case whose fail_to_pass is empty decides nothing.
_EMPTY = Problem("fail_to_pass", "empty: the item would pass without any change")


class _NotRun(Exception):
    """A run that decides nothing: a patch does not apply, or the test command failed."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(problem.message)
        self.problem = problem


#: A case's environment, built (or found in the cache) for its spec.
Environments = Callable[[EnvironmentSpec | None], Environment]


def _outcomes(
    sandboxes: SandboxProvider,
    case: RepoCase,
    tests: Sequence[str],
    patch: str | None,
    hidden: Sequence[str | Path],
    environment: Environment | None,
) -> dict[str, str]:
    with (
        sandboxes.copy_in(snapshot_of(case)) as copy,
        sandbox_for(sandboxes, case, copy.path, hidden, environment) as workspace,
    ):
        for key, text in (("test_patch", case.test_patch), ("reference_patch", patch)):
            if text:
                done = apply_patch(workspace, text, case.timeout)
                if done["status"] != 0:
                    output = str(done["output"])
                    said = "; ".join(line.strip() for line in output.strip().splitlines())
                    # one line, as every problem
                    raise _NotRun(Problem(key, f"{key} does not apply: {said}"))
        if case.install:
            installed = install(workspace, case.install, case.timeout)
            if installed.failed:
                raise _NotRun(Problem("environment", installed.why()))
        run = run_tests(workspace, case.test_command, tests, case.timeout)
    if run.fatal:
        when = "with" if patch else "without"
        key = "test_command" if case.test_command else "repo"
        raise _NotRun(Problem(key, f"the test command failed {when} the patch: {run.broken}"))
    return run.outcomes


def check_repo_case(
    case: RepoCase,
    hidden: Sequence[str | Path] = (),
    environment: Environment | None = None,
    sandboxes: SandboxProvider | None = None,
) -> RepoCheck:
    """The case's lists against its reference patch, run in ``sandboxes`` (this machine's
    namespaces by default)."""
    sandboxes = sandboxes or NamespaceSandboxes()
    # a case that omits fail_to_pass has them derived; so has pass_to_pass with them
    derive: tuple[str, ...] = ()
    if not case.listed:
        derive = ("fail_to_pass",) if case.pass_to_pass else ("fail_to_pass", "pass_to_pass")
    check = RepoCheck(case.id, case.fail_to_pass, case.pass_to_pass, derive)
    if not case.reference_patch:
        check.validated = False
        if derive:
            check.problems.append(
                Problem("fail_to_pass", "no fail_to_pass and no reference_patch to derive them")
            )
        elif not case.fail_to_pass:
            check.problems.append(_EMPTY)
        return check
    tests = () if derive else (*case.fail_to_pass, *case.pass_to_pass)
    try:
        before = _outcomes(sandboxes, case, tests, None, hidden, environment)
        after = _outcomes(sandboxes, case, tests, case.reference_patch, hidden, environment)
    except _NotRun as exc:
        check.problems.append(exc.problem)
        return check
    _derive(check, derive, before, after)
    if not check.fail_to_pass:
        check.problems.append(
            Problem("fail_to_pass", "the reference patch makes no failing test pass")
            if derive
            else _EMPTY
        )
    check.problems += _listed_problems(case, before, after)
    return check


def _derive(
    check: RepoCheck, derive: Sequence[str], before: dict[str, str], after: dict[str, str]
) -> None:
    """The lists the case leaves out, from the outcomes without and with the patch."""
    names = sorted(before.keys() | after.keys())
    if "fail_to_pass" in derive:
        check.fail_to_pass = tuple(
            t for t in names if before.get(t) not in PASSING and after.get(t) in PASSING
        )
    if "pass_to_pass" in derive:
        check.pass_to_pass = tuple(
            t for t in names if before.get(t) in PASSING and after.get(t) in PASSING
        )


def _shown(test: str, run: dict[str, str]) -> str:
    return f"{test} ({run.get(test, 'missing').lower()})"


def _listed_problems(
    case: RepoCase, before: dict[str, str], after: dict[str, str]
) -> list[Problem]:
    """The listed tests that do not fail without the patch and pass with it (fail_to_pass),
    or pass both times (pass_to_pass); a derived list is empty here."""
    problems = []
    for test in case.fail_to_pass:
        if before.get(test) in PASSING:
            problems.append(
                Problem(
                    "fail_to_pass",
                    f"fail_to_pass {_shown(test, before)} already passes without the patch",
                )
            )
        if after.get(test) not in PASSING:
            problems.append(
                Problem(
                    "fail_to_pass",
                    f"fail_to_pass {_shown(test, after)} does not pass with the patch",
                )
            )
    for test in case.pass_to_pass:
        if before.get(test) not in PASSING:
            problems.append(
                Problem(
                    "pass_to_pass",
                    f"pass_to_pass {_shown(test, before)} does not pass without the patch",
                )
            )
        elif after.get(test) not in PASSING:
            problems.append(
                Problem("pass_to_pass", f"pass_to_pass {_shown(test, after)} fails with the patch")
            )
    return problems


def check_repo_cases(
    cases: Sequence[Case],
    hidden: Sequence[str | Path] = (),
    environments: Environments | None = None,
) -> tuple[list[tuple[Case, RepoCheck]], list[str]]:
    """The repository cases among ``cases``, each parsed and validated in its environment
    (``environments``; None: the plugin's interpreter); (each case with its check, every
    problem as one line naming the case file and the line of the field)."""
    checks, problems = [], []
    for case in cases:
        if not is_repo_case(case):
            continue
        try:
            parsed = parse_repo_case(case)
            environment = None if environments is None else environments(parsed.environment)
        except PromptevalError as exc:
            problems.append(str(exc))
            continue
        check = check_repo_case(parsed, hidden, environment)
        checks.append((case, check))
        problems += [
            str(
                PromptevalError(
                    f"case {case.id!r}: {p.message}", case.path, line_of(case.raw, p.key)
                )
            )
            for p in check.problems
        ]
    return checks, problems
