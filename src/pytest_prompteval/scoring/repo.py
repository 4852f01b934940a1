"""The verdict on a repository task: the item's tests, in a fresh sandbox, on the copy the
agent left.

The agent's sandbox is gone by then (nothing it started still runs); a new one shows the
copy at ``/repo`` and the snapshot read-only at ``/base``. There the diff the agent made is
taken; then the test files (every file the ``test_patch`` or a listed test names) and the
test infrastructure (``sandbox/restore.py``: conftest.py, pytest's ini sections, modules
shadowing the runner...) are restored from the snapshot, the case's hidden ``test_patch``
applied (a patch that does not apply is an error of the item), and the tests run. The item
passes when every ``fail_to_pass`` test passes and every ``pass_to_pass`` test still does;
the result keeps the diff, each test's outcome, the test infrastructure the agent changed
and the seed's partial-correctness view (share of ``fail_to_pass`` fixed, of
``pass_to_pass`` kept).
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_prompteval.core.errors import VerdictError
from pytest_prompteval.core.repocases import RepoCase
from pytest_prompteval.core.result import PASSING, RepoResult
from pytest_prompteval.sandbox.environments import Environment
from pytest_prompteval.sandbox.install import install
from pytest_prompteval.sandbox.provider import NamespaceSandboxes, RepoSandbox, SandboxProvider
from pytest_prompteval.sandbox.restore import MAX_ENTRIES, CopyRefused
from pytest_prompteval.sandbox.workspace import Copy, Snapshot
from pytest_prompteval.scoring.testrun import TestRun, run_tests

#: How ``broken`` starts when the tests were not run at all (the agent fails).
NOT_RUN = "the tests were not run: "
#: How much of the diff a failure message shows.
MESSAGE_DIFF = 4000
#: How many failing tests of each list a failure message names.
MESSAGE_TESTS = 10


@dataclass(frozen=True)
class RepoVerdict:
    """The verdict and what it rests on; ``outcomes`` maps each listed test to its outcome
    (``missing`` when the run did not name it, ``UNMATCHED`` when no test has its id);
    ``broken`` says why the test command did not run the tests, when it did not."""

    outcomes: Mapping[str, str]
    fail_to_pass: tuple[str, ...]
    pass_to_pass: tuple[str, ...]
    diff: str
    output: str = field(repr=False, default="")
    #: the test infrastructure the agent changed, restored for the verdict
    restored: tuple[str, ...] = ()
    broken: str | None = None
    #: each file-state check (``file_key``) with its outcome and reason, on the copy as
    #: the agent left it
    files: Mapping[str, tuple[bool, str]] = field(default_factory=dict)

    @classmethod
    def of(cls, result: RepoResult) -> RepoVerdict:
        """The verdict a result keeps (for its failure message, wherever it is read)."""
        return cls(
            result.outcomes,
            tuple(result.fail_to_pass),
            tuple(result.pass_to_pass),
            result.diff,
            restored=tuple(result.restored),
            broken=result.broken,
        )

    @property
    def listed(self) -> tuple[str, ...]:
        return (*self.fail_to_pass, *self.pass_to_pass)

    def _passing(self, tests: Sequence[str]) -> list[str]:
        return [t for t in tests if self.outcomes.get(t) in PASSING]

    @property
    def passed(self) -> bool:
        ran = not (self.broken or "").startswith(NOT_RUN)
        return ran and len(self._passing(self.listed)) == len(self.listed)

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

    def failing(self, tests: Iterable[str]) -> str:
        """The tests of a list that do not pass, with their outcomes (the first few)."""
        found = [
            f"{t} ({self.outcomes.get(t, 'missing').lower()})"
            for t in tests
            if self.outcomes.get(t) not in PASSING
        ]
        more = len(found) - MESSAGE_TESTS
        return ", ".join(found[:MESSAGE_TESTS]) + (f" and {more} more" if more > 0 else "")

    def message(self) -> str:
        """Why the item failed: the test command's failure, the tests by list, the test
        infrastructure restored, then the agent's diff."""
        lines = []
        if self.broken:
            ran = not self.broken.startswith(NOT_RUN)
            lines.append(f"the test command failed: {self.broken}" if ran else self.broken)
        if broken := self.failing(self.fail_to_pass):
            lines.append("fail_to_pass not fixed: " + broken)
        if broken := self.failing(self.pass_to_pass):
            lines.append("pass_to_pass broken: " + broken)
        if self.restored:
            changed = ", ".join(self.restored)
            lines.append(
                f"test infrastructure changed by the agent: {changed} (restored for the verdict)"
            )
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
            "restored": list(self.restored),
            "broken": self.broken,
        }


def file_key(job: Mapping[str, str]) -> str:
    return json.dumps(job, sort_keys=True)


def snapshot_of(case: RepoCase) -> Snapshot:
    if case.folder is not None:
        return Snapshot(folder=case.folder)
    return Snapshot(git=case.git, ref=case.ref)


def apply_patch(workspace: RepoSandbox, patch: str, timeout: float) -> dict[str, Any]:
    """``git apply`` of ``patch`` on /repo, in the sandbox, outside any repository: no
    config, attribute filter or hook of the agent's ``.git`` runs (nor its index counts)."""
    end = f"PATCH_{secrets.token_hex(8)}"
    git = "GIT_DIR=/dev/null GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null git"
    script = f"cd /repo && {git} apply --whitespace=nowarn - <<'{end}'\n{patch}\n{end}\n"
    return workspace.run(script, timeout)


#: Folders that hold tests alone: restored whole (their helpers and data decide too).
TEST_FOLDERS = ("tests", "test", "testing")


def files_of_tests(tests: Iterable[str]) -> tuple[list[str], list[str]]:
    """What the listed tests (``tests/test_x.py::test_y``) are read from: the test folder
    holding each (the nearest named ``tests``, ``test`` or ``testing``: in
    ``numpy/testing/tests`` the last, ``numpy/testing`` being code), its file and the
    ``__init__.py`` of its folders; and those folders (pytest puts a test's folder first on
    ``sys.path``)."""
    files: dict[str, None] = {}
    folders: dict[str, None] = {}
    for test in tests:
        path = test.split("::", 1)[0]
        parts = path.split("/")
        if not path.endswith(".py") or path.startswith("/") or {"", ".", "..", ".git"} & {*parts}:
            continue  # not a file of the repository (a django-style id, a hostile one)
        holder = [d for d in range(1, len(parts)) if parts[d - 1] in TEST_FOLDERS]
        if holder:
            files.setdefault("/".join(parts[: holder[-1]]), None)
        files[path] = None
        for depth in range(1, len(parts)):
            folders["/".join(parts[:depth])] = None
            files["/".join([*parts[:depth], "__init__.py"])] = None
    return list(files), list(folders)


def _patched(workspace: RepoSandbox, case: RepoCase) -> None:
    """The case's test patch on /repo (one that does not apply is the case's error), then
    its install step, built again: the agent's changes to built code count."""
    if case.test_patch:
        done = apply_patch(workspace, case.test_patch, case.timeout)
        if done["status"] != 0:
            said = "; ".join(line.strip() for line in str(done["output"]).splitlines())
            raise VerdictError(
                f"case {case.id!r}: test_patch does not apply to the snapshot's test files "
                f"(the case is wrong, not the agent): {said}"
            )
    if case.install:
        install(workspace, case.install, case.timeout)


def sandbox_for(
    sandboxes: SandboxProvider,
    case: RepoCase,
    path: Path,
    hidden: Sequence[str | Path],
    environment: Environment | None,
    base: Path | None = None,
) -> RepoSandbox:
    """The case's sandbox over ``path``: its memory, its environment."""
    return sandboxes.repo_sandbox(path, base, hidden, case.memory_mb, environment)


def verdict_sandbox(
    sandboxes: SandboxProvider,
    case: RepoCase,
    copy: Copy,
    hidden: Sequence[str | Path] = (),
    environment: Environment | None = None,
) -> RepoSandbox:
    """The verdict's fresh sandbox over ``copy``, the snapshot shown for the diff."""
    return sandbox_for(sandboxes, case, copy.path, hidden, environment, copy.base())


def _control(
    sandboxes: SandboxProvider,
    case: RepoCase,
    tests: Sequence[str],
    hidden: Sequence[str | Path],
    environment: Environment | None,
) -> None:
    """The tests on the snapshot with the case's own fix (its test and reference patches):
    when the test command fails there too, or a listed id matches no test there either,
    the case or its environment is broken, and the item errs instead of failing the agent.
    Without a reference patch nothing tells the two apart: the agent's run decides."""
    if not case.reference_patch:
        return
    with (
        sandboxes.copy_in(snapshot_of(case)) as pristine,
        sandbox_for(sandboxes, case, pristine.path, hidden, environment) as space,
    ):
        _patched(space, case)
        if apply_patch(space, case.reference_patch, case.timeout)["status"] != 0:
            return  # check-cases names it; the agent's run decides
        run = run_tests(space, case.test_command, tests, case.timeout)
    if run.fatal:
        raise VerdictError(
            f"case {case.id!r}: the test command fails with the reference patch too (the "
            f"case or its environment is broken, not the agent): {run.broken}"
        )
    if run.unmatched:
        more = f" and {len(run.unmatched) - 5} more" if len(run.unmatched) > 5 else ""
        raise VerdictError(
            f"case {case.id!r}: no test of the snapshot has the listed id "
            f"{', '.join(run.unmatched[:5])}{more} (the case is wrong, not the agent)"
        )


def verdict(
    case: RepoCase,
    copy: Copy,
    hidden: Sequence[str | Path] = (),
    environment: Environment | None = None,
    products: Collection[str] = (),
    files: Sequence[Mapping[str, str]] = (),
    limit: int = MAX_ENTRIES,
    sandboxes: SandboxProvider | None = None,
    started: RepoSandbox | None = None,
) -> RepoVerdict:
    """The item's verdict on ``copy`` as the agent left it, in a fresh sandbox: the diff (the
    install's ``products`` are not the agent's) and the file-state checks (``files``:
    ``file_job``s) on the copy as the agent left it, then the tests with the test files and
    infrastructure restored. A run whose test command failed, or that leaves a listed id
    unmatched, is run again on the snapshot with the case's own fix to tell the case's fault
    from the agent's. A copy of more than ``limit`` entries, or with a path too long to
    reach, fails, its tests not run (restoring them would walk it). ``sandboxes``: where
    it runs (this machine's namespaces by default); ``started``: its sandbox, made early
    (``verdict_sandbox``), else one is made now."""
    sandboxes = sandboxes or NamespaceSandboxes()
    if started is None:
        started = verdict_sandbox(sandboxes, case, copy, hidden, environment)
    with started as workspace:
        tests = (*case.fail_to_pass, *case.pass_to_pass)
        listed, folders = files_of_tests(tests)
        named = list(dict.fromkeys([*case.test_files, *listed]))
        diff = workspace.diff(exclude=products)
        checked = workspace.check_files(files, case.timeout) if files else []
        states = {
            file_key(job): (bool(c["passed"]), str(c["reason"]))
            for job, c in zip(files, checked, strict=True)
        }
        try:
            restored = workspace.restore(named, folders, case.agent_may_change, case.timeout, limit)
        except CopyRefused as exc:
            broken = f"{NOT_RUN}{exc}"
            return RepoVerdict(
                {}, case.fail_to_pass, case.pass_to_pass, diff, "", (), broken, states
            )
        _patched(workspace, case)
        run: TestRun = run_tests(workspace, case.test_command, tests, case.timeout)
    if run.fatal or run.unmatched:
        _control(sandboxes, case, tests, hidden, environment)
    return RepoVerdict(
        run.outcomes,
        case.fail_to_pass,
        case.pass_to_pass,
        diff,
        run.output,
        tuple(restored),
        run.broken,
        states,
    )
