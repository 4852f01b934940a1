"""One number, one spelling: each inconsistency of issue #24 point 8 with its own numbers, and
every figure that can be missing written as "-" instead of a crash."""

from __future__ import annotations

from xml.etree import ElementTree

import pytest

from pytest_prompteval.report import figures
from pytest_prompteval.report.compare import compare
from pytest_prompteval.report.flaky import case_samples, sample_lines
from pytest_prompteval.report.markdown import MarkdownRun, render_markdown
from pytest_prompteval.report.summary import summarize
from pytest_prompteval.report.terminal import notes_block, table, versions_rows

from .verdict_data import item


def test_a_figure_computed_in_two_orders_reads_the_same() -> None:
    # pass@3 0.8625 printed 0.863 in one table and 0.862 in another: two float sums
    below, above = 0.8624999999999999, 0.8625000000000002
    assert figures.share(below) == figures.share(above) == "86.3%"
    assert figures.score(below) == figures.score(above) == "0.863"
    # 77/80 printed 96.2% and 0.963 in one row
    assert figures.share(77 / 80) == "96.3%" and figures.score(77 / 80) == "0.963"
    assert figures.share(-1e-12, signed=True) == "+0.0%"  # never -0.0%
    assert figures.interval((-0.4, 0.25), "share", signed=True) == "[-40.0%, +25.0%]"
    assert figures.interval((0.94, 0.971)) == "[0.940, 0.971]"  # a level: no sign
    for write in (figures.share, figures.score, figures.dollars, figures.money):
        assert write(None) == "-"
    assert figures.interval(None) == "-" and figures.exact(None) == ""


def test_pass_at_3_reads_the_same_in_the_versions_table_and_the_samples_block() -> None:
    # pass@3 over 8 cases of 5 samples: six always pass (1), one passes 2 (0.9), one none (0)
    passes = [5, 5, 4, 3, 5, 5, 2, 0]
    results = [
        item("v", f"c{i}", 0.9 if s < n else 0.1, sample=s)
        for i, n in enumerate(passes)
        for s in range(5)
    ]
    (s,) = summarize(results, ["v"], (1, 3))
    assert s.pass_at_k[3] == pytest.approx(0.8625)
    # version items passed failed errored skipped | pass rate, score, pass@1, pass@3
    cells = table(versions_rows([s]))[1].split()
    assert cells[9] == "86.3%"
    # 29 of 40 samples: pass rate and pass@1 are one number, spelled once
    assert cells[6] == cells[8] == "72.5%"
    assert sample_lines(case_samples(results), (1, 3))[0].startswith(
        "v: pass@1 72.5%  pass^1 72.5%; pass@3 86.3%"
    )


def test_the_comparison_s_pass_rate_is_the_tables_difference() -> None:
    # 4 cases x 2 samples: a passes 6 of 8 samples (two cases 1/2), b all 8. By case majority
    # (a 1/2 tie fails) a was at 50% and the comparison said +50.0% beside 75.0% / 100.0%.
    a = [item("a", f"c{i}", 0.1 if (i < 2 and s == 1) else 0.9, sample=s) for i in range(4)
         for s in range(2)]  # fmt: skip
    b = [item("b", f"c{i}", 0.9, sample=s) for i in range(4) for s in range(2)]
    summaries = summarize(a + b, ["b", "a"])
    assert [row.split()[6] for row in table(versions_rows(summaries))[1:]] == ["100.0%", "75.0%"]
    c = compare(a, b, ("a", "b"))
    assert "pass@1 +25.0% " in c.verdict


def test_a_case_min_pass_fails_is_a_regression_of_the_comparison_too() -> None:
    # 3/5 under min_pass 4: the samples block said "fails" while the comparison, by majority,
    # counted it passing
    a = [item("a", "c0", 0.9, sample=s, min_pass=4) for s in range(5)]
    b = [item("b", "c0", 0.9 if s < 3 else 0.1, sample=s, min_pass=4) for s in range(5)]
    lines = sample_lines(case_samples(a + b), (1,))
    assert "  flaky c.yaml::c0 [b]: 3/5 passed, 95% CI [23.1%, 88.2%], min_pass 4: fails" in lines
    c = compare(a, b, ("a", "b"))
    assert c.regressions == ["c.yaml::c0"] and c.changes["c.yaml::c0"] == ("5/5", "3/5")


def test_one_cost_everywhere_and_a_replay_spends_nothing() -> None:
    # the terminal said $0.0561 (generation), the Markdown $0.1349 (judge included), and
    # "$0.2694 ... 320 of 320 calls replayed" as if spent
    results = [
        item("v", f"c{i}", 0.9, cost_usd=0.0005, judge_cost_usd=0.0003, calls_replayed=2,
             calls_live=0, judged=True)
        for i in range(10)
    ]  # fmt: skip
    (s,) = summarize(results, ["v"])
    assert table(versions_rows([s]))[1].split()[11] == "0.0080"  # cost $, the judge's included
    markdown = render_markdown(MarkdownRun([s], [], cases=case_samples(results)))
    assert "| `v` | 10 | 10 | 100.0% | 0.900 | 100.0% | 100.0% | 0 | 0.0080 |" in markdown
    spent = (
        "$0.0000 spent: all 20 calls replayed from recordings, which cost $0.0080 to record "
        "(generation $0.0050, judge $0.0030)"
    )
    assert f"v: cost: {spent}" in notes_block([s])
    assert f"### Cost\n\n{spent}; 0 tokens" in markdown
    assert figures.cost_line(0.01, 0.0, 4, 0) == "$0.0100 spent on 4 live calls"


def test_a_version_that_only_errored_renders_as_dashes() -> None:
    # the TypeError of the Markdown's versions table, and the Wilson interval of no sample
    results = [
        item("v", f"c{i}", None, sample=s, error_type="missing_recording", min_pass=0.8)
        for i in range(2)
        for s in range(5)
    ]
    (s,) = summarize(results, ["v"])
    assert table(versions_rows([s]))[1].split()[6:9] == ["-", "-", "-"]
    markdown = render_markdown(MarkdownRun([s], [], cases=case_samples(results)))
    assert "| `v` | 10 | 0 | - | - | - | - | 10 | 0.0000 |" in markdown
    assert sample_lines(case_samples(results), (1,))[1] == (
        "  flaky c.yaml::c0 [v]: 0/0 passed, 95% CI -, min_pass 0.8: undecided, 5 samples errored"
    )


@pytest.fixture
def two_versions(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(
        app="def answer(request, *, case, prompt, sample):\n"
        "    broken = prompt.version == 'old' and case.id == 'flaky' and sample >= 2\n"
        "    return 'nothing' if broken else 'a loop'\n"
    )
    pytester.makeini("[pytest]\npythonpath = .\nprompteval_results = none\n")
    prompts = pytester.mkdir("prompts")
    for version in ("old", "new"):
        prompts.joinpath(f"{version}.yaml").write_text(f"user_prompt: {version}\n")
    pytester.mkdir("prompt_cases").joinpath("c.yaml").write_text(
        "cases:\n"
        "- {id: flaky, input: {n: 1}, threshold: 0, samples: 5, min_pass: 4, quality: hard,\n"
        "   assert: [{contains: loop}]}\n"
        "- {id: plain, input: {n: 2}, threshold: 0, samples: 5, assert: [{contains: loop}]}\n"
    )
    return pytester


def test_min_pass_of_a_compared_version_fails_tests_mode_only(
    two_versions: pytest.Pytester,
) -> None:
    # tests mode: every item of every version is a test, so old's case below its min_pass
    # fails the run as its failing samples would without min_pass; gates mode judges new only
    run = ("--prompt=new", "--compare=old", "--prompteval-provider=python:app:answer")
    tests = two_versions.runpytest(*run, "--junitxml=junit.xml")
    assert tests.ret == pytest.ExitCode.TESTS_FAILED
    tests.stdout.fnmatch_lines(["FAILED prompt_cases/c.yaml::flaky[[]old-min_pass] - 2/5 *"])
    suite = ElementTree.parse(two_versions.path / "junit.xml").getroot()[0]
    assert suite.get("failures") == "1"
    names = {p.get("name") for p in suite.find("properties") or ()}
    # a quality label some cases lack: no property named "prompteval.new.quality.-"
    assert "prompteval.new.quality.hard" in names
    assert not any(name and name.endswith(".-") for name in names)
    gates = two_versions.runpytest(*run, "--prompteval-exit=gates", "--junitxml=junit.xml")
    assert gates.ret == pytest.ExitCode.OK
    # JUnit still shows old's case as the failure it is; the gate is the exit status
    assert ElementTree.parse(two_versions.path / "junit.xml").getroot()[0].get("failures") == "1"


def test_a_simulated_users_cost_is_its_own_whatever_became_of_the_item() -> None:
    # the user's cost was added to the answers' ("generation") and left out when the
    # conversation errored before it ended (no trajectory on the result)
    conversation = {"steps": [], "max_steps": 5}
    ran = item(
        "v",
        "a",
        0.9,
        cost_usd=0.01,
        judge_cost_usd=0.003,
        user_calls=2,
        user_cost_usd=0.002,
        calls_live=5,
        calls_replayed=0,
        trajectory=conversation,
    )
    erred = item(
        "v",
        "b",
        None,
        error_type="api",
        user_calls=1,
        user_cost_usd=0.001,
        calls_live=3,
        calls_replayed=0,
    )
    (s,) = summarize([ran, erred], ["v"])
    assert s.user_calls == 3 and s.user_cost_usd == pytest.approx(0.003)
    assert s.cost_usd == pytest.approx(0.01)  # the answers' alone
    assert s.to_json()["cost_usd"] == s.cost_usd
    spent = (
        "$0.0160 spent on 8 live calls (generation $0.0100, judge $0.0030, simulated users $0.0030)"
    )
    assert f"v: cost: {spent}" in notes_block([s])
    assert table(versions_rows([s]))[1].split()[11] == "0.0160"  # cost $: every call's
    markdown = render_markdown(MarkdownRun([s], [], cases=case_samples([ran, erred])))
    assert f"### Cost\n\n{spent}; 0 tokens" in markdown
