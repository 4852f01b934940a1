from __future__ import annotations

import json
import subprocess
import sys

import pytest

from .conftest import copy_example_suite


def run(pytester: pytest.Pytester, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest_prompteval.cli", *args],
        cwd=pytester.path,
        capture_output=True,
        text=True,
        check=False,
    )


def test_list_shows_cases_and_prompt_versions(pytester: pytest.Pytester) -> None:
    copy_example_suite(pytester)
    done = run(pytester, "list")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("prompt_cases/basic_optimizations.yaml: Everyday compiler")
    assert lines[1].split() == ["sum_loop_001", "loop_optimization", "beginner", "good_example"]
    assert any(line.split()[:2] == ["current", "claude-haiku-4-5"] for line in lines)

    data = json.loads(run(pytester, "list", "--json").stdout)
    assert [p["version"] for p in data["prompts"]] == ["current", "v1_baseline"]
    assert sum(len(f["cases"]) for f in data["case_files"]) == 5


def test_list_reports_a_bad_file_with_its_line(pytester: pytest.Pytester) -> None:
    pytester.mkdir("prompt_cases").joinpath("bad.yaml").write_text("cases:\n- id: [x]\n")
    done = run(pytester, "list")
    assert done.returncode == 2
    assert done.stderr.startswith("prompteval: error: prompt_cases/bad.yaml:2: case '#1', field")


def test_a_project_that_turns_warnings_into_errors_can_run_the_commands(
    pytester: pytest.Pytester,
) -> None:
    """Our plugin is imported before the command's pytest starts: its assertion rewriting
    would warn that the plugin cannot be rewritten, an error under ``filterwarnings``."""
    copy_example_suite(pytester)
    pytester.makeini("[pytest]\nfilterwarnings = error\n")
    done = run(pytester, "list")
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith("prompt_cases/basic_optimizations.yaml: Everyday compiler")
