"""Repository cases: their format, the verdict in a fresh sandbox, and check-cases' gold
validation on the examples (SWE-bench's: fail_to_pass fail before and pass after the
reference patch, pass_to_pass pass both times)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pytest_prompteval.core.cases import load_case_file
from pytest_prompteval.core.errors import PromptevalError
from pytest_prompteval.core.repocases import RepoCase, parse_repo_case
from pytest_prompteval.sandbox.workspace import Copy, Workspace
from pytest_prompteval.scoring.repo import apply_patch, verdict
from pytest_prompteval.workflows.repocheck import check_repo_case, snapshot_of

EXAMPLES = Path(__file__).parents[1] / "examples" / "repo-tasks"


def repo_cases(root: Path, text: str) -> list[RepoCase]:
    (root / "cases.yaml").write_text(text)
    return [parse_repo_case(c) for c in load_case_file(root / "cases.yaml", root=root).cases]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    shutil.copytree(EXAMPLES / "repos" / "slugify", tmp_path / "slugify")
    shutil.copy(EXAMPLES / "patches" / "slugify.diff", tmp_path / "fix.diff")
    return tmp_path


SLUG = """cases:
- id: slug
  kind: repo
  repo: slugify
  input: {{issue: double spaces}}
  reference_patch: fix.diff
{lists}"""
RIGHT = (
    "  fail_to_pass: [tests/test_slug.py::test_double_space]\n"
    "  pass_to_pass: [tests/test_slug.py::test_basic]\n"
)


def test_the_examples_reference_patches_validate() -> None:
    cases = [
        parse_repo_case(c)
        for c in load_case_file(EXAMPLES / "prompt_cases" / "repo.yaml", root=EXAMPLES).cases
    ]
    assert [c.id for c in cases] == ["slug_double_space", "median_even", "cart_cents"]
    assert [check_repo_case(c).problems for c in cases] == [[], [], []]


def test_check_cases_catches_wrong_lists_and_derives_missing_ones(project: Path) -> None:
    swapped = (
        "  fail_to_pass: [tests/test_slug.py::test_basic]\n"
        "  pass_to_pass: [tests/test_slug.py::test_double_space]\n"
    )
    (wrong,) = repo_cases(project, SLUG.format(lists=swapped))
    assert check_repo_case(wrong).problems == [
        "fail_to_pass tests/test_slug.py::test_basic (passed) already passes without the patch",
        "pass_to_pass tests/test_slug.py::test_double_space (failed) does not pass without "
        "the patch",
    ]
    (unlisted,) = repo_cases(project, SLUG.format(lists=""))
    derived = check_repo_case(unlisted)
    assert derived.derived and not derived.problems
    assert derived.fail_to_pass == ("tests/test_slug.py::test_double_space",)
    assert derived.pass_to_pass == ("tests/test_slug.py::test_basic",)


def _verdict_after(case: RepoCase, command: str | None) -> tuple[bool, str, float, float]:
    with Copy(snapshot_of(case)) as copy:
        if command is not None:
            with Workspace(copy.path) as workspace:
                if command == "reference":
                    assert case.reference_patch is not None
                    assert apply_patch(workspace, case.reference_patch, 30)["status"] == 0
                else:
                    assert workspace.bash(command, 30)["status"] == 0
        found = verdict(case, copy)
    return found.passed, found.message(), found.fixed, found.kept


def test_the_verdict_runs_the_tests_on_the_agents_copy(project: Path) -> None:
    (case,) = repo_cases(project, SLUG.format(lists=RIGHT))
    passed, _, fixed, kept = _verdict_after(case, "reference")
    assert (passed, fixed, kept) == (True, 1.0, 1.0)
    passed, message, fixed, kept = _verdict_after(case, None)
    assert (passed, fixed, kept) == (False, 0.0, 1.0)
    assert message.startswith(
        "fail_to_pass not fixed: tests/test_slug.py::test_double_space (failed)\n"
        "the agent's diff:\n(no change)"
    )
    breaking = "printf 'def slugify(text):\\n    return text.split()\\n' > slug.py"
    passed, message, fixed, kept = _verdict_after(case, breaking)
    assert (passed, fixed, kept) == (False, 0.0, 0.0)
    assert "pass_to_pass broken: tests/test_slug.py::test_basic (failed)" in message
    assert "--- a/slug.py\n+++ b/slug.py\n" in message and "+    return text.split()" in message
    assert (project / "slugify" / "slug.py").read_text().endswith('split(" "))\n')


@pytest.mark.parametrize(
    ("lists", "error"),
    [
        (
            "  fail_to_pas: [t]\n",
            "cases.yaml:7: case 'slug': unknown field 'fail_to_pas'; did you mean 'fail_to_pass'?",
        ),
        (
            "  timeout: 500\n",
            "cases.yaml:7: case 'slug': timeout: seconds per command, more than 0",
        ),
        ("  pass_to_pass: tests\n", "cases.yaml:7: case 'slug': pass_to_pass: expected a list"),
        ("  test_patch: ../../etc/passwd\n", "cases.yaml:7: case 'slug': test_patch: path"),
    ],
)
def test_a_mistake_in_a_repo_case_is_one_line_naming_file_and_line(
    project: Path, lists: str, error: str
) -> None:
    with pytest.raises(PromptevalError) as raised:
        repo_cases(project, SLUG.format(lists=lists))
    assert str(raised.value).split(str(project) + "/")[-1].startswith(error)


def test_a_repo_folder_outside_the_project_is_refused(project: Path) -> None:
    text = SLUG.format(lists="").replace("repo: slugify", "repo: ../..")
    with pytest.raises(PromptevalError, match=r"cases.yaml:4: case 'slug': repo: path '../..' "):
        repo_cases(project, text)


def test_a_git_snapshot_is_read_from_objects_without_the_clones_config(project: Path) -> None:
    from tests.conftest import git

    clone = project / "slugify"
    git(clone, "init", "-q")
    git(clone, "add", ".")
    git(clone, "commit", "-qm", "base")
    (clone / "slug.py").write_text("changed in the work tree\n")
    marker = project / "ran"
    (clone / ".gitattributes").write_text("* filter=evil\n")
    git(clone, "add", ".gitattributes")
    git(clone, "commit", "-qm", "attributes")
    git(clone, "config", "filter.evil.smudge", f"touch {marker}; cat")
    git(clone, "config", "core.fsmonitor", f"touch {marker}")
    text = SLUG.format(lists=RIGHT).replace("repo: slugify", "repo: {git: slugify, ref: HEAD~1}")
    (case,) = repo_cases(project, text)
    with Copy(snapshot_of(case)) as copy:
        assert (copy.path / "slug.py").read_text().endswith('split(" "))\n')
        assert not (copy.path / ".gitattributes").exists()
        assert verdict(case, copy).fixed == 0.0
    assert not marker.exists()
