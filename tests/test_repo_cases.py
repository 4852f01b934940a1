"""Repository cases: their format, the verdict in a fresh sandbox, and check-cases' gold
validation on the examples (SWE-bench's: fail_to_pass fail before and pass after the
reference patch, pass_to_pass pass both times)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from pytest_prompteval.core.cases import load_case_file
from pytest_prompteval.core.errors import PromptevalError
from pytest_prompteval.core.repocases import RepoCase, parse_repo_case
from pytest_prompteval.sandbox.environments import ensure
from pytest_prompteval.sandbox.workspace import Copy, Workspace
from pytest_prompteval.scoring.repo import apply_patch, snapshot_of, verdict
from pytest_prompteval.workflows.repocheck import check_repo_case

from .conftest import git, prompteval

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
    assert [c.id for c in cases] == [
        "slug_double_space",
        "median_even",
        "cart_cents",
        "feet_to_meters",
    ]
    cache = Path(os.environ["PROMPTEVAL_ENVIRONMENTS_CACHE"])
    checks = [check_repo_case(c, environment=ensure(c.environment, cache)) for c in cases]
    assert [c.problems for c in checks] == [[], [], [], []]


def example_project(tmp_path: Path) -> Path:
    """A copy of examples/repo-tasks, as it is: its fixer prompt's tools and max_steps are
    known fields."""
    project = tmp_path / "project"
    shutil.copytree(EXAMPLES, project)
    return project


def test_the_check_cases_command_validates_the_examples_repository_cases(tmp_path: Path) -> None:
    done = prompteval(example_project(tmp_path), "check-cases")
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines() == [
        "4 cases in 1 files (0 code cases, 4 repository cases)",
        "prompt_cases/repo.yaml:2: slug_double_space: reference patch validates 1 fail_to_pass, "
        "1 pass_to_pass",
        "prompt_cases/repo.yaml:11: median_even: reference patch validates 1 fail_to_pass, "
        "2 pass_to_pass",
        "prompt_cases/repo.yaml:19: cart_cents: reference patch validates 2 fail_to_pass, "
        "1 pass_to_pass",
        "prompt_cases/repo.yaml:27: feet_to_meters: reference patch validates 1 fail_to_pass, "
        "1 pass_to_pass",
        "all valid",
    ]


def test_the_check_cases_command_names_each_wrong_list_by_file_and_line(tmp_path: Path) -> None:
    project = example_project(tmp_path)
    cases = project / "prompt_cases" / "repo.yaml"
    text = cases.read_text()
    # slug's lists swapped; median's omitted (derived); cart's patch no longer applies
    text = text.replace(
        "fail_to_pass: [tests/test_slug.py::test_double_space]\n"
        "  pass_to_pass: [tests/test_slug.py::test_basic]",
        "fail_to_pass: [tests/test_slug.py::test_basic]\n"
        "  pass_to_pass: [tests/test_slug.py::test_double_space]",
    )
    text = text.replace(
        "  fail_to_pass: [tests/test_stats.py::test_median_even]\n"
        "  pass_to_pass: [tests/test_stats.py::test_mean, tests/test_stats.py::test_median_odd]\n",
        "",
    )
    cases.write_text(text)
    (project / "repos" / "shop" / "shop" / "money.py").write_text("# rewritten\n")
    done = prompteval(project, "check-cases")
    assert done.returncode == 2
    assert done.stdout.splitlines()[1:] == [
        "prompt_cases/repo.yaml:11: median_even: reference patch validates 1 fail_to_pass, "
        "2 pass_to_pass",
        "prompt_cases/repo.yaml:11: median_even: fail_to_pass derived from the reference patch: "
        "[tests/test_stats.py::test_median_even]",
        "prompt_cases/repo.yaml:11: median_even: pass_to_pass derived from the reference patch: "
        "[tests/test_stats.py::test_mean, tests/test_stats.py::test_median_odd]",
        "prompt_cases/repo.yaml:25: feet_to_meters: reference patch validates 1 fail_to_pass, "
        "1 pass_to_pass",
    ]
    assert done.stderr.splitlines() == [
        "prompteval: error: prompt_cases/repo.yaml:6: case 'slug_double_space': fail_to_pass "
        "tests/test_slug.py::test_basic (passed) already passes without the patch",
        "prompteval: error: prompt_cases/repo.yaml:7: case 'slug_double_space': pass_to_pass "
        "tests/test_slug.py::test_double_space (failed) does not pass without the patch",
        "prompteval: error: prompt_cases/repo.yaml:23: case 'cart_cents': reference_patch does "
        "not apply: error: patch failed: shop/money.py:1; error: shop/money.py: patch does not "
        "apply",
        "prompteval: 3 problem(s) found",
    ]


def test_check_cases_catches_wrong_lists_and_derives_missing_ones(project: Path) -> None:
    swapped = (
        "  fail_to_pass: [tests/test_slug.py::test_basic]\n"
        "  pass_to_pass: [tests/test_slug.py::test_double_space]\n"
    )
    (wrong,) = repo_cases(project, SLUG.format(lists=swapped))
    assert [p.message for p in check_repo_case(wrong).problems] == [
        "fail_to_pass tests/test_slug.py::test_basic (passed) already passes without the patch",
        "pass_to_pass tests/test_slug.py::test_double_space (failed) does not pass without "
        "the patch",
    ]
    (unlisted,) = repo_cases(project, SLUG.format(lists=""))
    derived = check_repo_case(unlisted)
    assert (derived.derived, derived.problems) == (("fail_to_pass", "pass_to_pass"), [])
    assert derived.fail_to_pass == ("tests/test_slug.py::test_double_space",)
    assert derived.pass_to_pass == ("tests/test_slug.py::test_basic",)
    (half,) = repo_cases(project, SLUG.format(lists=RIGHT.split("\n", 1)[1]))
    derived = check_repo_case(half)  # pass_to_pass given: checked, fail_to_pass derived
    assert (derived.derived, derived.problems) == (("fail_to_pass",), [])
    assert derived.fail_to_pass == ("tests/test_slug.py::test_double_space",)


def test_a_case_without_a_reference_patch_is_not_validated_and_needs_its_lists(
    project: Path,
) -> None:
    unpatched = SLUG.replace("  reference_patch: fix.diff\n", "")
    (listed,) = repo_cases(project, unpatched.format(lists=RIGHT))
    check = check_repo_case(listed)
    assert (check.validated, check.problems) == (False, [])
    (bare,) = repo_cases(project, unpatched.format(lists=""))
    assert [p.message for p in check_repo_case(bare).problems] == [
        "no fail_to_pass and no reference_patch to derive them"
    ]
    (empty,) = repo_cases(project, unpatched.format(lists="  fail_to_pass: []\n"))
    assert [p.message for p in check_repo_case(empty).problems] == [
        "empty: the item would pass without any change"
    ]


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
        (
            "  memory_mb: 8\n",
            "cases.yaml:7: case 'slug': memory_mb: MiB for the sandbox, a whole number from 64",
        ),
        ("  memory_mbs: 512\n", "cases.yaml:7: case 'slug': unknown field 'memory_mbs'; did you"),
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
