"""The documentation: the reference pages name everything the code accepts, the site builds
offline and strictly, and the README stays a short front door whose commands are CI's."""

from __future__ import annotations

import dataclasses
import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
import yaml

from pytest_prompteval.core import result as results
from pytest_prompteval.core.cases import CASE_FIELDS, FILE_FIELDS
from pytest_prompteval.core.envspec import ENVIRONMENT_KEYS
from pytest_prompteval.core.prompts import PROMPT_FIELDS
from pytest_prompteval.engine.settings import SETTINGS
from pytest_prompteval.interaction.agent import RULE_KEYS, SIMULATOR_KEYS, TOOL_KEYS
from pytest_prompteval.report.gates import GATE_FAILED, NO_VERDICT, PASSED
from pytest_prompteval.scoring import assertions

from .conftest import ROOT

DOCS = ROOT / "docs"


@pytest.fixture(scope="module")
def reference() -> ModuleType:
    """The mkdocs hook that generates the reference, imported as mkdocs imports it."""
    spec = importlib.util.spec_from_file_location("reference", DOCS / "hooks" / "reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def page(reference: ModuleType, name: str) -> str:
    """A reference page as the site shows it: its markers replaced by the generated text."""
    text = (DOCS / "reference" / name).read_text()
    assert reference.MARKER.search(text), f"{name} generates nothing"
    return str(reference.expand(text))


def named(text: str, name: str) -> bool:
    return f"`{name}`" in text or f"`{name} " in text


def test_every_option_ini_key_and_variable_is_in_the_settings_reference(
    reference: ModuleType,
) -> None:
    text = page(reference, "settings.md")
    names = [n for s in SETTINGS for n in (s.option, *s.aliases, s.ini, s.env) if n is not None]
    assert len(names) > 60
    assert [n for n in names if not named(text, n)] == []
    # a value's bounds come from its parser's own message
    assert "a whole number from 1 to 256" in text
    assert "a number > 0 and <= 300" in text


def test_every_case_and_prompt_field_and_assertion_is_in_the_files_reference(
    reference: ModuleType,
) -> None:
    text = page(reference, "files.md")
    names = {
        *CASE_FIELDS,
        *FILE_FIELDS,
        *PROMPT_FIELDS,
        *assertions.BUILTIN_TYPES,
        *assertions.OPTIONS,
        *(o for options in assertions.TYPE_OPTIONS.values() for o in options),
        *assertions.FIELD_KEYS,
        *TOOL_KEYS,
        *RULE_KEYS,
        *SIMULATOR_KEYS,
        *ENVIRONMENT_KEYS,
    }
    assert sorted(n for n in names if not named(text, n)) == []


def test_every_exit_code_is_in_the_reference(reference: ModuleType) -> None:
    text = page(reference, "exit-codes.md")
    rows = re.findall(r"^\| (\d+) \| `(\w+)`", text, re.MULTILINE)
    codes = {name: int(code) for code, name in rows}
    assert {e.name: int(e) for e in pytest.ExitCode}.items() <= codes.items()
    assert (codes["OK"], codes["TESTS_FAILED"], codes["NO_VERDICT"]) == (
        PASSED,
        GATE_FAILED,
        NO_VERDICT,
    )
    # the CI guide's table of gates mode, written by hand
    guide = (DOCS / "guides" / "ci.md").read_text()
    assert f"| {NO_VERDICT} | errors prevented a verdict" in guide


def test_every_results_field_is_in_the_reference(reference: ModuleType) -> None:
    text = page(reference, "results.md")
    nested = (
        results.ExecutionResult,
        results.CheckResult,
        results.RepoResult,
        results.Trajectory,
        results.Step,
        results.ToolCall,
    )
    names = [f.name for f in dataclasses.fields(results.ItemResult)]
    names += ["judge_" + f.name for f in dataclasses.fields(results.JudgeResult)]
    names += [f.name for cls in nested for f in dataclasses.fields(cls)]
    internal = {"judge", "execution", "extra"}  # flattened or kept as they came
    assert [n for n in names if n not in internal and not named(text, n)] == []


def test_every_command_and_its_options_are_in_the_reference(reference: ModuleType) -> None:
    text = page(reference, "commands.md")
    for name, _, parser in reference._subcommands(reference.build_parser()):
        assert f"## `prompteval {name}`" in text
        for action in parser._actions:
            for option in action.option_strings:
                if option not in ("-h", "--help"):
                    assert option in text, (name, option)


def test_a_name_the_code_has_and_the_reference_does_not_describe_stops_the_build(
    reference: ModuleType,
) -> None:
    words = {"id": "the case's id"}
    assert reference.described(["id"], words, "case fields") == [("id", "the case's id")]
    with pytest.raises(reference.Undescribed, match=r"describe \['kind'\]"):
        reference.described(["id", "kind"], words, "case fields")
    with pytest.raises(reference.Undescribed, match=r"\['id'\] described .* not in the code"):
        reference.described([], words, "case fields")


def nav_pages(node: object) -> list[str]:
    if isinstance(node, str):
        return [node] if node.endswith(".md") else []
    if isinstance(node, dict):
        return [p for value in node.values() for p in nav_pages(value)]
    if isinstance(node, list):
        return [p for value in node for p in nav_pages(value)]
    return []


def test_every_page_is_in_the_navigation() -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    pages = sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md"))
    assert sorted(nav_pages(config["nav"])) == pages
    assert config["theme"]["font"] is False  # no Google Fonts: the build stays offline


def test_the_site_builds_strictly_without_external_assets(tmp_path: Path) -> None:
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "NO_MKDOCS_2_WARNING": "1"},
    )
    assert built.returncode == 0, built.stderr
    html = (tmp_path / "reference" / "settings" / "index.html").read_text()
    assert "prompteval_threshold" in html and "<!-- reference:" not in html
    external = re.compile(r"<(?:link|script|img)\b[^>]*(?:href|src)=\"(?:https?:)?//")
    pages = list(tmp_path.rglob("*.html"))
    assert pages and [p for p in pages if external.search(p.read_text())] == []


def readme() -> str:
    return (ROOT / "README.md").read_text()


def test_the_readme_is_a_front_door() -> None:
    assert len(readme().splitlines()) <= 250


def test_the_readme_commands_are_what_ci_runs() -> None:
    """The two set-up commands, unchanged, and .ci/run running each of their steps."""
    first = (
        "python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/pytest prompt_cases "
        "--prompt=current --compare v1_baseline"
    )
    second = "python3 -m venv .venv && .venv/bin/pip install -e '.[test]' && .venv/bin/pytest -n 2"
    lines = readme().splitlines()
    assert first in lines and second in lines
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert (
        "env -u ANTHROPIC_API_KEY .venv/bin/pytest prompt_cases --prompt=current --compare "
        "v1_baseline"
    ) in ci
    assert "env -u ANTHROPIC_API_KEY .venv/bin/pytest -n 2" in ci
    assert ".venv/bin/python -m pip install --quiet -e '.[test]'" in ci
    assert any(".venv/bin/mkdocs build --strict" in line for line in ci)


def test_the_readme_links_resolve_on_github() -> None:
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", readme())
    local = [link for link in links if "://" not in link]
    assert len(local) > 20
    assert [link for link in local if not (ROOT / link).exists()] == []


ANSWER = """
def answer(request, **context):
    return "A loop optimization: the loop walks rdi through the array (add eax, [rdi])."
"""


def test_the_readme_example_runs(pytester: pytest.Pytester) -> None:
    """The README's prompt version and case, as written there, pass on an answer that
    covers them (a python: provider standing in for Claude)."""
    blocks = re.findall(r"```yaml\n# (\S+?):[^\n]*\n(.*?)```", readme(), re.DOTALL)
    assert [path for path, _ in blocks] == ["prompts/current.yaml", "prompt_cases/loops.yaml"]
    for path, text in blocks:
        target = pytester.path / path
        target.parent.mkdir(exist_ok=True)
        target.write_text(text)
    pytester.makepyfile(app=ANSWER)
    pytester.makeini("[pytest]\npythonpath = .\n")
    result = pytester.runpytest("--prompt=current", "--prompteval-provider=python:app:answer")
    result.assert_outcomes(passed=1)
