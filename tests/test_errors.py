"""Bad input gives one clear message naming file and line, and no internal traceback."""

from __future__ import annotations

import pytest

PROMPT = (
    "system_prompt: 'You explain {language}.'\n"
    "user_prompt: 'Explain {arch} for {audience}.'\n"
    "model_config: {model: claude-haiku-4-5}\n"
)
CASE = "cases:\n- id: ok_001\n  input: {language: C, instructionSet: x86_64}\n"


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.mkdir("prompts").joinpath("current.yaml").write_text(PROMPT)
    pytester.mkdir("prompt_cases").joinpath("a.yaml").write_text(CASE)
    return pytester


def assert_no_internal_traceback(result: pytest.RunResult) -> None:
    text = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in text
    assert "pytest_prompteval/" not in text


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("cases:\n- id: x\n  input: {a: 1\n", "prompt_cases/b.yaml:4: invalid YAML: *"),
        (
            "cases:\n- id: x\n  input: {}\n  expected_topics: loops\n",
            "prompt_cases/b.yaml:4: case 'x', field 'expected_topics': expected a list of "
            "strings, got string 'loops'",
        ),
        (
            "cases:\n- id: ok_001\n  input: {}\n",
            "prompt_cases/b.yaml:2: duplicate case id 'ok_001': also defined at "
            "*prompt_cases/a.yaml:2",
        ),
    ],
    ids=["malformed-yaml", "wrong-type", "duplicate-across-files"],
)
def test_bad_case_file_is_one_collection_error(
    project: pytest.Pytester, text: str, message: str
) -> None:
    project.path.joinpath("prompt_cases", "b.yaml").write_text(text)
    result = project.runpytest("--prompt=current")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*ERROR collecting prompt_cases/b.yaml*", message])
    assert_no_internal_traceback(result)


def test_malformed_prompt_file_is_a_usage_error(project: pytest.Pytester) -> None:
    project.path.joinpath("prompts", "current.yaml").write_text("system_prompt: [unclosed\n")
    result = project.runpytest("--prompt=current")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: *prompts/current.yaml:2: invalid YAML: *"])
    assert_no_internal_traceback(result)


def test_wrong_type_in_prompt_names_the_field(project: pytest.Pytester) -> None:
    project.path.joinpath("prompts", "current.yaml").write_text("name: x\nuser_prompt: [1]\n")
    result = project.runpytest("--prompt=current")
    result.stderr.fnmatch_lines(
        ["ERROR: *prompts/current.yaml:2: field 'user_prompt': expected a string, got list"]
    )


def test_missing_placeholder_fails_only_that_item(project: pytest.Pytester) -> None:
    project.path.joinpath("prompt_cases", "b.yaml").write_text(
        "cases:\n- id: with_audience\n  audience: beginner\n  input: {language: C, "
        "instructionSet: arm64}\n"
    )
    result = project.runpytest("--prompt=current", "-p", "no:randomly")
    # The item that has an audience runs on (to a missing recording: an error of the run, not
    # of the prompt); the other names the gap and fails.
    result.assert_outcomes(failed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at setup of case with_audience [[]current[]]*",
            "no recording for case 'with_audience'*--prompteval-record=new to record it",
            "*case ok_001 [[]current[]]*",
            "*prompts/current.yaml:2: user_prompt uses {audience} but case 'ok_001' "
            "(*prompt_cases/a.yaml:2) gives no value for it*",
        ]
    )
    assert_no_internal_traceback(result)


def test_unreadable_recording_names_the_file(project: pytest.Pytester) -> None:
    project.path.joinpath("prompts", "current.yaml").write_text(
        "user_prompt: 'Explain.'\nmodel_config: {model: m}\n"
    )
    from pytest_prompteval.core.cases import load_case_file
    from pytest_prompteval.core.prompts import build_request, load_prompt, template_variables

    case = load_case_file(project.path / "prompt_cases" / "a.yaml").cases[0]
    prompt = load_prompt(project.path / "prompts" / "current.yaml")
    key = build_request(case, prompt, template_variables(case), "m").key(0)
    project.mkdir("prompt_recordings").joinpath(f"{key}.json").write_text("{not json")
    result = project.runpytest("--prompt=current")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([f"*prompt_recordings/{key}.json: unreadable recording*"])
    assert_no_internal_traceback(result)
