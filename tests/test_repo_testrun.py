"""The verdict's test run reads each listed test's outcome from the reporter's file, not
from the terminal: thousands of ids, forced colour, SWE-bench's cut ids; a test command
that fails says so once, and is an error of the item only when it fails with the case's
own fix too. /repo is a git repository the agent can commit to without hiding its diff."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pytest_prompteval.core.errors import VerdictError
from pytest_prompteval.core.repocases import RepoCase
from pytest_prompteval.interaction.repository import AS_REPOSITORY
from pytest_prompteval.sandbox.workspace import Copy, Workspace
from pytest_prompteval.scoring.repo import RepoVerdict, snapshot_of, verdict
from pytest_prompteval.scoring.testrun import _PLUGIN, TAIL, _show_tail, read_report, script
from pytest_prompteval.workflows.repocheck import check_repo_case

from .test_repo_verdict import CODE, FIX, FIXED, after, case_of, write

MANY = 2500
# ids of about 80 characters: 2,500 of them make 200 KB, past one shell argument's 128 KiB,
# and a -rA summary past the 100,000 bytes of output the sandbox keeps
MANY_TESTS = f"""\
import pytest

from slug import slugify


@pytest.mark.parametrize("n", range({MANY}), ids=lambda n: f"a_rather_long_parameter_{{n:04d}}")
def test_one_of_many_listed_tests(n):
    assert slugify("A b") == "a-b"


@pytest.mark.parametrize("text", ["a  b"], ids=["two spaces"])
def test_spaced(text):
    assert slugify(text) == "a-b"
"""
MANY_IDS = [
    f"tests/test_many.py::test_one_of_many_listed_tests[a_rather_long_parameter_{n:04d}]"
    for n in range(MANY)
]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    write(tmp_path / "slugify" / "slug.py", CODE)
    write(tmp_path / "slugify" / "tests" / "test_many.py", MANY_TESTS)
    old, new = CODE.splitlines()[1], FIXED.splitlines()[1]
    fix = f"--- a/slug.py\n+++ b/slug.py\n@@ -2 +2 @@\n-{old}\n+{new}\n"
    write(tmp_path / "fix.diff", fix)
    write(tmp_path / "tests.diff", fix)  # the case file names one; these cases have none
    return tmp_path


def many(project: Path, **changes: object) -> RepoCase:
    """The case over the many tests: SWE-bench's cut id of the spaced test fails before the
    fix, the 2,500 others pass."""
    case = case_of(project)
    fields: dict[str, Any] = {
        "test_patch": None,
        "test_files": (),
        "reference_patch": None,
        "fail_to_pass": ("tests/test_many.py::test_spaced[two",),
        "pass_to_pass": tuple(MANY_IDS),
        **changes,
    }
    return dataclasses.replace(case, **fields)


def test_2500_listed_ids_and_forced_colour_are_read_from_the_report(project: Path) -> None:
    # the repository's ini forces colour and -q, and no -rA is asked
    write(project / "slugify" / "pytest.ini", "[pytest]\naddopts = --color=yes -q\n")
    case = many(project)
    fixed = after(case, FIX)
    assert fixed.passed, fixed.message()[:2000]
    assert len(fixed.outcomes) == MANY + 1
    assert fixed.outcomes["tests/test_many.py::test_spaced[two"] == "PASSED"
    before = after(case)
    assert not before.passed and before.kept == 1.0
    assert before.outcomes["tests/test_many.py::test_spaced[two"] == "FAILED"


def test_an_id_no_test_has_is_named(project: Path) -> None:
    case = many(project, pass_to_pass=("tests/test_many.py::test_no_such",))
    found = after(case, FIX)
    assert found.outcomes["tests/test_many.py::test_no_such"] == "UNMATCHED"
    assert "pass_to_pass broken: tests/test_many.py::test_no_such (unmatched)" in found.message()
    # with the case's own fix to tell: the case is wrong, not the agent
    with pytest.raises(VerdictError, match=r"no test of the snapshot has the listed id "):
        after(dataclasses.replace(case, reference_patch=(project / "fix.diff").read_text()), FIX)


def test_a_failing_test_command_is_quoted_once_and_an_error_of_the_case(project: Path) -> None:
    case = many(project, test_command="python -m pytest -p no:cacheprovider --cov=slug")
    found = after(case, FIX)  # without a reference patch: nothing tells whose fault it is
    message = found.message()
    assert "the test command failed: exit status 4 before any test ran; the end of" in message
    assert "unrecognized arguments: --cov=slug" in message
    assert message.count("unrecognized arguments") == 1 and "and 2490 more" in message
    case = dataclasses.replace(case, reference_patch=(project / "fix.diff").read_text())
    with pytest.raises(VerdictError) as raised:
        after(case, FIX)
    assert "the test command fails with the reference patch too" in str(raised.value)
    assert "unrecognized arguments: --cov=slug" in str(raised.value)


def test_an_agent_that_breaks_the_import_fails_it_does_not_make_an_error(project: Path) -> None:
    # the case's conftest imports the code: broken by the agent, pytest cannot start
    write(project / "slugify" / "conftest.py", "import slug\n")
    case = many(project, reference_patch=(project / "fix.diff").read_text())
    found = after(case, "echo 'raise RuntimeError(\"broken by the agent\")' > slug.py")
    assert not found.passed
    assert found.broken is not None and "broken by the agent" in found.broken
    # a test module that does not import: its tests fail, the run goes on
    write(project / "slugify" / "conftest.py", "")
    found = after(case, "echo 'raise RuntimeError(\"broken by the agent\")' > slug.py")
    assert found.outcomes["tests/test_many.py::test_spaced[two"] == "ERROR"
    assert found.broken is not None and found.broken.startswith("collecting tests/test_many.py")


def test_the_report_is_read_strictly() -> None:
    text = "\n".join(
        [
            json.dumps({"started": True}),
            json.dumps({"matched": "t.py::a", "as": ["t.py::a"]}),
            json.dumps({"test": "t.py::a", "outcome": "PASSED"}),
            json.dumps({"test": "t.py::a", "outcome": "ERROR"}),  # its teardown failed
            "not json",
            json.dumps(["a list"]),
            json.dumps({"exit": 1}),
        ]
    )
    run = read_report(text, ["t.py::a", "t.py::b"], 1, "")
    assert run.outcomes == {"t.py::a": "ERROR"} and run.broken is None
    killed = read_report(text, ["t.py::a"], None, "\x1b[31mlast line\x1b[0m", timed_out=True)
    assert killed.fatal and killed.broken == (
        "it ran past the case's timeout and was killed; the end of its output:\n  | last line"
    )


def test_the_repository_is_a_git_repository_and_a_commit_hides_nothing(project: Path) -> None:
    case = many(project, pass_to_pass=MANY_IDS[:1])
    with Copy(snapshot_of(case)) as copy:
        with Workspace(copy.path) as workspace:
            assert workspace.run(AS_REPOSITORY, 30)["status"] == 0
            status = workspace.bash("git status --porcelain; git log --oneline | wc -l", 30)
            assert status["output"] == "1\n"
            # the agent's commits carry its name, and leave no maintenance in the background
            settings = "git config user.email; git config maintenance.auto"
            assert workspace.bash(settings, 30)["output"] == "agent@sandbox\nfalse\n"
            commit = f"{FIX} git add -A && git commit -qm fix && git status --porcelain"
            assert workspace.bash(commit, 30)["output"] == ""
            # a history rewritten to look like the snapshot: the diff is still taken
            forged = "git reset -q --soft HEAD~1 && git stash -q && git stash pop -q"
            assert workspace.bash(forged, 30)["status"] == 0
            assert workspace.bash("rm -rf .git && git init -q . && git add -A", 30)["status"] == 0
        found: RepoVerdict = verdict(case, copy)
    assert found.passed
    assert '-    return "-".join(text.strip().lower().split(" "))' in found.diff
    assert ".git" not in found.diff


def test_check_cases_says_a_failing_test_command_once(project: Path) -> None:
    command = "python -m pytest -p no:cacheprovider --cov=slug"
    fix = (project / "fix.diff").read_text()
    case = many(project, test_command=command, reference_patch=fix)
    (problem,) = check_repo_case(case).problems
    assert problem.key == "test_command"
    assert problem.message.startswith("the test command failed without the patch: exit status 4")
    assert "unrecognized arguments: --cov=slug" in problem.message


def test_the_runs_own_steps_start_no_process_but_mkdir(tmp_path: Path) -> None:
    # each process is a fork and an exec in the sandbox: the reporter, its ids and the
    # output's end are written and read by bash itself
    log, programs = tmp_path / "started", tmp_path / "bin"
    programs.mkdir()
    for name in ("cat", "tail", "mkdir", "head", "tee", "dd"):
        real = shutil.which(name)
        assert real is not None
        (programs / name).write_text(f'#!/bin/sh\necho {name} >> {log}\nexec {real} "$@"\n')
        (programs / name).chmod(0o755)
    folder, ids = tmp_path / "verdict-x", ["tests/t.py::it's", "a b.py::t[1]"]
    text = script("echo ran", ids, str(folder), "_reporter")
    path = f"{programs}:{os.environ['PATH']}"
    subprocess.run(["bash", "-c", text], env={"PATH": path}, capture_output=True)
    assert log.read_text().split() == ["mkdir"]
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert (folder / "_reporter.py").read_text() == _PLUGIN + "\n"
    assert json.loads((folder / "ids.json").read_text()) == ids


def test_an_id_without_a_file_adds_no_empty_argument() -> None:
    # "" would be a path to pytest: the whole repository collected
    ids = ["::test_t", "a.py::test_t", "-k", "\0::t"]  # bash drops a NUL: "" too
    text = script("x", ids, "/tmp/verdict-x", "_reporter")
    assert "for f in a.py; do" in text


def test_the_outputs_end_is_read_whatever_its_size(tmp_path: Path) -> None:
    output = tmp_path / "output"
    for size in (0, 1, TAIL, TAIL + 1, 3 * TAIL + 7, 40 * TAIL):
        data = bytes(range(1, 256)) * (size // 255) + b"\xff" * (size % 255)
        output.write_bytes(data)
        shown = subprocess.run(["bash", "-c", _show_tail(str(output))], capture_output=True)
        assert shown.stdout == data[-TAIL:] if data else shown.stdout == b""


@pytest.mark.parametrize("own", ["", "folder", "link"])
def test_the_repository_is_made_by_git_alone_unless_a_git_folder_goes(
    tmp_path: Path, own: str
) -> None:
    log, programs, repo = tmp_path / "started", tmp_path / "bin", tmp_path / "repo"
    programs.mkdir()
    for name in ("git", "rm"):
        real = shutil.which(name)
        assert real is not None
        (programs / name).write_text(f'#!/bin/sh\necho {name} >> {log}\nexec {real} "$@"\n')
        (programs / name).chmod(0o755)
    write(repo / "m.py", "x = 1\n")
    if own == "folder":
        write(repo / ".git" / "HEAD", "forged\n")
    elif own == "link":
        (repo / ".git").symlink_to(tmp_path / "elsewhere")
    text = AS_REPOSITORY.replace("cd /repo ", f"cd {repo} ", 1)
    path = f"{programs}:{os.environ['PATH']}"
    subprocess.run(["bash", "-c", text], env={"PATH": path}, check=True)
    assert log.read_text().split() == ["rm"] * bool(own) + ["git"] * 3
    listed = subprocess.run(["git", "-C", str(repo), "ls-files"], capture_output=True, text=True)
    assert listed.stdout == "m.py\n"
