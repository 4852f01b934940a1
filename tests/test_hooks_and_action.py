"""The pre-commit hooks (.pre-commit-hooks.yaml) and the GitHub Action (action.yml) name
real commands and options, and the hook's file pattern picks case files and prompt versions."""

from __future__ import annotations

import re
import shlex
from typing import Any

import yaml

from pytest_prompteval.cli import build_parser
from pytest_prompteval.engine.settings import SETTINGS

from .conftest import ROOT

OPTIONS = {o for s in SETTINGS if s.option for o in (s.option, *s.aliases)}


def commands() -> set[str]:
    (subparsers,) = [a for a in build_parser()._actions if a.dest == "command"]
    return set(subparsers.choices)  # type: ignore[arg-type]


def hooks() -> list[dict[str, Any]]:
    loaded: list[dict[str, Any]] = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    return loaded


def test_each_hook_runs_check_cases_on_case_and_prompt_files() -> None:
    assert {h["id"] for h in hooks()} == {
        "prompteval-check-cases",
        "prompteval-check-cases-system",
    }
    for hook in hooks():
        program, command = shlex.split(hook["entry"])
        assert program == "prompteval" and command in commands()
        assert hook.get("pass_filenames", True)
        pattern = re.compile(hook["files"])
        for path in (
            "prompt_cases/a.yaml",
            "prompt_cases/sub/b.yml",
            "prompts/v2.yaml",
            "app/prompts/v1.yml",
        ):
            assert pattern.search(path), path
        for path in ("prompts/notes.md", "src/app.yaml", "prompts/old/v0.yaml", "ci.yaml"):
            assert not pattern.search(path), path


def test_the_action_names_real_options_and_its_own_inputs() -> None:
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    scripts = "\n".join(s.get("run", "") for s in action["runs"]["steps"])
    named = set(re.findall(r"--prompt[\w-]*|--compare", scripts))
    assert named and named <= OPTIONS, named - OPTIONS
    text = (ROOT / "action.yml").read_text()
    used = set(re.findall(r"inputs\.([\w-]+)", text))
    assert used == set(action["inputs"]), used ^ set(action["inputs"])
    # inputs reach the scripts through the environment, never spliced into their text
    assert "${{" not in scripts
    uploads = [s for s in action["runs"]["steps"] if "upload-artifact" in s.get("uses", "")]
    (upload,) = uploads
    paths = upload["with"]["path"]
    assert "prompteval.md" in paths and "prompteval.html" in paths
    assert "--prompteval-markdown=prompteval.md" in scripts
    assert "--prompteval-html=prompteval.html" in scripts
    assert "GITHUB_STEP_SUMMARY" in scripts


def test_init_writes_a_workflow_that_uses_the_action() -> None:
    workflow = yaml.safe_load(
        (ROOT / "src/pytest_prompteval/data/init/common/workflow.yml")
        .read_text()
        .replace("{action}", "your-org/pytest-prompteval@v0.1.0")
    )
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    (step,) = [s for s in workflow["jobs"]["prompteval"]["steps"] if "prompteval@" in s["uses"]]
    assert set(step["with"]) <= set(action["inputs"])
