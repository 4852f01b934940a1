"""`prompteval check-cases FILE...` (the pre-commit hook): the files named, checked as
collection checks them, one line per problem naming file and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import prompteval

SCORER = """
import pytest_prompteval


@pytest_prompteval.scorer("mine")
def mine(case, request, response):
    return 1.0
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "conftest.py").write_text(SCORER)
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "v1.yaml").write_text("user_prompt: x\nassert: [{mine: true}]\n")
    (tmp_path / "prompts" / "v2.yaml").write_text("user_prompt: y\n")
    (tmp_path / "prompt_cases").mkdir()
    for name in ("a", "b"):
        (tmp_path / "prompt_cases" / f"{name}.yaml").write_text(
            f"cases:\n- id: {name}1\n  input: {{}}\n  assert: [{{contains: x}}]\n"
        )
    return tmp_path


def test_the_files_named_pass(project: Path) -> None:
    result = prompteval(project, "check-cases", "prompt_cases/a.yaml", "prompts/v1.yaml")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "1 case files, 1 prompt versions: valid\n"


def test_a_misspelt_field_is_one_line_with_its_file_and_line(project: Path) -> None:
    (project / "prompt_cases" / "a.yaml").write_text(
        "cases:\n- id: a1\n  input: {}\n  assertions: [{contains: x}]\n"
    )
    (project / "prompts" / "v2.yaml").write_text("user_prompt: y\nassert: [{contians: x}]\n")
    result = prompteval(project, "check-cases", "prompt_cases/a.yaml", "prompts/v2.yaml")
    assert result.returncode == 2
    lines = result.stderr.splitlines()
    assert lines[0] == (
        "prompteval: error: prompt_cases/a.yaml:4: case 'a1': unknown field 'assertions'; "
        "did you mean 'assert'?"
    )
    assert lines[1].startswith(
        "prompteval: error: prompts/v2.yaml:2: prompt 'v2', assert[0]: unknown assertion or "
        "scorer 'contians'; did you mean 'contains'?; known: "
    )
    assert "mine" in lines[1]  # the project's own scorer is known
    assert lines[2:] == ["prompteval: 2 problem(s) found"]


def test_problems_of_files_not_named_are_left_to_their_own_check(project: Path) -> None:
    (project / "prompt_cases" / "b.yaml").write_text("cases:\n- id: b1\n  inptu: {}\n")
    (project / "prompts" / "v2.yaml").write_text("usr_prompt: y\n")
    result = prompteval(project, "check-cases", "prompt_cases/a.yaml", "prompts/v1.yaml")
    assert result.returncode == 0, result.stderr
    # and the whole project's check still sees them
    result = prompteval(project, "check-cases")
    assert result.returncode == 2
    assert "prompts/v2.yaml:1: unknown field 'usr_prompt'" in result.stderr


def test_a_file_that_is_not_there_or_not_yaml(project: Path) -> None:
    (project / "prompt_cases" / "notes.md").write_text("# notes\n")
    result = prompteval(project, "check-cases", "prompt_cases/c.yaml", "prompt_cases/notes.md")
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "prompteval: error: prompt_cases/c.yaml: no such file",
        "prompteval: error: prompt_cases/notes.md: expected a .yaml or .yml file",
        "prompteval: 2 problem(s) found",
    ]


def test_the_prompt_directory_of_the_ini_is_checked(project: Path) -> None:
    # check-cases once read prompts/ whatever ini prompteval_prompts said
    (project / "pytest.ini").write_text("[pytest]\nprompteval_prompts = versions\n")
    (project / "prompts").rename(project / "versions")
    (project / "versions" / "v2.yaml").write_text("usr_prompt: y\n")
    for args in ((), ("versions/v2.yaml",)):
        result = prompteval(project, "check-cases", *args)
        assert result.returncode == 2, result.stdout
        assert (
            "prompteval: error: versions/v2.yaml:1: unknown field 'usr_prompt'; did you mean "
            "'user_prompt'?" in result.stderr.splitlines()
        )
