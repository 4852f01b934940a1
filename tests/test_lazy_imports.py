"""A pytest process loads the plugin's modules that its run uses, and no others: each module
costs its import (dataclasses, patterns) in every process, and a repository task is often
run one item per process."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: what a prompt run that asks for none of it does not load: the comparison (--compare),
#: the Markdown (--prompteval-markdown, GitHub's step summary), the results' history
#: (--prompteval-results, --prompteval-baseline), the judges' calibration (min_kappa), the
#: estimate, the batch, --prompteval-affected, the environments' build under xdist, the
#: fixture's module, trusted recordings, a code case's runner and a repository's file state
NOT_LOADED = (
    "pytest_prompteval.core.history",
    "pytest_prompteval.providers.trusted",
    "pytest_prompteval.pytest.batch",
    "pytest_prompteval.pytest.estimating",
    "pytest_prompteval.pytest.fixture",
    "pytest_prompteval.report.compare",
    "pytest_prompteval.report.markdown",
    "pytest_prompteval.sandbox.filestate",
    "pytest_prompteval.scoring.code.measure",
    "pytest_prompteval.scoring.code.runner",
    "pytest_prompteval.workflows.affected",
    "pytest_prompteval.workflows.calibrate",
    "pytest_prompteval.workflows.envs",
)

#: what only a repository case (or a code case's sandbox) needs, not loaded by a prompt run
#: without one
REPOSITORY = (
    "pytest_prompteval.interaction.repository",
    "pytest_prompteval.sandbox",
    "pytest_prompteval.sandbox.environments",
    "pytest_prompteval.sandbox.provider",
    "pytest_prompteval.sandbox.workspace",
    "pytest_prompteval.scoring.repo",
    "pytest_prompteval.scoring.repoids",
    "pytest_prompteval.scoring.testrun",
)

LOADED = """
import sys

def pytest_unconfigure(config):
    print("LOADED", sorted(n for n in sys.modules if n.startswith("pytest_prompteval.")))
"""


def loaded(result: pytest.RunResult) -> set[str]:
    (line,) = [line for line in result.outlines if line.startswith("LOADED ")]
    return set(ast.literal_eval(line.removeprefix("LOADED ")))


@pytest.fixture
def structured(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """examples/structured: a plain prompt project, replayed from its recordings."""
    shutil.copytree(ROOT / "examples" / "structured", pytester.path, dirs_exist_ok=True)
    pytester.makeconftest(LOADED)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    return pytester


def test_a_prompt_run_loads_none_of_what_it_does_not_ask_for(structured: pytest.Pytester) -> None:
    result = structured.runpytest_subprocess(
        "--prompt=v2", "--prompteval-results=none", "-s", "-p", "no:randomly"
    )
    result.assert_outcomes(passed=13, failed=1)
    assert sorted(loaded(result) & {*NOT_LOADED, *REPOSITORY}) == []


def test_what_a_run_asks_for_is_loaded_when_it_is_used(structured: pytest.Pytester) -> None:
    result = structured.runpytest_subprocess(
        "--prompt=v2", "--compare=v1", "--prompteval-markdown=summary.md", "-s"
    )
    result.assert_outcomes(passed=22, failed=6)
    names = loaded(result)
    for name in ("report.compare", "report.markdown", "core.history"):
        assert f"pytest_prompteval.{name}" in names
    assert "regressions" in (structured.path / "summary.md").read_text()


def test_the_fixture_loads_its_module_when_a_test_uses_it(structured: pytest.Pytester) -> None:
    structured.makepyfile(
        test_inline="""
        def test_inline(prompteval):
            assert type(prompteval).__module__ == "pytest_prompteval.pytest.fixture"
        """
    )
    result = structured.runpytest_subprocess("test_inline.py", "-s")
    result.assert_outcomes(passed=1)
    assert "pytest_prompteval.pytest.fixture" in loaded(result)
