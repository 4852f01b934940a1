"""``prompteval import swebench``: SWE-bench instances become repository cases over local
clones, their test patch applied before the verdict and never in the agent's copy."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from pytest_prompteval.core.cases import load_case_file
from pytest_prompteval.core.repocases import parse_repo_case
from pytest_prompteval.sandbox.workspace import Copy
from pytest_prompteval.scoring.repo import snapshot_of

from .conftest import git, prompteval

EXAMPLES = Path(__file__).parents[1] / "examples" / "repo-tasks"


def clone_without(repos: Path, name: str, test: str) -> tuple[str, str]:
    """A clone of the example repository ``name`` whose base commit lacks ``test`` (the
    instance's test patch adds it back, as SWE-bench's do); (base commit, test patch)."""
    clone = repos / name
    shutil.copytree(EXAMPLES / "repos" / name, clone)
    tests = next((clone / "tests").glob("test_*.py"))
    full = tests.read_text()
    start = full.index(f"\n\ndef {test}(")
    end = full.find("\n\n\ndef ", start + 2)
    tests.write_text(full[:start] + ("\n" if end < 0 else full[end:]))
    git(clone, "init", "-q")
    git(clone, "add", ".")
    git(clone, "commit", "-qm", "base")
    base = git(clone, "rev-parse", "HEAD").strip()
    tests.write_text(full)
    test_patch = git(clone, "diff")
    git(clone, "commit", "-qam", "later work")  # the clone's HEAD is past the base commit
    return base, test_patch


def instances(repos: Path) -> list[dict[str, object]]:
    slug_base, slug_tests = clone_without(repos, "slugify", "test_double_space")
    stats_base, stats_tests = clone_without(repos, "stats", "test_median_even")
    return [
        {  # the lists as JSON strings, as in the published dataset
            "instance_id": "acme__slugify-1",
            "repo": "acme/slugify",
            "base_commit": slug_base,
            "problem_statement": "slugify('hello  world') returns 'hello--world'.\nIt should not.",
            "patch": (EXAMPLES / "patches" / "slugify.diff").read_text(),
            "test_patch": slug_tests,
            "FAIL_TO_PASS": json.dumps(["tests/test_slug.py::test_double_space"]),
            "PASS_TO_PASS": json.dumps(["tests/test_slug.py::test_basic"]),
        },
        {
            "instance_id": "acme__stats-7",
            "repo": "acme/stats",
            "base_commit": stats_base,
            "problem_statement": "median of an even count is wrong",
            "patch": (EXAMPLES / "patches" / "stats.diff").read_text(),
            "test_patch": stats_tests,
            "FAIL_TO_PASS": ["tests/test_stats.py::test_median_even"],
            "PASS_TO_PASS": [
                "tests/test_stats.py::test_mean",
                "tests/test_stats.py::test_median_odd",
            ],
        },
    ]


def test_swebench_instances_become_cases_that_validate_with_the_hidden_test_patch(
    tmp_path: Path,
) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    data = instances(tmp_path / "repos")
    (tmp_path / "lite.jsonl").write_text("".join(json.dumps(d) + "\n" for d in data))
    done = prompteval(tmp_path, "import", "swebench", "lite.jsonl", "--repos", "repos")
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines() == [
        "wrote 2 cases to prompt_cases/lite.yaml, their patches to prompt_cases/lite/",
        "pytest leaves the clones of repos/ that the cases name out of its collection: their "
        "tests run in the sandbox only",
    ]
    loaded = load_case_file(tmp_path / "prompt_cases" / "lite.yaml", root=tmp_path)
    slug, stats = (parse_repo_case(c) for c in loaded.cases)
    assert loaded.cases[0].input == {"issue": data[0]["problem_statement"]}
    assert (slug.git, slug.ref) == (tmp_path / "repos" / "slugify", data[0]["base_commit"])
    assert slug.fail_to_pass == ("tests/test_slug.py::test_double_space",)
    assert stats.pass_to_pass == (
        "tests/test_stats.py::test_mean",
        "tests/test_stats.py::test_median_odd",
    )
    assert (slug.reference_patch, slug.test_patch) == (data[0]["patch"], data[0]["test_patch"])
    with Copy(snapshot_of(slug)) as copy:  # the agent's copy: the base commit, no new test
        assert "test_double_space" not in (copy.path / "tests" / "test_slug.py").read_text()
    # the fail_to_pass tests exist only through the test patch: check-cases applies it
    checked = prompteval(tmp_path, "check-cases")
    assert (checked.returncode, checked.stderr) == (0, "")
    assert checked.stdout.splitlines()[1:] == [
        "prompt_cases/lite.yaml:3: acme__slugify-1: reference patch validates 1 fail_to_pass, "
        "1 pass_to_pass",
        "prompt_cases/lite.yaml:19: acme__stats-7: reference patch validates 1 fail_to_pass, "
        "2 pass_to_pass",
        "all valid",
    ]


def test_a_malformed_instance_missing_clone_or_commit_is_one_line_and_nothing_is_written(
    tmp_path: Path,
) -> None:
    good = instances(tmp_path / "repos")[0]
    lines = [
        "{not json",
        json.dumps({"instance_id": "x"}),
        json.dumps({**good, "instance_id": "a-2", "FAIL_TO_PASS": "tests"}),
        json.dumps({**good, "instance_id": "a-3", "repo": "acme/nowhere"}),
        json.dumps({**good, "instance_id": "a-4", "base_commit": "0" * 40}),
        json.dumps(good),
        json.dumps(good),
    ]
    (tmp_path / "bad.jsonl").write_text("\n".join(lines) + "\n")
    done = prompteval(tmp_path, "import", "swebench", "bad.jsonl", "--repos", "repos")
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "prompteval: error: bad.jsonl:1: not JSON: Expecting property name enclosed in double "
        "quotes (column 2)",
        "prompteval: error: bad.jsonl:2: instance 'x': repo: expected a non-empty string",
        "prompteval: error: bad.jsonl:3: instance 'a-2': FAIL_TO_PASS: expected a list of test "
        "ids (or a JSON string of one)",
        "prompteval: error: bad.jsonl:4: instance 'a-3': no clone of acme/nowhere at "
        "repos/nowhere (git clone https://github.com/acme/nowhere repos/nowhere)",
        f"prompteval: error: bad.jsonl:5: instance 'a-4': repos/slugify has no commit {'0' * 40} "
        f"(git -C repos/slugify fetch https://github.com/acme/slugify {'0' * 40})",
        "prompteval: error: bad.jsonl:7: instance 'acme__slugify-1': instance_id repeats line 6",
        "prompteval: 6 problem(s) found",
    ]
    assert not (tmp_path / "prompt_cases").exists()
    missing = prompteval(tmp_path, "import", "swebench", "bad.jsonl")
    assert (missing.returncode, missing.stderr) == (
        2,
        "prompteval: error: import swebench needs FILE.jsonl and --repos DIR (the clones)\n",
    )


def test_swebench_task_folders_with_environments_per_repo_and_version(tmp_path: Path) -> None:
    """SWE-bench 5.x task folders, and --environments: repo@version wins over repo; the
    cases validate in their environments."""
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    for data in instances(tmp_path / "repos"):
        task = tmp_path / "swe5" / "tasks" / str(data["instance_id"])
        task.mkdir(parents=True)
        version = "1.0" if data["repo"] == "acme/stats" else "0.9"
        meta = f"repo: {data['repo']}\nbase_commit: '{data['base_commit']}'\nversion: '{version}'\n"
        (task / "task.yaml").write_text(meta)
        (task / "problem_statement.md").write_text(str(data["problem_statement"]))
        (task / "gold.patch").write_text(str(data["patch"]))
        (task / "test.patch").write_text(str(data["test_patch"]))
        lists = {
            k: v if isinstance(v, list) else json.loads(str(v))
            for k, v in data.items()
            if k in ("FAIL_TO_PASS", "PASS_TO_PASS")
        }
        (task / "tests.json").write_text(json.dumps(lists))
    (tmp_path / "envs.yaml").write_text(
        "acme/slugify: {pythonpath: [lib]}\n"
        "acme/stats: {pythonpath: [nowhere]}\n"
        "acme/stats@1.0:\n"
        "  pythonpath: [src]\n"
        "  test_command: python -m pytest -p no:cacheprovider\n"
    )
    done = prompteval(
        tmp_path, "import", "swebench", "swe5", "--repos", "repos", "--environments", "envs.yaml"
    )
    assert (done.returncode, done.stderr) == (0, "")
    loaded = load_case_file(tmp_path / "prompt_cases" / "swe5.yaml", root=tmp_path)
    slug, stats = (parse_repo_case(c) for c in loaded.cases)
    assert loaded.cases[0].input == {
        "issue": "slugify('hello  world') returns 'hello--world'.\nIt should not."
    }
    assert slug.environment is not None and slug.environment.pythonpath == ("lib",)
    assert slug.test_command is None
    assert stats.environment is not None and stats.environment.pythonpath == ("src",)
    assert stats.test_command == "python -m pytest -p no:cacheprovider"
    assert stats.fail_to_pass == ("tests/test_stats.py::test_median_even",)
    checked = prompteval(tmp_path, "check-cases")
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout.splitlines()[-1] == "all valid"


def test_a_mistake_in_the_environments_file_names_its_line(tmp_path: Path) -> None:
    instances(tmp_path / "repos")
    (tmp_path / "lite.jsonl").write_text("")
    for text, expected in (
        (
            "acme/stats:\n  pythonpaths: [src]\n",
            "envs.yaml:2: 'acme/stats': environment: "
            "unknown field 'pythonpaths'; did you mean 'pythonpath'?",
        ),
        ("stats: {}\n", "envs.yaml:1: 'stats': expected OWNER/NAME or OWNER/NAME@VERSION"),
        ("- acme/stats\n", "envs.yaml:1: expected a mapping from OWNER/NAME"),
    ):
        (tmp_path / "envs.yaml").write_text(text)
        done = prompteval(
            tmp_path,
            "import",
            "swebench",
            "lite.jsonl",
            "--repos",
            "repos",
            "--environments",
            "envs.yaml",
        )
        assert done.returncode == 2
        assert done.stderr.startswith(f"prompteval: error: {expected}"), done.stderr
