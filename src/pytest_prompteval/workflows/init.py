"""``prompteval init [DIR] [--kind K]``: a first project that runs offline at once.

The files come from ``data/init/<kind>/`` and ``data/init/common/`` (package data); case and
prompt files get the ``yaml-language-server`` line that points editors at the schemas it
writes beside them. Nothing is overwritten: every target is checked before the first file
is written, and each is created exclusively. The first recordings are made by the stand-in
model the project holds (``fake_model.py``, a ``python:`` provider), through an ordinary
pytest run, each labelled with a note saying it is not an answer from Claude.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import metadata, resources
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from pytest_prompteval.core.errors import PromptevalError, display

if TYPE_CHECKING:
    from importlib.abc import Traversable  # importlib.resources.abc from Python 3.11

KINDS = ("plain", "structured", "agent", "code", "repo")
#: template names that would be hidden, or taken for the plugin's own files, in the package
RENAMED = {"gitignore": ".gitignore", "workflow.yml": ".github/workflows/prompteval.yml"}
SCHEMA_DIR = "schemas"
PROVIDER = "python:fake_model:answer"
NOTE = "made by fake_model.py, a stand-in written by prompteval init: not an answer from Claude"
#: the recording run: the versions the project's pytest.ini compares
RECORD = ["--prompteval-record=all", f"--prompteval-provider={PROVIDER}"]
_PLACEHOLDER_ACTION = "your-org/pytest-prompteval@v0.1.0"


@dataclass(frozen=True)
class PlannedFile:
    target: PurePosixPath  # relative to the project's folder
    text: str


def _templates(folder: Traversable, prefix: PurePosixPath) -> Iterator[tuple[PurePosixPath, str]]:
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name == "__pycache__":
            continue
        if entry.is_dir():
            yield from _templates(entry, prefix / entry.name)
        else:
            yield prefix / entry.name, entry.read_text(encoding="utf-8")


def _schema_line(target: PurePosixPath) -> str | None:
    """The editor's schema comment for a case or prompt file (a path relative to it)."""
    top = target.parts[0]
    kind = {"prompt_cases": "case", "prompts": "prompt"}.get(top)
    if kind is None or target.suffix not in (".yaml", ".yml"):
        return None
    up = "../" * (len(target.parts) - 1)
    return f"# yaml-language-server: $schema={up}{SCHEMA_DIR}/{kind}.schema.json\n"


def action_ref() -> str:
    """The action as ``uses:`` names it: the repository and revision this plugin was
    installed from, when pip recorded a GitHub one (PEP 610's direct_url.json), else a
    placeholder the workflow's comment says to fill in."""
    try:
        text = metadata.distribution("pytest-prompteval").read_text("direct_url.json")
        origin = json.loads(text or "{}")
    except (metadata.PackageNotFoundError, ValueError):
        return _PLACEHOLDER_ACTION
    url, vcs = str(origin.get("url", "")), origin.get("vcs_info") or {}
    prefix = "https://github.com/"
    revision = vcs.get("requested_revision") or vcs.get("commit_id")
    if vcs.get("vcs") != "git" or not url.startswith(prefix) or not isinstance(revision, str):
        return _PLACEHOLDER_ACTION
    return f"{url.removeprefix(prefix).removesuffix('.git')}@{revision}"


def plan(kind: str) -> list[PlannedFile]:
    """Every file of a project of ``kind``, as it will be written."""
    # the schemas' generation reads the loaders and scoring: not at every command's start
    from pytest_prompteval.workflows.fileschemas import KINDS as SCHEMA_KINDS
    from pytest_prompteval.workflows.fileschemas import render

    if kind not in KINDS:
        raise PromptevalError(f"--kind {kind!r}: expected one of {', '.join(KINDS)}")
    root = resources.files("pytest_prompteval") / "data" / "init"
    found = dict(_templates(root / "common", PurePosixPath()))
    found.update(_templates(root / kind, PurePosixPath()))
    planned = []
    for name, text in found.items():
        target = PurePosixPath(RENAMED.get(str(name), str(name)))
        line = _schema_line(target)
        text = text.replace("{action}", action_ref()) if str(name) == "workflow.yml" else text
        planned.append(PlannedFile(target, (line or "") + text))
    for schema_kind in SCHEMA_KINDS:
        target = PurePosixPath(SCHEMA_DIR, f"{schema_kind}.schema.json")
        planned.append(PlannedFile(target, render(schema_kind)))
    return sorted(planned, key=lambda p: p.target)


def write(folder: Path, planned: list[PlannedFile]) -> None:
    """Write every file, or none when one is there already (or appears meanwhile: each is
    created exclusively, so neither a file nor a planted link is written through)."""
    if os.path.lexists(folder) and not folder.is_dir():
        raise PromptevalError(f"{display(folder)} is not a folder")
    for entry in planned:
        target = folder / entry.target
        if os.path.lexists(target):
            raise PromptevalError(f"{display(target)} exists; prompteval init overwrites nothing")
        for parent in entry.target.parents:  # a linked folder would take the files elsewhere
            if (folder / parent).is_symlink():
                raise PromptevalError(
                    f"{display(folder / parent)} is a link; prompteval init writes into folders "
                    "of its own"
                )
    for entry in planned:
        target = folder / entry.target
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(target, "x", encoding="utf-8") as handle:
                handle.write(entry.text)
        except FileExistsError:
            raise PromptevalError(
                f"{display(target)} exists; prompteval init overwrites nothing"
            ) from None
        except OSError as exc:
            raise PromptevalError(f"cannot write: {exc.strerror}", target) from None


def record(folder: Path) -> subprocess.CompletedProcess[str]:
    """The first recordings: the project's own suite, its answers from the stand-in."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS", "ANTHROPIC_API_KEY")}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *RECORD,
         f"--prompteval-record-note={NOTE}"],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )  # fmt: skip


def next_steps(folder: Path, kind: str) -> list[str]:
    here = "" if folder.resolve() == Path.cwd().resolve() else f"cd {display(folder)} && "
    return [
        f"wrote a project ({kind}) in {display(folder)}; its first recordings come from "
        "fake_model.py, not from Claude",
        "next:",
        f"  {here}pytest                      # v2 against v1, replayed offline",
        "  edit prompts/v2.yaml, add cases to prompt_cases/, then record Claude's answers:",
        "  ANTHROPIC_API_KEY=sk-... pytest --prompteval-record=all",
        "  prompteval check-cases            # check cases and prompts (a pre-commit hook too)",
        "  .github/workflows/prompteval.yml  # review prompt changes on pull requests",
    ]
