"""Property: whatever a user does to a valid case or prompt file (keys deleted, renamed or
retyped, values of the wrong YAML type, odd unicode, stray characters), collection raises
nothing but our one-line error naming the file and a line."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_prompteval.core.cases import load_case_file
from pytest_prompteval.core.errors import PromptevalError
from pytest_prompteval.core.prompts import load_prompt
from pytest_prompteval.core.yamlload import line_of
from pytest_prompteval.interaction.strategies import Strategy, parse_strategy
from pytest_prompteval.scoring.assertions import parse_assertions
from pytest_prompteval.scoring.code.spec import is_code_case, parse_code_spec

CASES: dict[str, Any] = {
    "description": "valid cases",
    "cases": [
        {
            "id": "prose_001",
            "category": "loops",
            "difficulty": "beginner",
            "tags": ["x86"],
            "threshold": 0.5,
            "samples": 2,
            "input": {"code": "int f();", "asm": ["f:", "  ret"]},
            "vars": {"tone": "dry"},
            "expected_topics": ["loop_optimization"],
            "assert": [{"contains": "loop"}, {"type": "max_length", "value": 500, "weight": 2}],
        },
        {
            "id": "code_001",
            "entry_point": "f",
            "input": {"prompt": "def f(x):"},
            "reference": "def f(x):\n    return x\n",
            "tests": [{"assert": "f(1) == 1"}, {"args": [2], "expected": 2, "tag": "edge"}],
            "properties": {"args": ["integers(-5, 5)"], "examples": 10},
            "timeout": 2,
        },
    ],
}
PROMPT: dict[str, Any] = {
    "name": "v",
    "description": "a valid prompt",
    "system_prompt": "You explain {language}.",
    "user_prompt": "Explain {code}.",
    "assistant_prefill": "Sure:",
    "model_config": {"model": "claude-haiku-4-5", "max_tokens": 100, "temperature": 0.0},
    "assert": [{"not_contains": "sorry"}],
    "strategy": {"name": "refine", "attempts": 2},
}

ODD_TEXT = st.text(
    st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=0, max_size=12
) | st.sampled_from(
    ["", "\u202e", "\x1b[2J", "::error::x", "ß", "\U0001d538", "\ufeff", "..", "skip"]
)
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | ODD_TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(ODD_TEXT, inner, max_size=3),
    max_leaves=6,
)


def _containers(node: Any, out: list[Any]) -> list[Any]:
    if isinstance(node, dict | list):
        out.append(node)
        for child in node.values() if isinstance(node, dict) else node:
            _containers(child, out)
    return out


@st.composite
def mutated(draw: st.DrawFn, base: dict[str, Any]) -> dict[str, Any]:
    """``base`` with one to three edits, each at a container drawn from the whole tree."""
    data = copy.deepcopy(base)
    for _ in range(draw(st.integers(1, 3))):
        target = draw(st.sampled_from(_containers(data, [])))
        if isinstance(target, dict) and target:
            key = draw(st.sampled_from(sorted(target)))
            action = draw(st.sampled_from(["delete", "rename", "retype"]))
            if action == "delete":
                del target[key]
            elif action == "rename":
                target[draw(ODD_TEXT)] = target.pop(key)
            else:
                target[key] = draw(VALUES)
        elif isinstance(target, list) and target:
            index = draw(st.integers(0, len(target) - 1))
            target[index] = draw(VALUES)
        else:
            target_key = draw(ODD_TEXT)
            if isinstance(target, dict):
                target[target_key] = draw(VALUES)
            else:
                target.append(draw(VALUES))
    return data


@st.composite
def scrambled(draw: st.DrawFn, text: str) -> str:
    """The YAML text with a stray character inserted somewhere (breaks indentation, quotes)."""
    at = draw(st.integers(0, len(text)))
    return (
        text[:at]
        + draw(st.sampled_from([" ", ":", "-", "'", '"', "&a", "*a", "\t", "{", "!"]))
        + text[at:]
    )


def _dump(data: dict[str, Any]) -> str:
    return yaml.safe_dump(data, allow_unicode=True, sort_keys=False)


def assert_one_line_error(path: Path, check: Any) -> None:
    try:
        check()
    except PromptevalError as exc:
        message = str(exc)
        assert re.match(rf"{re.escape(str(path))}:\d+: \S", message), message
        assert "\n" not in message, message


def collect_cases(path: Path) -> None:
    """What collection runs on a case file, short of pytest."""
    for case in load_case_file(path).cases:
        if is_code_case(case):
            parse_code_spec(case)
        parse_assertions(case.raw.get("assert"), (case.path, line_of(case.raw, "assert")), "case")


def collect_prompt(path: Path) -> None:
    prompt = load_prompt(path)
    parse_strategy(prompt)
    parse_assertions(prompt.raw.get("assert"), (prompt.path, prompt.line_of("assert")), "prompt")


FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def test_the_valid_files_load(tmp_path: Path) -> None:
    """The files the mutations start from are valid, every field read as written: a
    mutation's error is then the mutation's."""
    (tmp_path / "c.yaml").write_text(_dump(CASES))
    (tmp_path / "v.yaml").write_text(_dump(PROMPT))
    prose, code = load_case_file(tmp_path / "c.yaml").cases
    assert (prose.id, prose.samples, prose.threshold, prose.tags) == ("prose_001", 2, 0.5, ("x86",))
    checks = parse_assertions(prose.raw.get("assert"), (prose.path, None), "case")
    assert [(c.type, c.value, c.weight) for c in checks] == [
        ("contains", "loop", 1.0),
        ("max_length", 500, 2.0),
    ]
    assert not is_code_case(prose) and is_code_case(code)
    spec = parse_code_spec(code)
    assert (spec.entry_point, len(spec.tests), spec.timeout) == ("f", 2, 2.0)
    prompt = load_prompt(tmp_path / "v.yaml")
    assert parse_strategy(prompt) == Strategy("refine", 2)
    prompt_checks = parse_assertions(prompt.raw.get("assert"), (prompt.path, None), "prompt")
    assert [(c.type, c.value) for c in prompt_checks] == [("not_contains", "sorry")]


@FAST
@given(data=mutated(CASES))
def test_mutated_case_files_give_one_line_errors(
    tmp_path_factory: pytest.TempPathFactory, data: dict[str, Any]
) -> None:
    path = tmp_path_factory.mktemp("m") / "c.yaml"
    path.write_text(_dump(data), encoding="utf-8")
    assert_one_line_error(path, lambda: collect_cases(path))


@FAST
@given(data=mutated(PROMPT))
def test_mutated_prompt_files_give_one_line_errors(
    tmp_path_factory: pytest.TempPathFactory, data: dict[str, Any]
) -> None:
    path = tmp_path_factory.mktemp("m") / "v.yaml"
    path.write_text(_dump(data), encoding="utf-8")
    assert_one_line_error(path, lambda: collect_prompt(path))


@FAST
@given(text=scrambled(_dump(CASES)))
def test_scrambled_case_text_gives_one_line_errors(
    tmp_path_factory: pytest.TempPathFactory, text: str
) -> None:
    path = tmp_path_factory.mktemp("m") / "c.yaml"
    path.write_text(text, encoding="utf-8")
    assert_one_line_error(path, lambda: collect_cases(path))


def test_a_mutated_suite_is_a_collection_error_not_a_crash(pytester: pytest.Pytester) -> None:
    broken = copy.deepcopy(CASES)
    broken["cases"][1]["tests"][0] = {"assert": 12}
    broken["cases"][0]["input"] = {"\u202e": [None, {"": 1.5}]}
    pytester.mkdir("prompts").joinpath("v.yaml").write_text(_dump(PROMPT))
    pytester.mkdir("prompt_cases").joinpath("c.yaml").write_text(_dump(broken))
    result = pytester.runpytest("--prompt=v", "--collect-only")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        [
            "prompt_cases/c.yaml:*: case 'code_001', field 'tests[[]0[]]': expected assert: "
            "Python source text"
        ]
    )
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
