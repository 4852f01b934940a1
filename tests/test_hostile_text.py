"""Hostile text (#22): regular expressions over answers and project files run in linear time,
case and prompt files cannot make a huge request or YAML document, and text from files and
answers cannot control the terminal, forge a CI annotation or hide a step summary."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import pytest_prompteval
from pytest_prompteval.core import patterns
from pytest_prompteval.scoring import assertions, automatic, code
from pytest_prompteval.scoring.assertions import Assertion, Observed, check_simple
from pytest_prompteval.scoring.code import CodeSpec, extract_code

SRC = Path(pytest_prompteval.__file__).parent

# Every use of Python's ``re`` left in the plugin, audited: none can take more than linear
# time (anchored or single-character classes, a fixed-length digest, literal alternatives).
# Anything that reads an answer or a project file is on RE2 (core/patterns).
AUDITED_RE = {
    "core/paths.py": 1,  # NAME: anchored, one class repeated
    "core/safetext.py": 2,  # single characters and a line start
    "core/templates.py": 1,  # literal braces around one identifier
    "providers/labels.py": 1,  # 64 hex digits or nothing, fullmatch
    "providers/anthropic.py": 2,  # the API's error messages: literal alternatives
}


def _re_calls(path: Path) -> int:
    tree = ast.parse(path.read_text())
    return sum(
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "re"
        and node.func.attr != "escape"
        for node in ast.walk(tree)
    )


def test_every_python_regex_left_in_the_plugin_is_audited() -> None:
    found = {
        str(path.relative_to(SRC)): n
        for path in sorted(SRC.rglob("*.py"))
        if (n := _re_calls(path))
    }
    assert found == AUDITED_RE


def test_the_patterns_run_on_answers_are_compiled_by_re2() -> None:
    re2_type = type(patterns.pattern("x"))
    for compiled in (
        automatic._WORD,
        automatic._SENTENCE_END,
        automatic._ASM_MNEMONIC,
        code._FENCE,
        code._definition("f"),
        assertions._FENCE,
    ):
        assert type(compiled) is re2_type


# Inputs a backtracking engine needs hours (or for ever) for; RE2 reads each once.
MEGA = 1_000_000


def test_a_run_of_exclamation_marks_is_scored() -> None:
    from pytest_prompteval.core.tables import load_table

    scorer = automatic.AutomaticScorer(load_table("scoring", None))
    assert scorer.clarity_score("!" * MEGA + "x") >= 0.0
    assert scorer.clarity_score("\n" + "7" * MEGA + "x") >= 0.0


@pytest.mark.parametrize(
    "answer",
    ["```" + "a" * MEGA, "\n" * MEGA + "x", "```\n" + " \n" * MEGA, "def  " * MEGA],
    ids=["unclosed-tag", "blank-lines", "fence-of-blank-lines", "defs"],
)
def test_crafted_answers_are_searched_for_code(answer: str) -> None:
    spec = CodeSpec(entry_point="f", tests=())
    code_text, _ = extract_code(answer, "", spec)
    assert isinstance(code_text, str)


def test_a_json_fence_without_its_end_is_not_json() -> None:
    answer = Observed("```json" + " " * MEGA + "\n", "", 0, None, None)
    checked = check_simple(Assertion("is_json"), answer)
    assert checked is not None and not checked.passed


SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string", "pattern": "^(a+)+$"}},
    "patternProperties": {"^(b+)+$": {"type": "integer"}},
    "additionalProperties": False,
}


@pytest.mark.parametrize(
    ("document", "passed", "reason"),
    [
        ('{"name": "aaaa"}', True, "matches the schema"),
        ('{"name": "' + "a" * 60 + '!"}', False, "does not match '^(a+)+$'"),
        ('{"' + "b" * 60 + '": 1}', True, "matches the schema"),
        ('{"' + "b" * 60 + '": "x"}', False, "'x' is not of type 'integer'"),
        ('{"' + "b" * 60 + '!": 1}', False, "Additional properties are not allowed"),
    ],
    ids=["pattern-passes", "pattern-fails", "keyed-passes", "keyed-value", "keyed-extra"],
)
def test_json_schema_patterns_run_on_re2(document: str, passed: bool, reason: str) -> None:
    # each of these hangs Python's re: (a+)+ against 60 a's and a "!" is 2**60 steps
    checked = check_simple(Assertion("json_schema", SCHEMA), Observed(document, "", 0, None, None))
    assert checked is not None
    assert checked.passed is passed
    assert reason in checked.reason


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        (
            "{type: object, properties: {a: {type: string,\n      pattern: 'x(?=y)'}}}",
            "prompt_cases/c.yaml:6: case 'c1', assert[0]: json_schema: pattern 'x(?=y)': "
            "invalid regular expression: invalid perl operator: (?= (patterns run on RE2, "
            "in linear time: no lookaround, no backreferences)",
        ),
        (
            "{type: object, patternProperties: {'(a)\\1': {}}}",
            "prompt_cases/c.yaml:5: case 'c1', assert[[]0[]]: json_schema: pattern '(a)\\\\1': "
            "invalid regular expression: invalid escape sequence: \\1 *",
        ),
        (
            "{type: object, patternProperties: {'^a': {}},\n      unevaluatedProperties: false}",
            "prompt_cases/c.yaml:6: case 'c1', assert[[]0[]]: json_schema: unevaluatedProperties "
            "cannot be used with patternProperties *",
        ),
    ],
    ids=["lookahead", "backreference", "unevaluated"],
)
def test_a_schema_pattern_re2_cannot_run_names_its_line(
    pytester: pytest.Pytester, schema: str, message: str
) -> None:
    pytester.mkdir("prompts").joinpath("v.yaml").write_text("user_prompt: x\n")
    pytester.mkdir("prompt_cases").joinpath("c.yaml").write_text(
        f"cases:\n- id: c1\n  input: {{}}\n  assert:\n  - json_schema: {schema}\n"
    )
    result = pytester.runpytest("--prompt=v")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines([message])
    assert "Traceback" not in result.stdout.str()


def test_topics_and_key_terms_keep_python_word_boundaries() -> None:
    """RE2's \\b is ASCII: the scorer's own boundaries still treat letters like é as word
    characters, as Python's re did."""
    from pytest_prompteval.core.tables import load_table

    scorer = automatic.AutomaticScorer(load_table("scoring", None))
    assert scorer.covers("café au_lait", "un café\u00a0au-lait")
    assert not scorer.covers("café", "uncafé")
    assert patterns.whole_word("café").search("un Café noir")
    assert not patterns.whole_word("café").search("un cafés")
    assert patterns.whole_word("c++").search("c++x")  # as re's \bc\+\+\b: a word must follow
    assert not patterns.whole_word("c++").search("c++ x")
