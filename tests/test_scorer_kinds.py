"""A project's own scorer kind: one module and one ``register`` call, chosen by the engine
from the registry and named in results, with no other file of the plugin changed."""

from __future__ import annotations

import pytest

from pytest_prompteval.scoring.kinds import registry

from .conftest import item_results

APP = """
def answer(request, *, case, prompt, sample):
    return "Short." if '"n": 0' in str(request.to_api()) else "A much longer answer than that."
"""

# the kind: brief answers pass; it claims the cases tagged ``brief``
KIND = """
from pytest_prompteval.scoring.kinds.protocol import Scored
from pytest_prompteval.scoring.kinds.registry import register
from pytest_prompteval.scoring.score import Score


class Brevity:
    name = "brevity"

    def claims(self, shape):
        return "brief" in shape.case.tags

    def score(self, answer, context):
        words = len(answer.text.split())
        return Scored(Score(1.0 if words <= 3 else 0.0, {"words": float(words)}))

    def passes(self, main, threshold, options):
        return main.value >= threshold


register(Brevity())
"""


@pytest.fixture(autouse=True)
def own_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """The project's registration stays in its run."""
    monkeypatch.setattr(registry, "_KINDS", dict(registry._KINDS))


def project(pytester: pytest.Pytester, kind: str) -> pytest.RunResult:
    """Two cases tagged ``brief`` (c0 answered briefly, c1 not) and one other."""
    pytester.mkdir("prompts").joinpath("v.yaml").write_text("user_prompt: x\n")
    cases = "".join(f"- id: c{i}\n  tags: [brief]\n  input: {{n: {i}}}\n" for i in range(2))
    cases += "- id: other\n  expected_topics: [answer]\n  input: {n: 9}\n"
    pytester.mkdir("prompt_cases").joinpath("c.yaml").write_text("cases:\n" + cases)
    pytester.makepyfile(app=APP, conftest=kind)
    pytester.makeini("[pytest]\npythonpath = .\n")
    return pytester.runpytest("--prompt=v", "--prompteval-provider=python:app:answer")


def test_a_registered_kind_scores_the_cases_it_claims(pytester: pytest.Pytester) -> None:
    result = project(pytester, KIND)

    result.assert_outcomes(passed=2, failed=1)
    by_id = {r["case_id"]: r for r in item_results(result)}
    assert by_id["c0"]["scorer"] == "brevity" and by_id["c0"]["score"] == 1.0
    assert by_id["c0"]["dimensions"] == {"words": 1.0}
    assert by_id["c1"]["scorer"] == "brevity" and by_id["c1"]["passed"] is False
    # a case the kind does not claim keeps the setting's scorer
    assert by_id["other"]["scorer"] == "automatic" and by_id["other"]["passed"] is True
    result.stdout.fnmatch_lines(["*c1 [[]v[]]: brevity score 0.000 below threshold*"])


def test_an_exception_in_a_projects_kind_is_its_error(pytester: pytest.Pytester) -> None:
    broken = KIND.replace("words = len(", "words = {}['words'] + len(")
    result = project(pytester, broken)

    result.assert_outcomes(passed=1, errors=2)
    by_id = {r["case_id"]: r for r in item_results(result)}
    assert by_id["c0"]["outcome"] == "error" and by_id["c0"]["error_type"] == "user_code"
    result.stdout.fnmatch_lines(
        ["*scorer kind 'brevity', scoring case 'c0' raised KeyError: 'words'*", "*conftest.py:*"]
    )
    result.stdout.no_fnmatch_line("*Traceback*")


def test_an_exception_in_a_kinds_claim_is_the_case_files_error(pytester: pytest.Pytester) -> None:
    broken = KIND.replace('return "brief" in', "return shape.case.nothing in")
    result = project(pytester, broken)

    assert result.ret != 0
    result.stdout.fnmatch_lines(
        ["*scorer kind 'brevity', choosing for case 'c0' raised AttributeError*"]
    )
    result.stdout.no_fnmatch_line("*Traceback*")


@pytest.mark.parametrize(
    ("returned", "said"),
    [
        ("1.0", "returned float; expected a Scored"),
        ("Scored(1.0)", "returned Scored(main=1.0); expected a Scored"),
        ("Scored(Score(float('nan'), {}))", "returned a score of nan, outside"),
        ("Scored(Score(2, {}))", "returned a score of 2, outside"),
    ],
)
def test_what_a_kind_returns_is_checked(
    pytester: pytest.Pytester, returned: str, said: str
) -> None:
    line = 'return Scored(Score(1.0 if words <= 3 else 0.0, {"words": float(words)}))'
    broken = KIND.replace(line, f"return {returned}")
    result = project(pytester, broken)

    result.assert_outcomes(passed=1, errors=2)
    result.stdout.fnmatch_lines([f"*scorer kind 'brevity'*{said}*"])
    result.stdout.no_fnmatch_line("*Traceback*")
