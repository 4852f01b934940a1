"""Every file we read has a schema: an unknown key is an error naming file:line, the key and
the closest known key; a project declares its own fields through ini keys or hooks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pytest_prompteval.core.cases import load_case_file
from pytest_prompteval.core.errors import PromptevalError
from pytest_prompteval.core.prompts import load_prompt
from pytest_prompteval.core.tables import load_table
from pytest_prompteval.scoring.judge import load_review_templates

DECLARE = (
    "; put template data under vars:, or declare the field (ini prompteval_case_fields, "
    "or the pytest_prompteval_case_fields hook)"
)


def error_of(load: object, *args: object) -> str:
    with pytest.raises(PromptevalError) as excinfo:
        load(*args)  # type: ignore[operator]
    return str(excinfo.value)


@pytest.mark.parametrize(
    ("field", "message"),
    [
        (
            "assertions: [{contains: x}]",
            "case 'a': unknown field 'assertions'; did you mean 'assert'?",
        ),
        (
            "expected_topic: [loops]",
            "case 'a': unknown field 'expected_topic'; did you mean 'expected_topics'?",
        ),
        ("entry_piont: f", "case 'a': unknown field 'entry_piont'; did you mean 'entry_point'?"),
        ("propreties: {}", "case 'a': unknown field 'propreties'; did you mean 'properties'?"),
        ("colour: red", "case 'a': unknown field 'colour'" + DECLARE),
    ],
    ids=["assertions", "expected_topic", "entry_piont", "propreties", "no-suggestion"],
)
def test_case_typos_name_file_line_and_the_closest_field(
    tmp_path: Path, field: str, message: str
) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(f"cases:\n- id: a\n  input: {{}}\n  {field}\n")
    assert error_of(load_case_file, path) == f"{path}:4: {message}"


def test_case_file_top_level_typo(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("description: d\ncase:\n- id: a\n  input: {}\n")
    assert (
        error_of(load_case_file, path) == f"{path}:2: unknown field 'case'; did you mean 'cases'?"
    )


def test_declared_case_fields_and_vars_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("cases:\n- id: a\n  input: {}\n  colour: red\n  vars: {tone: dry}\n")
    (case,) = load_case_file(path, ("colour",)).cases
    assert (case.raw["colour"], dict(case.vars)) == ("red", {"tone": "dry"})
    path.write_text("cases:\n- id: a\n  input: {}\n  vars: [tone]\n")
    assert error_of(load_case_file, path) == (
        f"{path}:4: case 'a', field 'vars': expected a mapping of template variables, got list "
        "['tone']"
    )


PROMPT_DECLARE = (
    "; declare the field (ini prompteval_prompt_fields, or the pytest_prompteval_prompt_fields "
    "hook)"
)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "sytem_prompt: s\nuser_prompt: u\n",
            "1: unknown field 'sytem_prompt'; did you mean 'system_prompt'?",
        ),
        (
            "user_prompt: u\nmodel_config: {modle: m}\n",
            "2: model_config: unknown field 'modle'; did you mean 'model'?",
        ),
        (
            "user_prompt: u\nmodel_config:\n  model: m\n  max_token: 100\n",
            "4: model_config: unknown field 'max_token'; did you mean 'max_tokens'?",
        ),
        ("name: n\ndescription: d\n", "1: expected a system_prompt or a user_prompt (or both)"),
        ("user_prompt: u\nflavour: x\n", "2: unknown field 'flavour'" + PROMPT_DECLARE),
    ],
    ids=["sytem_prompt", "modle", "max_token", "no-prompt", "no-suggestion"],
)
def test_prompt_typos_name_file_line_and_the_closest_field(
    tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "v1.yaml"
    path.write_text(text)
    assert error_of(load_prompt, path) == f"{path}:{message}"


def test_model_config_takes_what_the_sdk_names_and_extra_body(tmp_path: Path) -> None:
    path = tmp_path / "v1.yaml"
    path.write_text(
        "user_prompt: u\nmodel_config: {model: m, max_tokens: 9, temperature: 0, top_k: 5, "
        "stop_sequences: [END], metadata: {user_id: u}}\nflavour: x\n"
    )
    prompt = load_prompt(path, ("flavour",))
    assert prompt.model_config["stop_sequences"] == ["END"]


def test_prompt_version_names_follow_the_case_id_rule(tmp_path: Path) -> None:
    path = tmp_path / "v\x1b[2J.yaml"
    path.write_text("user_prompt: u\n")
    assert error_of(load_prompt, path) == (
        f"{path}: prompt version 'v\\x1b[2J': expected a name of letters, digits and _ . + - "
        "(it becomes an id and a file name)"
    )


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        (
            "scoring",
            "weigths: {accuracy: 1}\n",
            "1: unknown field 'weigths'; did you mean 'weights'?",
        ),
        (
            "scoring",
            "weights:\n  acuracy: 1\n",
            "2: weights: unknown field 'acuracy'; did you mean 'accuracy'?",
        ),
        (
            "scoring",
            "clarity:\n  sentence_words: {low: 1, hihg: 2}\n",
            "2: clarity.sentence_words: unknown field 'hihg'; did you mean 'high'?",
        ),
        (
            "prices",
            "my-model:\n  input: 1\n  ouput: 2\n",
            "3: my-model: unknown field 'ouput'; did you mean 'output'?",
        ),
        (
            "prices",
            "my-model: {input: -1}\n",
            "1: my-model.input: expected a number >= 0 (USD per million tokens)",
        ),
    ],
    ids=["top", "weights", "nested", "price-field", "price-value"],
)
def test_table_overrides_have_the_shipped_shape(
    tmp_path: Path, name: str, text: str, message: str
) -> None:
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    assert error_of(load_table, name, path) == f"{path}:{message}"


def test_table_overrides_add_open_entries(tmp_path: Path) -> None:
    path = tmp_path / "scoring.yaml"
    path.write_text("topics: {my_topic: ['x']}\nincorrect_claims: {patterns: {'y': z}}\n")
    assert load_table("scoring", path)["topics"]["my_topic"] == ["x"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "r:\n  system_prompt: s\n  evaluation_dimension: {}\n",
            "3: template 'r': unknown field 'evaluation_dimension'; did you mean "
            "'evaluation_dimensions'?",
        ),
        (
            "r:\n  system_prompt: s\n  evaluation_dimensions:\n    d: {wieght: 1}\n",
            "4: template 'r', dimension 'd': unknown field 'wieght'; did you mean 'weight'?",
        ),
    ],
    ids=["template", "dimension"],
)
def test_review_template_typos(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "rubric.yaml"
    path.write_text(text)
    assert error_of(load_review_templates, path) == f"{path}:{message}"


def test_strategy_typo_is_a_collection_error(pytester: pytest.Pytester) -> None:
    pytester.mkdir("prompts").joinpath("v.yaml").write_text(
        "user_prompt: x\nstrategy: {name: refine, attemps: 3}\n"
    )
    pytester.mkdir("prompt_cases").joinpath("c.yaml").write_text("cases:\n- id: a\n  input: {}\n")
    result = pytester.runpytest("--prompt=v")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        ["prompts/v.yaml:2: strategy refine: unknown field 'attemps'; did you mean 'attempts'?"]
    )


def test_a_typo_is_a_collection_error_with_no_traceback(pytester: pytest.Pytester) -> None:
    pytester.mkdir("prompts").joinpath("v.yaml").write_text("user_prompt: x\n")
    pytester.mkdir("prompt_cases").joinpath("c.yaml").write_text(
        "cases:\n- id: a\n  input: {}\n  assertions: [{contains: x}]\n"
    )
    result = pytester.runpytest("--prompt=v")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        ["prompt_cases/c.yaml:4: case 'a': unknown field 'assertions'; did you mean 'assert'?"]
    )
    assert "Traceback" not in result.stdout.str()


def test_sytem_prompt_typo_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.mkdir("prompts").joinpath("v.yaml").write_text("sytem_prompt: s\nuser_prompt: u\n")
    result = pytester.runpytest("--prompt=v")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: prompts/v.yaml:1: unknown field 'sytem_prompt'; did you mean 'system_prompt'?"]
    )


PROJECT_FIELDS = """
def pytest_prompteval_case_fields():
    return ["audience_note"]


def pytest_prompteval_prompt_fields():
    return ["house_style"]
"""


def test_fields_declared_by_ini_and_hooks_reach_templates(pytester: pytest.Pytester) -> None:
    pytester.mkdir("prompts").joinpath("v.yaml").write_text(
        "user_prompt: '{audience_note} {colour} {tone}'\nhouse_style: plain\n"
        "model_config: {model: m}\ninclude_input: false\n"
    )
    pytester.mkdir("prompt_cases").joinpath("c.yaml").write_text(
        "cases:\n- id: a\n  input: {}\n  audience_note: for you\n  colour: red\n"
        "  vars: {tone: dry}\n"
    )
    pytester.makeini("[pytest]\npythonpath = .\nprompteval_case_fields = colour\n")
    pytester.makeconftest(PROJECT_FIELDS)
    pytester.makepyfile(
        echo="def answer(request, *, case, prompt, sample):\n"
        "    return request.messages[0].content[0]\n"
    )
    result = pytester.runpytest("--prompt=v", "--prompteval-provider=python:echo:answer", "-v")
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED)
    result.stdout.fnmatch_lines(["*c.yaml::a[[]v[]]*"])
    recording = next(pytester.path.joinpath("prompt_recordings").glob("*.json")).read_text()
    assert '"text": "for you red dry"' in recording


def run_cli(pytester: pytest.Pytester, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest_prompteval.cli", *args],
        cwd=pytester.path,
        capture_output=True,
        text=True,
        check=False,
    )


def test_check_cases_and_list_report_every_problem_collection_finds(
    pytester: pytest.Pytester,
) -> None:
    pytester.mkdir("prompts").joinpath("v.yaml").write_text("user_prompt: x\n")
    pytester.path.joinpath("prompts", "w.yaml").write_text("sytem_prompt: x\n")
    cases = pytester.mkdir("prompt_cases")
    cases.joinpath("a.yaml").write_text("cases:\n- id: a\n  input: {}\n")
    cases.joinpath("b.yaml").write_text("cases:\n- id: a\n  input: {}\n")
    cases.joinpath("c.yaml").write_text(
        "cases:\n- id: c\n  input: {}\n  assert: [{type: contain, value: x}]\n"
    )
    expected = [
        "prompteval: error: prompts/w.yaml:1: unknown field 'sytem_prompt'; did you mean "
        "'system_prompt'?",
        "prompteval: error: prompt_cases/b.yaml:2: duplicate case id 'a': also defined at "
        "prompt_cases/a.yaml:2",
        "prompteval: error: prompt_cases/c.yaml:4: case 'c', assert[0]: unknown assertion or "
        "scorer 'contain'; did you mean 'contains'?; known: baseline, contains, contains_all, "
        "contains_any, contains_json, equals, file_exists, file_matches, file_not_exists, "
        "file_unchanged, icontains, icontains_all, icontains_any, is_json, json_field, "
        "json_schema, judge, max_cost_usd, max_latency_ms, max_length, max_steps, max_tokens, "
        "min_length, not_contains, not_contains_all, not_contains_any, not_contains_json, "
        "not_equals, not_icontains, not_icontains_all, not_icontains_any, not_is_json, "
        "not_regex, not_starts_with, regex, starts_with, tool_called, tool_not_called, "
        "tool_sequence, topics",
        "prompteval: 3 problem(s) found",
    ]
    for command in ("check-cases", "list"):
        done = run_cli(pytester, command)
        assert done.returncode == 2, done.stderr
        assert done.stderr.splitlines() == expected
    assert run_cli(pytester, "check-cases").stdout == "1 cases in 1 files (0 code cases)\n"


def test_the_fixture_checks_an_inline_case_like_a_file(pytester: pytest.Pytester) -> None:
    pytester.mkdir("prompts").joinpath("v.yaml").write_text("user_prompt: x\n")
    pytester.makepyfile(
        test_inline="""
def test_typo(prompteval):
    prompteval.run("v", input={}, expected_topic=["loops"])
"""
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "test_inline.py:1: case 'inline': "
            "unknown field 'expected_topic'; did you mean 'expected_topics'?*"
        ]
    )
    assert "Traceback" not in result.stdout.str()
