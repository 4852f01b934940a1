"""Prompt versions read from git (NAME@REF), and the prompt changes in the summary."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from pytest_prompteval.core.gitversions import repository

from .conftest import git, item_results

APP = """
from pathlib import Path

def answer(request, **context):
    with Path(__file__).with_name("calls.log").open("a") as log:
        log.write(request.system + "\\n")
    return "a loop"
"""
CASES = "cases:\n- id: c1\n  input: {n: 1}\n- id: c2\n  input: {n: 2}\n"
PROVIDER = "--prompteval-provider=python:myapp:answer"


def commit(root: Path, message: str) -> None:
    git(root, "add", "prompts", "prompt_cases")
    git(root, "commit", "-q", "-m", message)


def calls(root: Path) -> list[str]:
    log = root / "calls.log"
    lines = log.read_text().splitlines() if log.exists() else []
    log.unlink(missing_ok=True)
    return lines


@pytest.fixture
def repo(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(myapp=APP)
    pytester.makeini("[pytest]\npythonpath = .\n")
    pytester.mkdir("prompts").joinpath("current.yaml").write_text(
        "system_prompt: old system\nuser_prompt: |\n  line one\n  line two\n"
        "model_config: {temperature: 0}\n"
    )
    pytester.mkdir("prompt_cases").joinpath("c.yaml").write_text(CASES)
    git(pytester.path, "init", "-q", "-b", "main")
    commit(pytester.path, "first")
    return pytester


def test_compare_with_the_committed_version_replays_its_recordings(
    repo: pytest.Pytester,
) -> None:
    root = repo.path
    repo.runpytest("--prompt=current", PROVIDER).assert_outcomes(passed=2)
    assert calls(root) == ["old system", "old system"]
    (root / "prompts" / "current.yaml").write_text(
        "system_prompt: new system\nuser_prompt: |\n  line one\n  line 2\n  line three\n"
        "model_config: {temperature: 0.5}\n"
    )
    commit(root, "edit")
    status = git(root, "status", "--porcelain", "prompts")

    result = repo.runpytest("--prompt=current", "--compare=current@HEAD~1", PROVIDER, "-v")

    result.assert_outcomes(passed=4)
    assert calls(root) == ["new system", "new system"]  # HEAD~1's side replayed
    assert git(root, "status", "--porcelain", "prompts") == status
    result.stdout.fnmatch_lines(
        [
            "*c.yaml::c1?current@HEAD~1? PASSED*",
            "*prompt changes*",
            "current@HEAD~1 -> current:",
            "  system_prompt: +1 -1 lines",
            "    -old system",
            "    +new system",
            "  user_prompt: +2 -1 lines",
            "    -line two",
            "    +line 2",
            "    +line three",
            "  model_config.temperature: 0 -> 0.5",
        ]
    )


def test_baseline_at_a_ref_is_compared_as_the_reference(repo: pytest.Pytester) -> None:
    (repo.path / "prompts" / "current.yaml").write_text("system_prompt: edited\n")
    reprec = repo.inline_run("--prompt=current", "--prompteval-baseline=current@main", PROVIDER)
    prompts = sorted({r["prompt"] for r in item_results(reprec)})
    assert prompts == ["current", "current@main"]
    report = repo.runpytest("--prompt=current", "--prompteval-baseline=current@main", PROVIDER)
    report.stdout.fnmatch_lines(["*current@main -> current*"])


def test_node_ids_with_a_ref_select_and_keyword_match(repo: pytest.Pytester) -> None:
    chosen = repo.runpytest(
        "prompt_cases/c.yaml::c1[current@main]",
        "--prompt=current",
        "--compare=current@main",
        PROVIDER,
    )
    chosen.assert_outcomes(passed=1)
    keyword = repo.runpytest("--prompt=current", "--compare=current@main", "-k", "main", PROVIDER)
    keyword.assert_outcomes(passed=2)


@pytest.mark.parametrize(
    ("version", "message"),
    [
        ("current@nope", "*prompt version 'current@nope': unknown git ref 'nope'*"),
        ("missing@main", "*prompt version 'missing@main': prompts/missing.yaml does not exist "
         "at main; versions at main: current"),
    ],
)  # fmt: skip
def test_bad_refs_are_one_usage_error(repo: pytest.Pytester, version: str, message: str) -> None:
    result = repo.runpytest("--prompt=current", f"--compare={version}", PROVIDER)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {message}"])
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


def test_outside_a_git_repository(pytester: pytest.Pytester) -> None:
    pytester.mkdir("prompts").joinpath("current.yaml").write_text("user_prompt: x\n")
    pytester.mkdir("prompt_cases").joinpath("c.yaml").write_text(CASES)
    result = pytester.runpytest("--prompt=current@main")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: prompt version 'current@main': * is not inside a git *"])


def test_affected_selects_changed_case_entries_then_every_case_of_a_changed_prompt(
    repo: pytest.Pytester, xdist_args: list[str]
) -> None:
    root = repo.path
    (root / "prompt_cases" / "d.yaml").write_text("cases:\n- id: d1\n  input: {n: 9}\n")
    commit(root, "second file")
    # c2 moved above c1 and edited, c3 added; c1 and d1 only moved or untouched
    (root / "prompt_cases" / "c.yaml").write_text(
        "cases:\n- id: c2\n  input: {n: 20}\n\n- {id: c1, input: {n: 1}}\n- id: c3\n  input: {}\n"
    )
    args = ("--prompt=current", "--compare=current@HEAD", "--prompteval-affected=HEAD", PROVIDER)

    result = repo.runpytest(*args, "-v", *xdist_args)

    result.stdout.fnmatch_lines(
        ["prompteval affected since HEAD: 2 of 4 cases selected (changed case entries), 2 skipped"]
    )
    # xdist's workers deselect, and its controller does not count them
    result.assert_outcomes(passed=4, deselected=0 if xdist_args else 4)
    ran = {line.split("::")[1].split(" ")[0] for line in result.outlines if "PASSED" in line}
    assert ran == {"c2[current]", "c2[current@HEAD]", "c3[current]", "c3[current@HEAD]"}

    (root / "prompts" / "current.yaml").write_text("system_prompt: edited\n")
    everything = repo.runpytest(*args, *xdist_args)
    everything.stdout.fnmatch_lines(
        ["prompteval affected since HEAD: 4 of 4 cases selected (prompt changed: current), "
         "0 skipped"]
    )  # fmt: skip
    everything.assert_outcomes(passed=8)


def test_affected_with_a_bad_ref(repo: pytest.Pytester) -> None:
    result = repo.runpytest("--prompt=current", "--prompteval-affected=nope", PROVIDER)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --prompteval-affected: unknown git ref 'nope'*"])


def plant_fake_repository(folder: Path, name: str, source: Path, marker: Path) -> None:
    """Files a pull request can add to ``folder`` that make it look like a git repository
    whose missing blob for ``name`` at ``main`` is fetched by running a shell command."""
    git(source, "init", "-q", "-b", "main")
    (source / name).write_text("system_prompt: x\nuser_prompt: y\n")
    git(source, "add", name)
    git(source, "commit", "-q", "-m", "fake")
    blob = git(source, "rev-parse", f"main:{name}").strip()
    for part in ("HEAD", "objects", "refs"):
        copy = shutil.copytree if (source / ".git" / part).is_dir() else shutil.copy
        copy(source / ".git" / part, folder / part)
    (folder / "objects" / blob[:2] / blob[2:]).unlink()
    (folder / "config").write_text(
        "[core]\n\trepositoryformatversion = 1\n\tbare = false\n\tworktree = .\n"
        "[extensions]\n\tpartialClone = origin\n"
        f'[remote "origin"]\n\turl = {source}\n\tpromisor = true\n'
        f"\tuploadpack = \"sh -c 'env > {marker}; exit 1'\"\n"
    )


@pytest.mark.parametrize(
    ("folder", "name", "option", "outcomes"),
    [
        ("prompts", "current.yaml", "--compare=current@main", {"passed": 4}),
        ("prompt_cases", "c.yaml", "--prompteval-affected=main", {"deselected": 2}),
    ],
)
def test_a_folder_that_looks_like_a_repository_runs_nothing(
    repo: pytest.Pytester,
    tmp_path_factory: pytest.TempPathFactory,
    folder: str,
    name: str,
    option: str,
    outcomes: dict[str, int],
) -> None:
    marker = tmp_path_factory.mktemp("marker") / "ran"
    plant_fake_repository(repo.path / folder, name, tmp_path_factory.mktemp("fake"), marker)
    # the project's own repository gives the version at main: the fake one is never asked
    result = repo.runpytest("--prompt=current", option, PROVIDER)

    assert not marker.exists(), "git ran the planted repository's uploadpack"
    result.assert_outcomes(**outcomes)


def test_git_runs_pinned_to_the_project_without_the_api_key(
    repo: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret")
    monkeypatch.setenv("GIT_DIR", str(repo.path / "prompts"))  # inherited discovery is ignored
    env = repository(repo.path / "prompt_cases").git("-c", "alias.e=!env", "e").stdout.decode()

    assert "sk-ant-secret" not in env
    assert f"GIT_DIR={repo.path / '.git'}" in env.splitlines()
    assert "GIT_NO_LAZY_FETCH=1" in env.splitlines()


def test_a_version_at_a_ref_is_read_under_its_own_name_not_through_a_link(
    repo: pytest.Pytester,
) -> None:
    root = repo.path
    (root / "prompts" / "old.yaml").write_text("system_prompt: old prompt\nuser_prompt: u\n")
    commit(root, "an old version beside current")
    # the branch points current.yaml at old.yaml: current@HEAD is still HEAD's current.yaml
    (root / "prompts" / "current.yaml").unlink()
    (root / "prompts" / "current.yaml").symlink_to("old.yaml")

    result = repo.runpytest("--prompt=current", "--compare=current@HEAD", PROVIDER)

    result.assert_outcomes(passed=4)
    assert sorted(calls(root)) == ["old prompt", "old prompt", "old system", "old system"]


def test_a_blob_over_its_bound_is_refused_before_git_inflates_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # half a megabyte of objects can be 512 MiB of zeros: git held the blob whole in its own
    # memory while pytest read its first 16 MiB; its size is asked first now
    from pytest_prompteval.core.errors import PromptevalError
    from pytest_prompteval.core.gitversions import GitRefError
    from pytest_prompteval.core.paths import MAX_FILE_BYTES, MAX_RECORDING_BYTES
    from pytest_prompteval.providers.trusted import TrustedRecordings

    top = tmp_path / "project"
    (top / "prompts").mkdir(parents=True)
    (top / "prompt_recordings").mkdir()
    (top / "prompts" / "big.yaml").write_bytes(b"\0" * (MAX_FILE_BYTES + 1))
    (top / "prompt_recordings" / "r.json").write_bytes(b" " * (MAX_RECORDING_BYTES + 1))
    git(top, "init", "-q", "-b", "main")
    git(top, "add", ".")
    git(top, "commit", "-q", "-m", "large")
    log, wrapper = tmp_path / "calls.log", tmp_path / "bin" / "git"
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\necho "$*" >> {log}\nexec {shutil.which("git")} "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{wrapper.parent}:{os.environ['PATH']}")
    repo = repository(top)
    with pytest.raises(GitRefError, match=r"big.yaml at main is larger than 16,777,216 bytes"):
        repo.read(top / "prompts" / "big.yaml", "main")
    recordings = TrustedRecordings(repo, top / "prompt_recordings", "main")
    (top / "prompt_recordings" / "r.json").write_text("{}")  # not the ref's: read from git
    with pytest.raises(PromptevalError, match="as committed at main: it is larger than 8,388"):
        recordings.content(top / "prompt_recordings" / "r.json")
    assert "cat-file blob" not in log.read_text()
    assert repo.read(top / "prompts" / "none.yaml", "main") is None
