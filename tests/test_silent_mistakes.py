"""Mistakes that used to be accepted silently are named, with a did-you-mean: a misspelt ini
key of ours, a -m label no case has, an unknown difficulty, a value given to a scorer."""

from __future__ import annotations

import pytest

from .conftest import generated_project

APP = "def answer(request, **kw):\n    return 'The loop optimization.'\n"
PROVIDER = "--prompteval-provider=python:app:answer"


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(app=APP)
    pytester.makeini("[pytest]\npythonpath = .\n")
    return pytester


def test_a_misspelt_ini_key_is_a_usage_error(project: pytest.Pytester) -> None:
    generated_project(project, 1)
    project.makeini("[pytest]\npythonpath = .\nprompteval_min_pas = 3\n")
    result = project.runpytest("--prompt=v", PROVIDER)

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: ini prompteval_min_pas: unknown prompteval option; did you mean "
         "'prompteval_min_pass'? (in tox.ini)"]
    )  # fmt: skip


def test_a_label_no_case_has_is_one_warning(
    project: pytest.Pytester, xdist_args: list[str]
) -> None:
    generated_project(project, 2, fields="  category: bilingual\n")
    result = project.runpytest("--prompt=v", PROVIDER, "-m", "biling", *xdist_args)

    result.assert_outcomes()  # every case deselected
    result.stdout.fnmatch_lines(
        ["prompteval: -m 'biling': no case or test has the label 'biling' (did you mean "
         "'bilingual'?); case labels: bilingual"]
    )  # fmt: skip


def test_a_known_label_warns_nothing(project: pytest.Pytester) -> None:
    generated_project(project, 2, fields="  category: bilingual\n")
    result = project.runpytest("--prompt=v", PROVIDER, "-m", "bilingual and not slow_thing")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*no case or test has the label 'slow_thing'; case labels: *"])
    result.stdout.no_fnmatch_line("*'bilingual'*did you mean*")


def test_an_unknown_difficulty_names_its_line(project: pytest.Pytester) -> None:
    generated_project(project, 1, fields="  difficulty: beginer\n")
    result = project.runpytest("--prompt=v", PROVIDER)

    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["prompt_cases/c.yaml:3: case 'c00': unknown difficulty 'beginer'; did you mean "
         "'beginner'?; known: advanced, beginner, easy, *"]
    )  # fmt: skip


SCORER = """
import pytest_prompteval


@pytest_prompteval.scorer("fields")
def fields(case, request, response):
    return 1.0
"""


@pytest.mark.parametrize(("entry", "passes"), [("{fields: 1}", False), ("{fields: true}", True)])
def test_a_value_given_to_a_scorer_is_an_error(
    project: pytest.Pytester, entry: str, passes: bool
) -> None:
    generated_project(project, 1, fields=f"  assert: [{entry}]\n")
    project.makeconftest(SCORER)
    result = project.runpytest("--prompt=v", PROVIDER)

    if passes:
        result.assert_outcomes(passed=1)
        return
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*assert?0?: scorer 'fields' takes no value (got 1)*"])


def _scoped_project(project: pytest.Pytester) -> None:
    prompts = project.mkdir("prompts")
    for version in ("support", "support2"):
        prompts.joinpath(f"{version}.yaml").write_text(
            "user_prompt: 'Answer {question}'\napplies_to: {ids: ['ticket_*']}\n"
        )
    project.mkdir("prompt_cases").joinpath("c.yaml").write_text(
        "cases:\n"
        "- {id: ticket_001, vars: {question: why}, input: {}}\n"
        "- {id: ticket_002, vars: {question: how}, input: {}}\n"
        "- {id: refund_untagged, vars: {question: when}, input: {}}\n"
    )


def test_a_case_no_selected_version_runs_is_named_and_stops_a_gate(
    project: pytest.Pytester, xdist_args: list[str]
) -> None:
    _scoped_project(project)
    result = project.runpytest(
        "--prompt=support", "--compare=support2", PROVIDER, "--prompteval-markdown=pr.md",
        *xdist_args,
    )  # fmt: skip
    result.assert_outcomes(passed=4)
    unrun = (
        "prompteval: 1 case(s) ran under no selected version (applies_to left them out): "
        "prompt_cases/c.yaml:4 refund_untagged"
    )
    result.stdout.fnmatch_lines([unrun])
    assert f"\n\n⚠️ {unrun}\n\n" in (project.path / "pr.md").read_text()
    gate = project.runpytest("--prompt=support", "--prompteval-exit=gates", PROVIDER)
    assert gate.ret != 0
    gate.assert_outcomes(errors=1)
    gate.stdout.fnmatch_lines(
        ["*prompt_cases/c.yaml:4: case 'refund_untagged' runs under no selected version (the "
         "applies_to of support leaves it out): label it for one, or list it in ini "
         "prompteval_unrun_ok"]
    )  # fmt: skip
    assert "Traceback" not in gate.stdout.str()
    project.makeini("[pytest]\npythonpath = .\nprompteval_unrun_ok = refund_*\n")
    listed = project.runpytest("--prompt=support", "--prompteval-exit=gates", PROVIDER)
    assert listed.ret == 0
    listed.stdout.fnmatch_lines(
        ["prompteval: 1 case(s) listed in prompteval_unrun_ok ran under none"]
    )


def test_prompt_all_compares_the_versions_that_share_cases(project: pytest.Pytester) -> None:
    _scoped_project(project)
    project.path.joinpath("prompts", "code.yaml").write_text(
        "user_prompt: 'Write {entry}.'\napplies_to: {markers: codegen}\n"
    )
    with project.path.joinpath("prompt_cases", "c.yaml").open("a") as cases:
        cases.write("- {id: clamp_001, category: codegen, vars: {entry: clamp}, input: {}}\n")
    result = project.runpytest("--prompt=all", PROVIDER)
    result.assert_outcomes(passed=5)
    verdicts = [line for line in result.outlines if " vs " in line]
    assert len(verdicts) == 1 and "support2 vs support:" in verdicts[0]
    assert "no cases in common" not in result.stdout.str()
