"""The project's own code as provider and judge: offline judging with the shipped fake judge,
and a mistake or an exception in that code is an error of its item, never a failed prompt."""

from __future__ import annotations

from importlib import metadata

import pytest

from .conftest import generated_project, item_results

APP = """
def answer(request, *, case, prompt, sample):
    return "The loop optimization, by unrolling." if '"n": 0' in str(request.to_api()) else "Hm."
"""
JUDGED = (
    "--prompt=v",
    "--prompteval-provider=python:app:answer",
    "--prompteval-scorer=claude",
    "--prompteval-judge-provider=python:pytest_prompteval.testing:fake_judge",
)


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    generated_project(pytester, 2, fields="  expected_topics: [loop_optimization, unrolling]\n")
    pytester.makepyfile(app=APP)
    pytester.makeini("[pytest]\npythonpath = .\n")
    return pytester


def test_the_fake_judge_scores_offline_by_the_topics_mentioned(project: pytest.Pytester) -> None:
    result = project.runpytest(*JUDGED)

    result.assert_outcomes(passed=1, failed=1)
    verdicts = {r["case_id"]: r for r in item_results(result)}
    # c00 mentions both topics, c01 neither: every dimension follows
    assert set(verdicts["c00"]["judge_dimensions"].values()) == {1.0}
    assert set(verdicts["c01"]["judge_dimensions"].values()) == {0.0}
    assert verdicts["c00"]["judge_score"] == 1.0
    assert verdicts["c01"]["judge_score"] == 0.0
    assert verdicts["c01"]["missing_topics"] == ["loop_optimization", "unrolling"]


def test_the_fake_judge_answers_a_judge_assertion(pytester: pytest.Pytester) -> None:
    generated_project(
        pytester,
        1,
        fields="  expected_topics: [loop]\n  assert: [{judge: Does it explain the loop?}]\n",
    )
    pytester.makepyfile(app=APP)
    pytester.makeini("[pytest]\npythonpath = .\n")
    result = pytester.runpytest(*JUDGED[:2], *JUDGED[3:])

    result.assert_outcomes(passed=1)
    (checked,) = item_results(result)[0]["assertions"]
    assert checked["score"] == 1.0
    assert "fake judge: 1 of 1 expected topics mentioned" in checked["reason"]


BROKEN_JUDGE = """
def judge(request, **context):
    raise KeyError("rubric")
"""


def test_an_exception_in_the_projects_judge_is_an_error(project: pytest.Pytester) -> None:
    project.makepyfile(brokenjudge=BROKEN_JUDGE)
    result = project.runpytest(*JUDGED[:3], "--prompteval-judge-provider=python:brokenjudge:judge")

    result.assert_outcomes(errors=2)
    assert {r["outcome"] for r in item_results(result)} == {"error"}
    result.stdout.fnmatch_lines(["*raised KeyError: 'rubric'*", "*errors: user_code 2*"])


def test_a_misspelt_field_from_a_provider_is_an_error_with_a_suggestion(
    project: pytest.Pytester,
) -> None:
    project.makepyfile(
        typo="def answer(request, **context):\n    return {'text': 'x', 'tool_inptu': {}}\n"
    )
    result = project.runpytest("--prompt=v", "--prompteval-provider=python:typo:answer")

    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(
        ["*provider 'python:typo:answer' returned an unknown field 'tool_inptu'; did you mean "
         "'tool_input'?*"]
    )  # fmt: skip


def test_installing_the_plugin_brings_what_the_readme_uses() -> None:
    required = metadata.requires("pytest-prompteval") or []
    unconditional = {
        r.split(";")[0].split(">")[0].split("=")[0].strip() for r in required if "extra ==" not in r
    }
    assert {"pytest-xdist", "pytest-json-report", "hypothesis"} <= unconditional


RECORDING_APP = """
def answer(request, **context):
    return f"{request.model} {request.to_api()['max_tokens']} loop optimization"
"""


def test_the_newer_explain_model_section_is_the_model_config(pytester: pytest.Pytester) -> None:
    generated_project(
        pytester,
        1,
        prompt="user_prompt: Explain {n} for {audience}.\n"
        "model: {name: claude-haiku-4-5, max_tokens: 99, temperature: 0.0}\n"
        "audience_levels: {beginner: {guidance: simple}}\n",
        fields="  audience: beginner\n  explanation_type: assembly\n  expected_topics: [loop]\n",
    )
    pytester.makepyfile(app=RECORDING_APP)
    pytester.makeini("[pytest]\npythonpath = .\n")  # nothing declared
    result = pytester.runpytest("--prompt=v", "--prompteval-provider=python:app:answer")

    result.assert_outcomes(passed=1)
    assert item_results(result)[0]["response"] == "claude-haiku-4-5 99 loop optimization"
