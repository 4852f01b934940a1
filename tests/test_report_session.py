"""The report without pytest: what its hooks hand it, the gates it decides and the lines it
gives back (report/ imports no pytest; ``lint-imports`` holds it to that)."""

from __future__ import annotations

from pathlib import Path

from pytest_prompteval.core.result import RESULT_KEY, ItemResult
from pytest_prompteval.report import github
from pytest_prompteval.report.compare import compare
from pytest_prompteval.report.gates import GATE_FAILED, NO_VERDICT, GateRules, decide, score_gates
from pytest_prompteval.report.markdown import relative_link
from pytest_prompteval.report.progress import Progress
from pytest_prompteval.report.session import ReportOptions, ReportSession, Sources, TerminalLine
from pytest_prompteval.report.summary import summarize


def results(version: str, scores: list[float], **fields: object) -> list[ItemResult]:
    return [
        ItemResult(case_id=f"c{i}", file="cases.yaml", prompt=version, outcome="passed" if s >= 0.7
                   else "failed", passed=s >= 0.7, score=s, **fields)  # type: ignore[arg-type]
        for i, s in enumerate(scores)
    ]  # fmt: skip


def test_the_score_gates_name_the_judged_version_and_each_limit() -> None:
    a, b = results("a", [0.75, 0.75, 0.75]), results("b", [0.5, 0.5, 0.5])
    summaries = summarize([*a, *b], ["b", "a"])
    comparisons = [compare(a, b, ("a", "b"))]
    gates = score_gates("b", summaries, comparisons, fail_under=0.8, max_regression=0.1)
    assert [g.message for g in gates] == [
        "mean score of b is 0.500, under --prompteval-fail-under 0.8",
        "b scores 0.250 below a on paired cases, more than --prompteval-max-regression 0.1",
    ]
    assert [g.short for g in gates] == [
        "mean score 0.500 (min 0.8)",
        "mean score down 0.250 (max 0.1)",
    ]
    assert score_gates("b", summaries, comparisons, None, None) == []
    assert score_gates("b", summaries, comparisons, 0.5, 0.25) == []  # at the limits: passes


def test_a_gate_fails_a_run_only_where_the_exit_mode_says() -> None:
    b = results("b", [0.5])
    summaries = summarize(b, ["b"])

    def status(exit: str, pytest_status: int, items: list[ItemResult], other: int = 0) -> int:
        rules = GateRules("b", exit, 0.8, None, 0)
        decision = decide(rules, summaries, [], [], items, pytest_status, other)
        assert decision.failures == ["mean score of b is 0.500, under --prompteval-fail-under 0.8"]
        return decision.exit_status

    assert status("tests", 0, b) == GATE_FAILED
    assert status("tests", 2, b) == 2  # an interrupted run stays interrupted
    assert status("gates", 1, b) == GATE_FAILED
    errored = ItemResult(case_id="c8", file="f", prompt="b", outcome="error")
    budget = ItemResult(case_id="c9", file="f", prompt="b", outcome="skipped", error_type="budget")
    assert status("gates", 1, [errored]) == NO_VERDICT
    assert status("gates", 0, [budget]) == NO_VERDICT
    assert status("gates", 0, [budget], other=1) == GATE_FAILED  # an ordinary test failed


def test_github_environment_gives_the_step_summary_and_links_at_the_commit() -> None:
    assert github.step_summary({}) is None
    assert github.step_summary({"GITHUB_STEP_SUMMARY": ""}) is None
    assert github.step_summary({"GITHUB_STEP_SUMMARY": "/s/summary.md"}) == Path("/s/summary.md")
    assert github.linker({"GITHUB_REPOSITORY": "acme/p"}) is relative_link  # no commit
    link = github.linker({"GITHUB_REPOSITORY": "acme/p", "GITHUB_SHA": "abc"})
    assert link("cases/a b.yaml", 3) == "https://github.com/acme/p/blob/abc/cases/a%20b.yaml#L3"
    env = {
        "GITHUB_REPOSITORY": "acme/p",
        "GITHUB_SHA": "abc",
        "GITHUB_SERVER_URL": "https://g.example",
    }
    assert github.linker(env)("x.yaml", 1) == "https://g.example/acme/p/blob/abc/x.yaml#L1"


def test_progress_speaks_for_long_runs_that_make_calls() -> None:
    replays = Progress()
    replays.total = 40
    assert [replays.add(r) for r in results("a", [0.9] * 40, replayed=True)] == [None] * 40
    short = Progress()
    short.total = 19
    assert not any(short.add(r) for r in results("a", [0.9] * 19, replayed=False))
    live = Progress()
    live.total = 20
    lines = [live.add(r) for r in results("a", [0.9] * 20, replayed=False)]
    assert lines[:2] == [None, "prompteval: 2/20 items, 0 tokens, $0.0000"]
    assert 8 <= sum(line is not None for line in lines) <= 10  # about one a tenth


def session() -> ReportSession:
    options = ReportOptions(
        all_versions=False, pass_ks=(1,), details=False, results_dir=None, estimate=False,
        html=None, markdown=None, stop_early=False, min_kappa=None, exit="tests",
        fail_under=None, max_regression=None, max_new_failures=0, min_effect=0.0,
        gate_metric="pass_rate", scorer="automatic", shard=None,
    )  # fmt: skip
    sources = Sources(lambda: [], lambda: None, lambda r: "", lambda d, m, k: [], lambda: None)
    return ReportSession(options, sources, Path("."), None)


def test_the_report_takes_results_and_counts_the_failures_no_gate_decides() -> None:
    report = session()
    case, inline = results("a", [0.9])[0], results("a", [0.2], inline=True, test="t")[0]
    props = [(RESULT_KEY, case.to_json())]
    assert report.take(props, ("cases.yaml", 7), failed=False, scored=True) == []
    assert report.take(props, ("cases.yaml", 7), failed=True, scored=False) == []
    assert report.other_failures == 0  # a case's failure is the gates' to decide
    report.take([(RESULT_KEY, inline.to_json())], ("test_x.py", 3), failed=True, scored=True)
    report.take([], ("test_y.py", 1), failed=True, scored=True)
    assert report.other_failures == 2  # the fixture's inline test and an ordinary one
    assert [r.case_id for r in report.results] == ["c0"]
    assert report.locations == {"cases.yaml::c0": ("cases.yaml", 7)}
    assert report.where("cases.yaml::c0") == "cases.yaml::c0 (cases.yaml:7)"
    assert report.terminal_lines()[:2] == [
        TerminalLine("prompteval inline runs", "-"),
        TerminalLine("t [a]: failed, score 0.200, no call"),
    ]
    assert report.to_json()["inline"][0]["test"] == "t"
