"""The ``prompteval`` fixture builds its items' specs as case files do: the case's and the
prompt version's ``assert:`` entries apply to inline runs too."""

from __future__ import annotations

import pytest

from .conftest import generated_project

INLINE = """
def test_case_assertions(prompteval):
    r = prompteval.run("v", input={"n": 1}, expected_topics=["loop"],
                       **{"assert": [{"contains": "unrolled"}]})
    assert [c.type for c in r.result.assertions] == ["max_length", "contains"]
    assert not r.result.passed

def test_prompt_assertions_alone(prompteval):
    r = prompteval.run("v", input={"n": 1}, expected_topics=["loop"])
    assert [(c.type, c.passed) for c in r.result.assertions] == [("max_length", True)]
    assert r.result.passed

def test_a_bad_entry_is_one_line(prompteval):
    prompteval.run("v", input={"n": 1}, **{"assert": [{"containz": "x"}]})
"""


def test_inline_runs_check_the_case_and_prompt_assertions(pytester: pytest.Pytester) -> None:
    generated_project(pytester, 0, prompt="user_prompt: x {n}\nassert: [{max_length: 100}]\n")
    pytester.makepyfile(app="def answer(request, **kw):\n    return 'A loop.'\n")
    pytester.makepyfile(test_inline=INLINE)
    pytester.makeini("[pytest]\npythonpath = .\n")
    result = pytester.runpytest("--prompteval-provider=python:app:answer")

    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        ["*unknown assertion or scorer 'containz'; did you mean 'contains'?*"]
    )
    out = result.stdout.str()
    assert "Traceback" not in out and "During handling" not in out
