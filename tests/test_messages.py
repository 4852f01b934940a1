"""Failure messages lead with the reason; the project's own exceptions show its frames."""

from __future__ import annotations

import sys

import pytest

from .conftest import generated_project

BROKEN_APP = """
def helper(request):
    return request.nope


def answer(request, *, case, prompt, sample):
    return helper(request)
"""

SCORER = """
import pytest_prompteval


@pytest_prompteval.scorer("strict")
def strict(case, request, response):
    return 1 / 0
"""


def test_a_provider_exception_shows_the_projects_frames_only(pytester: pytest.Pytester) -> None:
    generated_project(pytester, 1)
    pytester.makepyfile(brokenapp=BROKEN_APP)
    result = pytester.runpytest("--prompt=v", "--prompteval-provider=python:brokenapp:answer")
    result.assert_outcomes(errors=1)  # the project's code failed, not the prompt
    result.stdout.fnmatch_lines(
        [
            "provider 'python:brokenapp:answer', called for case 'c00' raised AttributeError: "
            "'Request' object has no attribute 'nope'",
            "  brokenapp.py:6 in answer: return helper(request)",
            "  brokenapp.py:2 in helper: return request.nope",
        ]
    )
    out = result.stdout.str()
    assert "Traceback" not in out and "pluggy/" not in out and "concurrent" not in out


def test_a_scorer_exception_names_the_scorer_and_case(pytester: pytest.Pytester) -> None:
    generated_project(pytester, 1, fields="  assert: [{type: strict}]\n")
    pytester.makeconftest(SCORER)
    pytester.makepyfile(app="def answer(request, **kw):\n    return 'The loop optimization.'\n")
    result = pytester.runpytest("--prompt=v", "--prompteval-provider=python:app:answer")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "scorer 'strict', scoring case 'c00' raised ZeroDivisionError: division by zero",
            "  conftest.py:6 in strict: return 1 / 0",
        ]
    )
    assert "Traceback" not in result.stdout.str()


LONG_APP = """
def answer(request, *, case, prompt, sample):
    return "The loop optimization. " + "x" * 400 + " END"
"""


def test_a_failure_says_why_first_then_score_response_and_recording(
    pytester: pytest.Pytester,
) -> None:
    generated_project(
        pytester, 1, fields="  expected_topics: [loop_optimization]\n  assert: "
        "[{type: max_length, value: 100}]\n  samples: 2\n",
    )  # fmt: skip
    pytester.makepyfile(longapp=LONG_APP)
    result = pytester.runpytest("--prompt=v", "--prompteval-provider=python:longapp:answer")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "*case c00 [[]v-s0[]]*",
            "c00 [[]v-s0[]]: failed assert max_length: *",
            "  assertions: 0/1 passed; any failure fails the item, whatever its score (0.*)",
            "  response: The loop optimization. xxx*... (427 characters; -vv shows all)",
            "  recording: prompt_recordings/*.json",
        ]
    )
    whole = pytester.runpytest("--prompt=v", "--prompteval-provider=python:longapp:answer", "-vv")
    whole.stdout.fnmatch_lines(["  response: The loop optimization. x* END"])


CODE_APP = """
def answer(request, *, case, prompt, sample):
    return "```python\\ndef clamp(x, low, high):\\n    return max(low, min(x, high))\\n```"
"""

INLINE_CODE = """
def test_code(prompteval):
    r = prompteval.run("v", input={"task": "clamp"}, entry_point="clamp",
                       tests=[{"args": [5, 0, 10], "expected": 5}])
    assert r.result.scorer == "execution" and r.result.passed

def test_typo(prompteval):
    prompteval.run("v", input={}, entry_piont="clamp")
"""


def test_the_fixture_runs_code_cases_and_names_a_typo_in_one_line(
    pytester: pytest.Pytester,
) -> None:
    generated_project(pytester, 0)
    pytester.makepyfile(codeapp=CODE_APP, test_inline=INLINE_CODE)
    pytester.makeini("[pytest]\npythonpath = .\n")
    result = pytester.runpytest("--prompteval-provider=python:codeapp:answer")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*unknown field 'entry_piont'; did you mean 'entry_point'?*"])
    assert "Traceback" not in result.stdout.str()


def test_review_with_an_unknown_rubric_is_one_line(pytester: pytest.Pytester) -> None:
    results = pytester.path / "r.json"
    results.write_text('{"meta": {}, "results": []}')
    done = pytester.run(sys.executable, "-m", "pytest_prompteval.cli", "review", str(results),
                        "--rubric", "nope")  # fmt: skip
    assert done.ret == 2
    assert done.errlines[0].startswith("prompteval: error: --rubric 'nope': unknown review")
