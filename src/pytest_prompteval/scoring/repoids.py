"""Every test a repository case lists must exist: checked at collection, before any call.

The repository's tests are collected (``pytest --collect-only``) in a sandbox on a private
copy, in the case's environment, with its ``test_patch`` applied (the tests it adds exist
only then); the ids are written to a file by a small plugin the check brings, so neither the
repository's ini (``-q``, ``-v``, colour) nor its own plugins change how they are read. A
file that fails to collect (a test patch importing what the fix adds, as SWE-bench's often
do) keeps its listed ids unchecked; a pytest that cannot start at all is named with its own
words. A test command other than pytest's own (tox, a runner script, one setting its own
``PYTHONPATH``) is not checked. The
ids are kept per snapshot, environment and test patch in the environments' cache, so a run
collects each repository once, and xdist workers and later runs not at all. A listed id
that is not among them is one line naming the case file, the line of that entry and the
closest id collected.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import re
import secrets
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path

from pytest_prompteval.core.errors import PromptevalError
from pytest_prompteval.core.gitversions import GitRefError
from pytest_prompteval.core.repocases import RepoCase
from pytest_prompteval.core.yamlload import line_of
from pytest_prompteval.sandbox.environments import COLLECTED, Environment
from pytest_prompteval.sandbox.install import install
from pytest_prompteval.sandbox.provider import SandboxProvider
from pytest_prompteval.sandbox.workspace import open_clone
from pytest_prompteval.scoring.repo import apply_patch, snapshot_of

#: The collecting plugin, written into the sandbox's /tmp: one node id a line, each
#: collector that failed as ``!`` and its node id.
_PLUGIN = """\
import os

failed = []


def pytest_collectreport(report):
    if report.failed:
        failed.append("!" + report.nodeid)


def pytest_collection_finish(session):
    with open(os.environ["PROMPTEVAL_IDS"], "w") as out:
        out.write("".join(n + "\\n" for n in [*failed, *(i.nodeid for i in session.items)]))
"""
_PYTEST = re.compile(r"\s*(?:python[0-9.]*\s+-m\s+pytest|pytest|py\.test)(?:\s|$)")
#: How many lines of pytest's own output a failed collection quotes.
QUOTED = 6
#: The most of the ids file read (about a million ids).
MAX_IDS = 64 << 20


def _snapshot_digest(case: RepoCase) -> str:
    """What the snapshot's files are: a git commit, or a folder's names, sizes and times."""
    if case.git is not None:
        try:
            return "git:" + open_clone(case.git).commit(case.ref)
        except GitRefError as exc:
            raise PromptevalError(str(exc)) from None
    assert case.folder is not None
    digest = hashlib.sha256()
    for top, dirs, names in sorted(os.walk(case.folder)):
        dirs.sort()
        for name in sorted(names):
            path = os.path.join(top, name)
            found = os.lstat(path)
            relative = os.path.relpath(path, case.folder)
            digest.update(f"{relative}\0{found.st_size}\0{found.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def is_pytest(command: str) -> bool:
    """Whether the case's tests run through pytest itself (whose ids the check collects)."""
    return _PYTEST.match(command) is not None


def collect_ids(
    sandboxes: SandboxProvider,
    case: RepoCase,
    environment: Environment | None,
    command: str,
    hidden: Sequence[str | Path] = (),
) -> tuple[str, ...]:
    """The node ids ``command --collect-only`` finds in the snapshot, test patch applied.
    They are written into the check's own copy and read from the host: thousands of ids
    are more than a command's output keeps."""
    marker = f"IDS_{secrets.token_hex(8)}"
    written = f".prompteval-{marker}"
    script = (
        f"mkdir -p /tmp/{marker} && cat > /tmp/{marker}/prompteval_ids.py <<'{marker}'\n"
        f"{_PLUGIN}{marker}\n"
        f"export PROMPTEVAL_IDS=/repo/{written} PYTHONPATH=/tmp/{marker}"
        f"${{PYTHONPATH:+:$PYTHONPATH}}\n"
        f"cd /repo && {command} --collect-only -p prompteval_ids\n"
    )
    with (
        sandboxes.copy_in(snapshot_of(case)) as copy,
        sandboxes.repo_sandbox(copy.path, hidden=hidden, environment=environment) as workspace,
    ):
        if case.test_patch:
            done = apply_patch(workspace, case.test_patch, case.timeout)
            if done["status"] != 0:
                said = " | ".join(str(done["output"]).strip().splitlines()[-QUOTED:])
                raise PromptevalError(f"test_patch does not apply: {said}")
        if case.install:
            installed = install(workspace, case.install, case.timeout)
            if installed.failed:
                raise PromptevalError(installed.why())
        done = workspace.run(script, case.timeout)
        listed = _read_ids(copy.path / written)
    if listed is None:  # pytest did not get as far as collecting
        output = str(done["output"])
        said = " | ".join(line.strip() for line in output.strip().splitlines()[-QUOTED:])
        raise PromptevalError(
            f"collecting the repository's tests failed (exit status {done['status']}): {said}"
        )
    return tuple(line for line in listed.splitlines() if line)


def _read_ids(path: Path) -> str | None:
    """The ids file the sandbox wrote into the copy: a regular file, never through a link
    (the repository's code wrote beside it), bounded; None when there is none."""
    try:
        handle = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with open(handle, "rb") as file:
        if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
            return None
        return file.read(MAX_IDS).decode(errors="replace")


def known(test: str, collected: Iterable[str]) -> bool:
    """``test`` names a collected test, or a file, class or parametrized set of them (a
    SWE-bench id cut at a space inside its brackets included), or lies in a file or folder
    that failed to collect (``!`` and its node id)."""
    for c in collected:
        if c.startswith("!"):
            failed = c[1:]
            if test == failed or test.startswith((failed + "::", failed.rstrip("/") + "/")):
                return True
        elif (
            c == test
            or c.startswith((test + "::", test + "["))
            or ("[" in test and c.startswith(test + " "))
        ):
            return True
    return False


def entry_line(case_path: Path, key_line: int | None, test: str) -> int | None:
    """The line of ``test`` in the list whose key is at ``key_line``: the key's own for a
    list on one line, or when the entry is not found."""
    if key_line is None:
        return None
    try:
        lines = case_path.read_text(errors="replace").splitlines()
    except OSError:
        return key_line
    for number in range(key_line, len(lines) + 1):
        text = lines[number - 1]
        stripped = text.strip()
        if number > key_line and stripped and not stripped.startswith(("-", "#")):
            break  # the next field
        if test in text:
            return number
    return key_line


class Collected:
    """The collected ids of each snapshot, environment and test patch, kept in ``cache``."""

    def __init__(self, cache: Path, sandboxes: SandboxProvider):
        self.folder = cache / COLLECTED
        self.sandboxes = sandboxes

    def ids(
        self,
        case: RepoCase,
        environment: Environment | None,
        command: str,
        hidden: Sequence[str | Path] = (),
    ) -> tuple[str, ...]:
        key = hashlib.sha256(
            json.dumps(
                [
                    _snapshot_digest(case),
                    environment.key if environment else None,
                    case.test_patch,
                    command,
                ]
            ).encode()
        ).hexdigest()
        path = self.folder / f"{key}.json"
        try:
            found = json.loads(path.read_text())
            if isinstance(found, list) and all(isinstance(t, str) for t in found):
                return tuple(found)
        except (OSError, ValueError):
            pass
        ids = collect_ids(self.sandboxes, case, environment, command, hidden)
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            written = path.with_suffix(f".{os.getpid()}.tmp")
            written.write_text(json.dumps(list(ids)))
            written.replace(path)
        except OSError:
            pass  # checked again next time
        return ids


def unknown_ids(
    case: RepoCase, raw: object, path: Path, collected: Sequence[str]
) -> list[PromptevalError]:
    """One error per listed test that is not among ``collected``, at the line of its entry,
    with the closest collected id."""
    problems = []
    for key in ("fail_to_pass", "pass_to_pass"):
        for test in getattr(case, key):
            if known(test, collected):
                continue
            ids = [c for c in collected if not c.startswith("!")]
            close = difflib.get_close_matches(test, ids, n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            line = entry_line(path, line_of(raw, key), test)
            problems.append(
                PromptevalError(
                    f"case {case.id!r}: {key}: no test {test!r} in the repository{hint}",
                    path,
                    line,
                )
            )
    return problems
