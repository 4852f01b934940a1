"""The CI recipe (examples/ci/github-actions.yml) end to end on a temporary git repository:
main has its recordings committed, and each pull request runs the recipe's own command line,
read from the workflow file, against origin/main."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import tempfile
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest
import yaml
from markdown_it import MarkdownIt

from pytest_prompteval import __version__
from pytest_prompteval.report.gates import GATE_FAILED, NO_VERDICT, PASSED
from pytest_prompteval.testing import AnthropicServer

from .conftest import ROOT, git, item_results, prompteval

RECIPE = ROOT / "examples" / "ci" / "github-actions.yml"
MAIN_PROMPT = "user_prompt: Explain {n}.\n"
CHANGED_PROMPT = "user_prompt: Briefly explain {n}.\n"


def recipe_args() -> list[str]:
    """The gate run's pytest options, as the workflow's step runs them: the action's own
    script (action.yml), given the step's inputs on a pull request into main, run with an
    interpreter that only writes down its arguments."""
    ((script, env),) = action_script_env(recipe_step()["with"])
    with tempfile.TemporaryDirectory() as folder:
        log = Path(folder) / "calls"
        stub = Path(folder) / "python"
        stub.write_text('#!/bin/sh\nprintf "%s\\n" "$@" >> "$LOG"; echo ---- >> "$LOG"\n')
        stub.chmod(0o755)
        subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
            env={**env, "PATH": os.environ["PATH"], "PYTHON": str(stub), "LOG": str(log),
                 "GITHUB_BASE_REF": "main", "GITHUB_OUTPUT": str(Path(folder) / "out")},
            check=True,
        )  # fmt: skip
        (gate_run,) = [c for c in log.read_text().split("----\n") if c]
    command = gate_run.splitlines()
    assert command[:2] == ["-m", "pytest"]
    return command[2:]


def recipe_step() -> dict[str, Any]:
    workflow = yaml.safe_load(RECIPE.read_text())
    steps = workflow["jobs"]["prompteval"]["steps"]
    (step,) = [s for s in steps if "pytest-prompteval@" in s.get("uses", "")]
    return dict(step)


def action_script_env(given: dict[str, Any]) -> list[tuple[str, dict[str, str]]]:
    """The action's scripts that run pytest, each with its environment from ``given``
    inputs over the action's defaults."""
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    inputs = {k: str(v.get("default", "")) for k, v in action["inputs"].items()}
    inputs.update({k: str(v) for k, v in given.items()})
    found = []
    for step in action["runs"]["steps"]:
        if "-m pytest" not in step.get("run", ""):
            continue
        env = {}
        for name, value in step.get("env", {}).items():
            match = re.fullmatch(r"\$\{\{ inputs\.([\w-]+) \}\}", value)
            assert match, value
            env[name] = inputs[match.group(1)]
        found.append((step["run"], env))
    return found


def answer(request: dict[str, Any]) -> str:
    # the changed prompt loses cases 1 and 2: their answers miss the word the cases assert
    text = json.dumps(request)
    broken = "Briefly" in text and ("explain 1." in text or "explain 2." in text)
    return "nothing useful" if broken else "a loop"


def commit(root: Path, message: str) -> None:
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)


@pytest.fixture
def repository(
    pytester: pytest.Pytester, anthropic_server: AnthropicServer, monkeypatch: pytest.MonkeyPatch
) -> pytest.Pytester:
    """main: prompts/current.yaml, 8 cases and their 5 samples recorded (with a key), as
    origin/main; the checkout is a pull request's branch off it."""
    anthropic_server.responder = answer
    root = pytester.path
    pytester.makeini("[pytest]\n")
    pytester.mkdir("prompts").joinpath("current.yaml").write_text(MAIN_PROMPT)
    cases = "".join(
        f"- id: c{i:02d}\n  input: {{n: {i}}}\n  threshold: 0\n  assert: [{{contains: loop}}]\n"
        for i in range(8)
    )
    pytester.mkdir("prompt_cases").joinpath("c.yaml").write_text("cases:\n" + cases)
    recorded = pytester.runpytest("--prompt=current", "--prompteval-samples=5")
    recorded.assert_outcomes(passed=40)
    git(root, "init", "-q", "-b", "main")
    (root / ".gitignore").write_text("prompt_results/\n")
    commit(root, "main")
    git(root, "update-ref", "refs/remotes/origin/main", "main")
    git(root, "checkout", "-q", "-b", "pull-request")
    monkeypatch.chdir(root)
    return pytester


def without_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """A pull request from a fork: the repository's secret is not there."""
    monkeypatch.delenv("ANTHROPIC_API_KEY")


def markdown_tables(text: str) -> list[list[list[str]]]:
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    tables: list[list[list[str]]] = []
    for i, token in enumerate(tokens):
        if token.type == "table_open":
            tables.append([])
        elif token.type == "tr_open":
            tables[-1].append([])
        elif token.type in ("th_open", "td_open"):
            tables[-1][-1].append(tokens[i + 1].content)
    return tables


def test_a_pull_request_that_forgets_its_recordings_is_no_verdict_with_every_output(
    repository: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Once: TypeError in the Markdown's versions table (pass rate None), exit 1, no JUnit,
    # no step summary, no terminal summary.
    root = repository.path
    (root / "prompts" / "current.yaml").write_text(CHANGED_PROMPT)
    commit(root, "a shorter prompt, recordings forgotten")
    without_key(monkeypatch)
    step_summary = root / "step_summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step_summary))

    result = repository.runpytest(*recipe_args(), "--junitxml=junit.xml")

    assert result.ret == NO_VERDICT
    output = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in output and "INTERNALERROR" not in output
    assert "not written" not in output
    result.stdout.fnmatch_lines(
        [
            "*prompteval summary*",
            "current * 40 * 0 * 0 * 40 * 0 * - * - * - *",
            "current@origin/main * 40 * 40 * 0 * 0 * 0 * 100.0% *",
        ]
    )
    suite = ElementTree.parse(root / "junit.xml").getroot()[0]
    assert (suite.get("errors"), suite.get("failures"), suite.get("tests")) == ("40", "0", "80")
    properties = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert properties["prompteval.current.pass_rate"] == ""  # none ran: no rate
    assert properties["prompteval.current.errored"] == "40"
    for written in (step_summary, root / "prompteval.md"):
        text = written.read_text()
        assert text.startswith("## ⚠️ prompteval: 40 items errored, not scored")
        versions = markdown_tables(text)[0]
        assert versions[0][:5] == ["version", "items", "passed", "pass rate", "mean score"]
        assert versions[1][:5] == ["`current`", "40", "0", "-", "-"]
        assert versions[2][:4] == ["`current@origin/main`", "40", "40", "100.0%"]
        assert all(len(row) == len(versions[0]) for row in versions)
        assert "missing_recording | 40" in text


def test_a_pull_request_with_a_real_regression_fails_naming_the_cases(
    repository: pytest.Pytester, anthropic_server: AnthropicServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = repository.path
    (root / "prompts" / "current.yaml").write_text(CHANGED_PROMPT)
    # the author records the new answers with a key and commits them
    repository.runpytest("--prompt=current", "--prompteval-samples=5")
    commit(root, "a shorter prompt, with its recordings")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(root / "step_summary.md"))

    # the repository's own pull request: the secret is there, so the recordings main lacks
    # are asked again rather than trusted
    # xunit1: the JUnit flavour that writes each testcase's file and line
    result = repository.runpytest(
        *recipe_args(), "--junitxml=junit.xml", "-o", "junit_family=xunit1"
    )

    assert result.ret == GATE_FAILED
    lines = [
        "prompteval gate failed: current newly fails 2 cases that pass under "
        "current@origin/main (more than prompteval_max_new_failures 0): "
        "c.yaml::c01 (prompt_cases/c.yaml:6) 5/5 → 0/5, "
        "c.yaml::c02 (prompt_cases/c.yaml:10) 5/5 → 0/5",
    ]
    result.stdout.fnmatch_lines(
        [
            "*current vs current@origin/main: 2 regressions, 0 improvements*",
            "  regressions (2): c.yaml::c01 (prompt_cases/c.yaml:6) 5/5 → 0/5, c.yaml::c02 "
            "(prompt_cases/c.yaml:10) 5/5 → 0/5",
            *lines,
        ]
    )
    markdown = (root / "prompteval.md").read_text()
    # which gates decided, never "no significant difference" beside "gate failed"
    assert markdown.startswith(
        "## ❌ prompteval: gate failed: 2 cases newly fail (max 0); the pass@1 difference is "
        "not significant, p=0.5\n"
    )
    assert "**no significant difference" not in markdown
    for case, line in (("c01", 6), ("c02", 10)):
        assert (
            f"- [`{case}`](prompt_cases/c.yaml#L{line}) `prompt_cases/c.yaml:{line}` 5/5 → 0/5: "
            "failed assert contains: expected: contains 'loop'"
        ) in markdown
    assert "current newly fails 2 cases" in markdown
    assert markdown == (root / "step_summary.md").read_text()
    suite = ElementTree.parse(root / "junit.xml").getroot()[0]
    # JUnit gives the line the Markdown links: the case's own
    at = {t.get("name"): t.get("line") for t in suite.iter("testcase")}
    assert at["c01[current-s0]"] == "6" and at["c02[current@origin/main-s4]"] == "10"
    # its 10 failing samples are failures (the recipe sets no min_pass)
    assert (suite.get("failures"), suite.get("skipped")) == ("10", "0")
    assert {t.get("name") for t in suite.iter("testcase") if t.find("failure") is not None} == {
        f"c0{case}[current-s{sample}]" for case in (1, 2) for sample in range(5)
    }


def test_a_harmless_pull_request_passes_without_a_key(
    repository: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = repository.path
    # a comment in the prompt file: every case runs again, every request is main's
    (root / "prompts" / "current.yaml").write_text("# reviewed\n" + MAIN_PROMPT)
    commit(root, "a comment")
    without_key(monkeypatch)

    result = repository.runpytest(*recipe_args())

    assert result.ret == PASSED
    result.stdout.fnmatch_lines(["*current vs current@origin/main: 0 regressions*"])
    assert (root / "prompteval.md").read_text().startswith("## ✅ prompteval: gates passed")


def test_pruning_keeps_every_recording_the_recipe_reads(
    repository: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = repository.path
    (root / "prompts" / "current.yaml").write_text(CHANGED_PROMPT)
    repository.runpytest("--prompt=current", "--prompteval-samples=5")
    # and a case the pull request removes: its recordings are stale under both versions
    cases = root / "prompt_cases" / "c.yaml"
    cases.write_text(cases.read_text().split("- id: c07")[0])
    commit(root, "a shorter prompt, with its recordings; c07 removed")
    run = repository.runpytest(*recipe_args())
    used = {r["recording"] for r in item_results(run) if r["recording"]}
    assert len(used) == 70  # 7 cases x 5 samples x 2 versions

    # the recipe's own samples and comparison, as its comment says to prune
    (samples,) = [a for a in recipe_args() if a.startswith("--prompteval-samples=")]
    dry = prompteval(
        root, "recordings", "--prune", "--dry-run", "--compare=current@origin/main", samples
    )

    assert dry.returncode == 0, dry.stderr
    stale = {line.split(": ")[0] for line in dry.stdout.splitlines() if ".json: " in line}
    assert stale, dry.stdout  # c07's recordings: 5 samples x 2 prompt texts
    assert len(stale) == 10 and stale.isdisjoint(used), dry.stdout
    assert "would remove 10 stale recordings from prompt_recordings, kept 70" in dry.stdout


def test_the_recipe_installs_the_plugin_from_its_repository_pinned_to_this_version() -> None:
    """The plugin is on no package index: the workflow uses the plugin's own action at a
    release tag, which installs the plugin from that same checkout."""
    assert re.fullmatch(
        rf"[\w.-]+/pytest-prompteval@v{re.escape(__version__)}", recipe_step()["uses"]
    )
    text = RECIPE.read_text()
    assert "pip install" not in text
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    (install,) = [s for s in action["runs"]["steps"] if "pip install" in s.get("run", "")]
    assert shlex.split(install["run"]) == ["$PYTHON", "-m", "pip", "install", "$ACTION_PATH"]
    assert install["env"]["ACTION_PATH"] == "${{ github.action_path }}"
