"""`prompteval init`: each kind of project runs at once, offline, with plain `pytest`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_prompteval.workflows import init
from pytest_prompteval.workflows.init import KINDS, NOTE

from .conftest import prompteval


def offline() -> dict[str, str]:
    """The environment of a user with no API key (a replay must open no connection)."""
    drop = ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "PYTEST_ADDOPTS", "PROMPTEVAL_RECORD")
    return {k: v for k, v in os.environ.items() if k not in drop}


def run_pytest(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", *args],
        cwd=folder,
        env=offline(),
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_passes_pytest_offline_at_once(tmp_path: Path, kind: str) -> None:
    folder = tmp_path / "project"
    made = prompteval(tmp_path, "init", "project", "--kind", kind)
    assert made.returncode == 0, made.stdout + made.stderr
    assert "not from Claude" in made.stdout
    assert "pytest" in made.stdout  # what to do next
    for name in (".gitignore", ".github/workflows/prompteval.yml", "pytest.ini", "conftest.py"):
        assert (folder / name).is_file(), name
    case_files = sorted((folder / "prompt_cases").glob("*.yaml"))
    assert case_files
    for path in case_files:
        assert path.read_text().startswith(
            "# yaml-language-server: $schema=../schemas/case.schema.json\n"
        )
    for version in ("v1", "v2"):
        text = (folder / "prompts" / f"{version}.yaml").read_text()
        assert text.startswith("# yaml-language-server: $schema=../schemas/prompt.schema.json\n")
    recordings = sorted((folder / "prompt_recordings").glob("*.json"))
    assert recordings
    for path in recordings:
        recording = json.loads(path.read_text())
        assert recording["note"] == NOTE
        assert recording["origin"] == "python:fake_model:answer"
    # the user's first run: no key, every answer replayed; v2 beats v1 and the gates pass
    result = run_pytest(folder, "-p", "no:cacheprovider")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "replayed from recordings" in result.stdout
    assert " passed" in result.stdout
    checked = prompteval(folder, "check-cases")
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_init_overwrites_nothing(tmp_path: Path) -> None:
    (tmp_path / "prompts").mkdir()
    mine = tmp_path / "prompts" / "v1.yaml"
    mine.write_text("user_prompt: mine\n")
    result = prompteval(tmp_path, "init")
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "prompteval: error: prompts/v1.yaml exists; prompteval init overwrites nothing"
    ]
    assert mine.read_text() == "user_prompt: mine\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["prompts"]  # nothing else written


def test_a_planted_link_is_not_written_through(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "pytest.ini").symlink_to(outside)  # dangling: exists() is False
    result = prompteval(tmp_path, "init", "project")
    assert result.returncode == 2
    assert "project/pytest.ini exists" in result.stderr
    assert not outside.exists()


def test_a_linked_folder_is_not_written_into(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "prompts").symlink_to(elsewhere)
    result = prompteval(tmp_path, "init", "project")
    assert result.returncode == 2
    assert "project/prompts is a link" in result.stderr
    assert list(elsewhere.iterdir()) == []
    assert sorted(p.name for p in (tmp_path / "project").iterdir()) == ["prompts"]


def test_a_folder_that_is_a_file_or_cannot_be_written(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("")
    for where in ("afile", "afile/project"):
        result = prompteval(tmp_path, "init", where)
        assert result.returncode == 2
        (line,) = result.stderr.splitlines()
        assert line.startswith("prompteval: error: afile"), line
    (tmp_path / "locked").mkdir(mode=0o500)
    if not os.access(tmp_path / "locked", os.W_OK):  # root may write anywhere
        result = prompteval(tmp_path, "init", "locked")
        assert result.returncode == 2
        (line,) = result.stderr.splitlines()
        assert "cannot write: Permission denied" in line, line


def test_an_unknown_kind_is_a_usage_error(tmp_path: Path) -> None:
    result = prompteval(tmp_path, "init", "--kind", "agnet")
    assert result.returncode == 2
    assert "invalid choice: 'agnet'" in result.stderr
    assert list(tmp_path.iterdir()) == []


class Installed:
    """A distribution as importlib.metadata gives it, with pip's direct_url.json."""

    def __init__(self, direct_url: str | None):
        self.direct_url = direct_url

    def read_text(self, name: str) -> str | None:
        return self.direct_url if name == "direct_url.json" else None


@pytest.mark.parametrize(
    ("direct_url", "uses"),
    [
        (
            '{"url": "https://github.com/acme/pytest-prompteval.git", "vcs_info": '
            '{"vcs": "git", "requested_revision": "v0.1.0", "commit_id": "abc"}}',
            "acme/pytest-prompteval@v0.1.0",
        ),
        (
            '{"url": "https://github.com/acme/pytest-prompteval", "vcs_info": '
            '{"vcs": "git", "commit_id": "0123abc"}}',
            "acme/pytest-prompteval@0123abc",
        ),
        ('{"url": "https://gitlab.example/acme/p", "vcs_info": {"vcs": "git"}}', None),
        ('{"url": "file:///src/pytest-prompteval", "dir_info": {"editable": true}}', None),
        (None, None),
        ("not json", None),
    ],
)
def test_the_workflow_uses_the_action_of_the_repository_pip_installed_from(
    monkeypatch: pytest.MonkeyPatch, direct_url: str | None, uses: str | None
) -> None:
    monkeypatch.setattr(
        "pytest_prompteval.workflows.init.metadata.distribution",
        lambda name: Installed(direct_url),
    )
    assert init.action_ref() == (uses or "your-org/pytest-prompteval@v0.1.0")
    workflow = next(p for p in init.plan("plain") if p.target.name == "prompteval.yml")
    assert f"      - uses: {uses or 'your-org/pytest-prompteval@v0.1.0'}\n" in workflow.text
