"""pytest's own habits hold, history keeps real runs only, and the end of a run loses
nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import generated_project

ANSWERS = """
def answer(request, *, case, prompt, sample):
    return "Nothing relevant." if '"n": 7' in str(request.to_api()) else "The loop optimization."
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    """Ten cases; c07 fails (its answer misses the topic)."""
    generated_project(pytester, 10)
    pytester.makepyfile(answers=ANSWERS)
    pytester.makeini("[pytest]\npythonpath = .\n")
    return pytester


PROVIDER = "--prompteval-provider=python:answers:answer"


@pytest.mark.parametrize("habit", [["--lf"], ["--ff"], ["--sw"], ["--nf"]])
def test_pytest_cache_options_see_the_versions(
    project: pytest.Pytester, habit: list[str], xdist_args: list[str]
) -> None:
    if habit == ["--sw"] and xdist_args:
        pytest.skip("pytest's --stepwise does not run under xdist")
    stepwise = habit == ["--sw"]
    first = project.runpytest(
        "--prompt=v", PROVIDER, "-p", "no:randomly", *(habit if stepwise else []), *xdist_args
    )
    first.assert_outcomes(passed=7 if stepwise else 9, failed=1)
    again = project.runpytest("--prompt=v", PROVIDER, "-p", "no:randomly", *habit, *xdist_args)
    if habit == ["--lf"]:
        again.assert_outcomes(failed=1)
        if not xdist_args:  # xdist's controller does not print the cache's line
            again.stdout.fnmatch_lines(["run-last-failure: rerun previous 1 failure*"])
    elif habit == ["--ff"]:
        again.assert_outcomes(passed=9, failed=1)
        if not xdist_args:
            again.stdout.fnmatch_lines(["run-last-failure: rerun previous 1 failure first*"])
    elif stepwise:
        again.assert_outcomes(failed=1, deselected=7)  # from c07, where the first run stopped
    else:
        again.assert_outcomes(passed=9, failed=1)


def test_markers_lists_the_case_labels(pytester: pytest.Pytester) -> None:
    generated_project(pytester, 1, fields="  category: loop_optimization\n  tags: [x86]\n")
    result = pytester.runpytest("--prompt=v", "--markers")
    result.stdout.fnmatch_lines_random(
        ["@pytest.mark.loop_optimization: prompt case label", "@pytest.mark.x86: prompt case label"]
    )


def test_selection_by_node_id_and_deselect(project: pytest.Pytester) -> None:
    project.runpytest(
        "--prompt=v", PROVIDER, "prompt_cases/c.yaml::c03[v]", "--deselect",
        "prompt_cases/c.yaml::c04[v]",
    ).assert_outcomes(passed=1)  # fmt: skip
    project.runpytest(
        "--prompt=v", PROVIDER, "--deselect", "prompt_cases/c.yaml::c04[v]"
    ).assert_outcomes(passed=8, failed=1, deselected=1)


@pytest.mark.parametrize(
    "args",
    [["--collect-only"], ["--markers"], ["--fixtures"], ["-k", "nothing_matches"]],
)
def test_runs_without_items_leave_no_history(project: pytest.Pytester, args: list[str]) -> None:
    project.runpytest("--prompt=v", PROVIDER, *args)
    assert not (project.path / "prompt_results").exists()


def test_a_bad_html_path_loses_nothing_else(project: pytest.Pytester) -> None:
    # the folder is made; a path that cannot be a folder is refused before any call
    made = project.runpytest("--prompt=v", PROVIDER, "--prompteval-html=new/sub/r.html")
    made.assert_outcomes(passed=9, failed=1)
    assert (project.path / "new" / "sub" / "r.html").is_file()
    (project.path / "blocker").write_text("a file")
    refused = project.runpytest("--prompt=v", PROVIDER, "--prompteval-html=blocker/r.html")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    refused.stderr.fnmatch_lines(
        [
            "ERROR: --prompteval-html 'blocker/r.html': 'blocker' is a file, so the report's "
            "folder cannot be made"
        ]
    )


def test_an_output_that_fails_at_the_end_keeps_the_others(project: pytest.Pytester) -> None:
    (project.path / "ro").mkdir()
    (project.path / "ro" / "r.html").mkdir()  # a folder where the page should go
    result = project.runpytest(
        "--prompt=v", PROVIDER, "--prompteval-html=ro/r.html", "--junitxml=junit.xml"
    )
    result.assert_outcomes(passed=9, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*prompteval summary*",
            "prompteval results: prompt_results/*_v.json",
            "prompteval: not written: --prompteval-html ro/r.html: Is a directory",
        ]
    )
    assert "prompteval.v.pass_rate" in (project.path / "junit.xml").read_text()
    assert len(list((project.path / "prompt_results").glob("*_v.json"))) == 1
    assert not list((project.path / "prompt_results").glob("*.jsonl"))
    assert "Traceback" not in result.stdout.str()


def test_prompt_versions_scoped_to_their_cases(pytester: pytest.Pytester) -> None:
    pytester.mkdir("prompts")
    pytester.path.joinpath("prompts", "code.yaml").write_text(
        "user_prompt: 'Write {entry}.'\napplies_to: {markers: codegen}\n"
    )
    pytester.path.joinpath("prompts", "support.yaml").write_text(
        "user_prompt: 'Answer {question}'\napplies_to: {ids: ['ticket_*']}\n"
    )
    pytester.mkdir("prompt_cases").joinpath("c.yaml").write_text(
        "cases:\n"
        "- {id: clamp_001, category: codegen, vars: {entry: clamp}, input: {}}\n"
        "- {id: ticket_001, vars: {question: why}, input: {}}\n"
        "- {id: ticket_002, vars: {question: how}, input: {}}\n"
    )
    pytester.makepyfile(app="def answer(request, **kw):\n    return 'ok'\n")
    pytester.makeini("[pytest]\npythonpath = .\n")
    result = pytester.runpytest(
        "--prompt=all", "--collect-only", "-q", "--prompteval-provider=python:app:answer"
    )
    assert [line for line in result.outlines if "::" in line] == [
        "prompt_cases/c.yaml::clamp_001[code]",
        "prompt_cases/c.yaml::ticket_001[support]",
        "prompt_cases/c.yaml::ticket_002[support]",
    ]
    pytester.path.joinpath("prompts", "code.yaml").write_text(
        "user_prompt: x\napplies_to: {markers: 'codegen and'}\n"
    )
    bad = pytester.runpytest("--prompt=code", "--collect-only", "-q")
    bad.stdout.fnmatch_lines(
        ["*prompts/code.yaml:2: applies_to.markers: expected not OR left parenthesis OR *"]
    )


def test_pass_k_above_every_cases_samples_is_a_usage_error(project: pytest.Pytester) -> None:
    result = project.runpytest("--prompt=v", PROVIDER, "--prompteval-pass-k=1,5")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: --prompteval-pass-k 5: more than the 1 sample(s) any case has; draw more "
            "with --prompteval-samples 5 (or a case's samples:)"
        ]
    )


def test_results_files_follow_the_umask(project: pytest.Pytester) -> None:
    project.runpytest("--prompt=v", PROVIDER).assert_outcomes(passed=9, failed=1)
    (stored,) = (project.path / "prompt_results").glob("*_v.json")
    from pytest_prompteval.core.paths import UMASK

    assert stored.stat().st_mode & 0o777 == 0o666 & ~UMASK


def test_an_unwritable_markdown_report_keeps_the_other_outputs(project: pytest.Pytester) -> None:
    (project.path / "md.md").mkdir()  # a folder where the report should go
    result = project.runpytest("--prompt=v", PROVIDER, "--prompteval-markdown=md.md")
    result.assert_outcomes(passed=9, failed=1)
    result.stdout.fnmatch_lines(["prompteval: not written: --prompteval-markdown md.md: *"])
    assert len(list((project.path / "prompt_results").glob("*_v.json"))) == 1
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()


def test_history_from_another_version_reads_back(tmp_path: Path) -> None:
    from pytest_prompteval.core.errors import PromptevalError
    from pytest_prompteval.core.history import load_run

    older = {"case_id": "c", "file": "c.yaml", "prompt": "v", "passed": True, "score": 0.9,
             "judge_score": 0.8, "assertions": [{"type": "contains", "passed": True,
             "score": 1.0, "reason": "ok", "new_key": 1}], "a_future_field": 3}  # fmt: skip
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"meta": {}, "results": [older]}))
    (r,) = load_run(path).results
    assert r.judge_score == 0.8 and r.judge_repeats == [] and r.assertions[0].passed
    assert r.to_json()["a_future_field"] == 3
    journal = tmp_path / "r.jsonl"
    journal.write_text('{"header": {}}\n{"case_id": "c"}\n{"case_id": "d"}\n')
    with pytest.raises(PromptevalError, match="corrupt result line"):
        load_run(journal)


INTERRUPTED_APP = """
def answer(request, *, case, prompt, sample):
    if '"n": 3' in str(request.to_api()):
        raise KeyboardInterrupt  # Ctrl-C while the fourth call is made
    return "The loop optimization."
"""


def test_ctrl_c_keeps_finished_items_and_marks_the_run_partial(pytester: pytest.Pytester) -> None:
    generated_project(pytester, 6)
    pytester.makepyfile(stopped=INTERRUPTED_APP)
    pytester.makeini("[pytest]\npythonpath = .\n")
    result = pytester.runpytest_subprocess(
        "--prompt=v", "--prompteval-provider=python:stopped:answer",
        "--prompteval-concurrency=1", "-p", "no:randomly",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*prompteval summary*", "v * 3 * 3 *"])
    (stored,) = (pytester.path / "prompt_results").glob("*_v.json")
    document = json.loads(stored.read_text())
    assert document["partial"] is True
    assert [r["case_id"] for r in document["results"]] == ["c00", "c01", "c02"]


def test_history_is_standard_json_even_with_a_nan(tmp_path: Path) -> None:
    from pytest_prompteval.core.history import write_json_atomically

    target = tmp_path / "r.json"
    write_json_atomically(target, {"results": [{"score": float("nan"), "cost": float("inf")}]})
    assert json.loads(target.read_text()) == {"results": [{"score": None, "cost": None}]}
    assert "NaN" not in target.read_text() and "Infinity" not in target.read_text()
