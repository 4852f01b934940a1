"""Structured output: cases that give only assertions are scored by them (not by the seed's
explain scorer), json_field checks and their per-field table, schema errors and schema
keywords checked at collection."""

from __future__ import annotations

import json

import pytest

from pytest_prompteval.scoring.assertions import Checked, combine

from .conftest import item_results

APP = """
import json
from pytest_prompteval import Response

def answer(request, *, case, prompt, sample):
    text = json.dumps(case.raw["answers"][prompt.version])
    return Response(text=text, model="claude-haiku-4-5", input_tokens=10, output_tokens=10)
"""

SHORT = (
    "Charged twice for order 1234. Wants the duplicate charge refunded. The account is "
    "overdrawn now."
)
LONG = (
    "The customer says that they were charged twice for order 1234 and that they would like "
    "the duplicate charge refunded as soon as possible because the account is now overdrawn "
    "and the bank is charging them fees for it which they expect us to cover as well"
)


def ticket(priority: str, team: str, summary: str) -> str:
    return json.dumps({"priority": priority, "team": team, "summary": summary})


def triage_case(case_id: str, priority: str, team: str, v2_summary: str = LONG) -> str:
    """A case whose v2 answer differs from v1's in its summary's length alone."""
    return (
        f"- id: t{case_id}\n  input: {{n: {case_id}}}\n  threshold: 0\n"
        f"  answers:\n    v1: {ticket(priority, team, SHORT)}\n"
        f"    v2: {ticket(priority, team, v2_summary)}\n"
        "  assert:\n"
        "  - {json_field: {path: priority, equals: urgent}}\n"
        "  - {json_field: {path: /team, in: [billing, payments]}}\n"
    )


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    prompts = pytester.mkdir("prompts")
    prompts.joinpath("v1.yaml").write_text("user_prompt: 'Triage {n}'\n")
    prompts.joinpath("v2.yaml").write_text("user_prompt: 'Triage ticket {n}'\n")
    pytester.makepyfile(myapp=APP)
    pytester.makeini("[pytest]\npythonpath = .\nprompteval_case_fields = answers\n")
    pytester.mkdir("prompt_cases").joinpath("triage.yaml").write_text(
        "cases:\n"
        + triage_case("1", "urgent", "billing")
        + triage_case("2", "urgent", "payments")
        + triage_case("3", "low", "billing")  # fails priority under both versions
        + triage_case("4", "urgent", "shipping")  # fails team under both versions
    )
    return pytester


RUN = ("--prompt=v2", "--compare=v1", "--prompteval-provider=python:myapp:answer")
GATED = (*RUN, "--prompteval-max-regression=0.01", "--prompteval-exit=gates")


def test_a_longer_summary_no_longer_regresses(project: pytest.Pytester) -> None:
    """Every item passes or fails as before: the scores are the assertions' (two of four
    items 1.0, two 0.5: mean 0.75 under both), no clarity dimension, no regression."""
    result = project.runpytest(*GATED)
    assert result.ret == 0
    result.assert_outcomes(passed=4, failed=4)
    result.stdout.fnmatch_lines(
        [
            "version * items * passed * failed * errored * skipped * pass rate * score *",
            "v2 * 4 * 2 * 2 * 0 * 0 * 50.0% * 0.750 *",
            "v1 * 4 * 2 * 2 * 0 * 0 * 50.0% * 0.750 *",
        ]
    )
    assert "scores by dimension" not in result.stdout.str()
    assert "clarity" not in result.stdout.str()
    assert "max-regression" not in result.stdout.str()


def test_the_project_that_names_the_automatic_scorer_gets_it_everywhere(
    project: pytest.Pytester,
) -> None:
    """ini prompteval_scorer = automatic, set explicitly: the seed's dimensions score the
    JSON answers too, and the long summary's sentence length then costs v2 its clarity."""
    reprec = project.inline_run(*RUN, "-o", "prompteval_scorer=automatic")
    results = {(r["prompt"], r["case_id"]): r for r in item_results(reprec)}
    v1, v2 = results[("v1", "t1")], results[("v2", "t1")]
    assert v1["scorer"] == v2["scorer"] == "automatic"
    assert v1["dimensions"]["clarity"] == pytest.approx(0.555556)
    assert v2["dimensions"]["clarity"] == pytest.approx(0.333333)
    # the automatic score, weight 1 beside two assertions: 0.906433 -> 0.859649
    assert v1["score"] - v2["score"] == pytest.approx((0.906433 - 0.859649) / 3, abs=1e-6)
    # the same from the ini file
    ini = project.path.joinpath("tox.ini")
    ini.write_text(ini.read_text().rstrip() + "\nprompteval_scorer = automatic\n")
    result = project.runpytest(*GATED)
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            "*scores by dimension*",
            "dimension * v2 * v1",
            "clarity * 0.333 * 0.556",
            "*v2 scores 0.016 below v1 on paired cases, more than --prompteval-max-regression 0.01",
        ]
    )


def test_per_field_accuracy_in_the_terminal_and_the_markdown(project: pytest.Pytester) -> None:
    result = project.runpytest(*RUN, "--prompteval-markdown=summary.md")
    result.stdout.fnmatch_lines(
        [
            "*accuracy by field*",
            "field * v2 * v1",
            "priority * 3/4 75.0% * 3/4 75.0%",
            "team * 3/4 75.0% * 3/4 75.0%",
        ]
    )
    markdown = project.path.joinpath("summary.md").read_text()
    assert (
        "### Accuracy by field\n\n| field | `v2` | `v1` |\n| --- | ---: | ---: |\n"
        "| `priority` | 3/4 75.0% | 3/4 75.0% |\n| `team` | 3/4 75.0% | 3/4 75.0% |\n"
    ) in markdown


def test_an_item_counts_once_per_field_and_fails_it_when_any_check_of_it_fails(
    project: pytest.Pytester,
) -> None:
    project.path.joinpath("prompt_cases", "triage.yaml").write_text(
        "cases:\n"
        + triage_case("1", "urgent", "billing")
        + "  - {json_field: {path: priority, matches: '^u'}}\n"
        + "  - {json_field: {path: /priority, in: [low]}}\n"
    )
    result = project.runpytest("--prompt=v1", "--prompteval-provider=python:myapp:answer")
    result.stdout.fnmatch_lines(["field * v1", "priority * 0/1 0.0%", "team * 1/1 100.0%"])


def test_schema_failure_names_the_field_the_expected_and_the_actual_value(
    project: pytest.Pytester,
) -> None:
    """The issue's "expected: schema: 'urgent' was expected" said neither which field nor
    what the answer had; a missing field is named itself, not the object that lacks it."""
    answer = ticket("normal", "billing", SHORT)
    project.path.joinpath("prompt_cases", "triage.yaml").write_text(
        "cases:\n"
        f"- id: c1\n  input: {{n: 1}}\n  answers: {{v1: {answer}}}\n  assert:\n"
        "  - json_schema: {type: object, properties: {priority: {const: urgent}}}\n"
        f"- id: c2\n  input: {{n: 2}}\n  answers: {{v1: {answer}}}\n  assert:\n"
        "  - json_schema:\n      required: [priority, tags]\n"
        "      properties: {priority: {const: urgent}}\n"
    )
    result = project.runpytest("--prompt=v1", "--prompteval-provider=python:myapp:answer")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            'c1 [[]v1[]]: failed assert json_schema: schema: priority: expected const "urgent", '
            'got "normal"',
            "c2 [[]v1[]]: failed assert json_schema: schema: tags: expected a value (required), "
            "got none (+1 more schema errors)",
        ]
    )


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        (
            "      properties:\n        priority: {cosnt: urgent}\n",
            "*triage.yaml:8: case 'c1', assert[[]0[]]: json_schema: unknown keyword 'cosnt'; "
            "did you mean 'const'? (draft 2020-12; *",
        ),
        (
            "      items:\n        anyOf:\n        - {type: string, maxLenght: 3}\n",
            "*triage.yaml:9: *unknown keyword 'maxLenght'; did you mean 'maxLength'?*",
        ),
        (
            "      $defs:\n        level: {enmu: [low, high]}\n",
            "*triage.yaml:8: *unknown keyword 'enmu'; did you mean 'enum'?*",
        ),
        ("      requird: [priority]\n", "*triage.yaml:7: *unknown keyword 'requird'*"),
    ],
    ids=["nested", "in-anyOf", "in-defs", "top"],
)
def test_an_unknown_schema_keyword_is_a_collection_error_at_its_line(
    project: pytest.Pytester, schema: str, message: str
) -> None:
    project.path.joinpath("prompt_cases", "triage.yaml").write_text(
        "cases:\n- id: c1\n  input: {n: 1}\n  assert:\n  - json_schema:\n"
        "      type: object\n" + schema
    )
    result = project.runpytest("--prompt=v1", "--prompteval-provider=python:myapp:answer")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines([message])
    assert "Traceback" not in result.stdout.str()


def test_names_in_data_positions_are_not_keywords(project: pytest.Pytester) -> None:
    """A property named like a typo, $defs' names, const data and x- annotations are fine."""
    project.path.joinpath("prompt_cases", "triage.yaml").write_text(
        "cases:\n- id: c1\n  input: {n: 1}\n  answers:\n"
        f"    v1: {ticket('urgent', 'billing', SHORT)}\n  assert:\n  - json_schema:\n"
        "      type: object\n      x-owner: support\n"
        "      properties:\n        cosnt: {type: string}\n"
        "        priority: {$ref: '#/$defs/levle'}\n"
        "        team: {const: {typo: 1}, x-note: unused}\n"
        "      $defs:\n        levle: {enum: [urgent, low]}\n"
        "      required: [priority]\n"
    )
    result = project.runpytest("--prompt=v1", "--prompteval-provider=python:myapp:answer")
    result.assert_outcomes(failed=1)  # the team is no {typo: 1}: the schema was checked
    result.stdout.fnmatch_lines(['*json_schema: schema: team: expected const {"typo": 1}, got*'])


def test_the_fixture_scores_an_assert_only_case_alike_and_computes_automatic_on_request(
    project: pytest.Pytester,
) -> None:
    project.makepyfile(
        test_inline=f"""
def test_triage(prompteval):
    run = prompteval.run(
        "v1", input={{"n": 1}}, answers={{"v1": {ticket("urgent", "billing", SHORT)}}},
        **{{"assert": [{{"json_field": {{"path": "priority", "equals": "urgent"}}}}]}},
    )
    assert (run.result.scorer, run.result.score, run.result.dimensions) == ("assertions", 1.0, {{}})
    assert 0 < prompteval.check(run, "automatic", min_score=0) < 1
"""
    )
    result = project.runpytest("test_inline.py", "--prompteval-provider=python:myapp:answer")
    result.assert_outcomes(passed=1)


def test_assertions_alone_weigh_by_weight_and_all_zero_weights_count_alike() -> None:
    def check(score: float, weight: float) -> Checked:
        return Checked("json_field", score == 1.0, score, weight, "")

    assert combine(None, [check(1.0, 3), check(0.0, 1)]) == 0.75
    assert combine(None, [check(1.0, 0), check(0.0, 0)]) == 0.5
    assert combine(0.5, [check(1.0, 3)]) == pytest.approx(3.5 / 4)
