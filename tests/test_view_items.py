"""``prompteval view`` and the static report on an agent's conversation and a repository
task's verdict, and the review page's rough edges: served on a real socket, checked in real
headless Chromium."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_prompteval.core.history import RunHistory
from pytest_prompteval.core.request import Message, Request
from pytest_prompteval.core.response import Response
from pytest_prompteval.core.result import (
    CheckResult,
    ItemResult,
    RepoResult,
    Step,
    ToolCall,
    Trajectory,
)
from pytest_prompteval.interaction.toolkinds import NOT_KEYED
from pytest_prompteval.report import diffview
from pytest_prompteval.report.html import render_html
from pytest_prompteval.report.summary import summarize
from pytest_prompteval.workflows.review import load_reviews

from .test_view import HOSTILE, TOKEN, Served, _run_name, chromium, served

__all__ = ["served"]  # the server fixture, over this module's ``project``

DIFF = """\
--- a/calc/ops.py
+++ b/calc/ops.py
@@ -1,4 +1,4 @@
 def add(a, b):
--- a comment the agent removed
+    return a + b  # <script>window.pwned = 3</script>
 x = 1
 def sub(a, b):
--- /dev/null
+++ b/notes.txt
@@ -0,0 +1 @@
+<img src=x onerror="window.pwned = 4">
Binary file logo.png added (12 bytes)
"""
FAIL_TO_PASS = "tests/test_ops.py::test_add"
PASS_TO_PASS = "tests/test_ops.py::test_sub"


def agent_item() -> ItemResult:
    steps = [
        Step(
            1, "tool_use", "Let me look the order up.",
            [ToolCall("lookup_order", {"order_id": "A-1", "fields": ["status", 2, None]},
                      '{"status": "delivered"}')],
            thinking="The user wants a refund; check the order first.",
            input_tokens=412, output_tokens=38, latency_ms=830.0, cost_usd=0.0021, replayed=True,
        ),
        Step(
            2, "tool_use", "", [ToolCall("issue_refund", {"order_id": "A-1"}, HOSTILE, True)],
            input_tokens=520, output_tokens=21, latency_ms=610.0, cost_usd=0.0019, replayed=True,
        ),
        Step(
            3, "end_turn", "I cannot refund it; store credit?", turn="Store credit, please.",
            simulated=True,
            input_tokens=700, output_tokens=30, latency_ms=700.0, cost_usd=0.0025, replayed=True,
        ),
    ]  # fmt: skip
    return ItemResult(
        case_id="refund_001", file="agent.yaml", prompt="agent", outcome="failed", passed=False,
        score=0.5, response="I cannot refund it; store credit?",
        assertions=[
            CheckResult("tool_not_called", False, 0.0, 1.0,
                        "expected no call to issue_refund; made: ...", step=2),
            CheckResult("tool_called", True, 1.0, 1.0, "a call to lookup_order"),
        ],
        trajectory=Trajectory(steps, max_steps=5, user_calls=1, user_turns=1),
    )  # fmt: skip


def repo_item(recording: str) -> ItemResult:
    repo = RepoResult(
        resolved=False,
        outcomes={FAIL_TO_PASS: "FAILED", PASS_TO_PASS: "PASSED"},
        fail_to_pass=[FAIL_TO_PASS],
        pass_to_pass=[PASS_TO_PASS],
        fail_to_pass_fixed=0.0,
        pass_to_pass_kept=1.0,
        diff=DIFF,
        output="FAILED tests/test_ops.py::test_add - AssertionError: <b>3 != 4</b>",
    )
    trajectory = Trajectory(
        [Step(1, "tool_use", "", [ToolCall("bash", {"command": "pytest -q"}, "1 failed")]),
         Step(2, "end_turn", "Fixed add.")],
        max_steps=10,
    )  # fmt: skip
    return ItemResult(
        case_id="calc_add", file="repo.yaml", prompt="agent", outcome="failed", passed=False,
        score=0.5, response="Fixed add.", repo=repo, trajectory=trajectory,
        recording=f"recordings/{recording}",
    )  # fmt: skip


def repo_recording(folder: Path) -> str:
    """The recording of a repository conversation's last step: its tool output left out."""
    request = Request.create(
        "claude-test",
        [
            Message("user", ("Fix add in calc/ops.py: it subtracts.",)),
            Message("assistant", ("Running the tests.",)),
            Message("user", (NOT_KEYED,)),
        ],
        "You fix bugs.",
    )
    record = {
        "format": 1, "key": request.key(0), "sample": 0, "request": request.to_api(),
        "response": Response(text="Fixed add.", model="claude-test").to_json(),
    }  # fmt: skip
    folder.mkdir(exist_ok=True)
    (folder / "repo_step.json").write_text(json.dumps(record))
    return "repo_step.json"


def plain_item(case: str) -> ItemResult:
    return ItemResult(
        case_id=case, file="agent.yaml", prompt="agent", outcome="passed", passed=True,
        score=0.9, response="ok",
    )  # fmt: skip


@pytest.fixture
def project(tmp_path: Path) -> tuple[Path, Path]:
    results, recordings = tmp_path / "results", tmp_path / "recordings"
    history = RunHistory(results, {"agent": {}})
    items = [agent_item(), repo_item(repo_recording(recordings)), plain_item("plain_001")]
    for result in items:
        history.add(result)
    summary = summarize(items, ["agent"])[0].to_json()
    history.finalize({"agent": summary}, partial=False)
    return results, recordings


def item_number(served: Served, case: str) -> tuple[str, int]:
    name = _run_name(served.results, "agent")
    run = json.loads((served.results / name).read_text())
    numbers = [r["case_id"] for r in run["results"]]
    return name, numbers.index(case)


# -- the pages as served --------------------------------------------------------------------


def test_an_agent_item_is_a_conversation_with_each_steps_figures(served: Served) -> None:
    name, number = item_number(served, "refund_001")
    status, page = served.get(f"/run/{name}/item/{number}")
    assert status == 200
    conversation = page.split("<h2>Conversation")[1].split("<h2>Answer")[0]
    step1, step2, step3 = conversation.split('<section class="step')[1:]
    # per step: tokens in/out, latency, cost, replayed
    assert "412 in / 38 out tokens · 830 ms · $0.0021 · replayed" in step1
    # thinking folded; the tool's input as a small form, non-strings as highlighted JSON
    assert '<details class="thinking"><summary>thinking</summary>' in step1
    assert "<th>order_id</th><td><pre>A-1</pre>" in step1
    assert '<span class="j-str">&#34;status&#34;</span>' in step1
    assert '<span class="j-num">2</span>' in step1 and '<span class="j-lit">null</span>' in step1
    # the tool error in red, escaped; the step the assertion failed on highlighted
    assert step2.startswith(' failed-step" id="step-2"')
    assert '<div class="msg tool-result tool-error"><span class="role">tool error</span>' in step2
    assert "&lt;script&gt;window.pwned" in step2 and "<script>window.pwned" not in page
    assert "✗ tool_not_called: expected no call to issue_refund" in step2
    assert "failed-step" not in step1 + step3
    assert '<span class="role">simulated user</span><pre>Store credit, please.</pre>' in step3


def test_a_repository_item_shows_its_tests_and_diff(served: Served) -> None:
    name, number = item_number(served, "calc_add")
    status, page = served.get(f"/run/{name}/item/{number}")
    assert status == 200
    repo = page.split("<h2>Repository</h2>")[1].split("<h2>Scores</h2>")[0]
    assert '<span class="unresolved">unresolved</span>' in repo
    failing, passing = repo.split("<tr class=")[1:3]
    assert FAIL_TO_PASS in failing and "fail_to_pass" in failing and "FAILED" in failing
    assert PASS_TO_PASS in passing and '<span class="passed">passed</span>' in passing
    # the diff by file: a removed line that looks like a header stays a removed line
    assert "<code>calc/ops.py</code> <small>changed</small>" in repo
    assert (
        '<tr class="del"><td class="ln">2</td><td class="ln"></td><td class="code">--- a comment'
        in repo
    )
    assert "+    return a + b  # &lt;script&gt;window.pwned = 3&lt;/script&gt;" in repo
    assert "<code>notes.txt</code> <small>added</small>" in repo
    assert "Binary file logo.png added (12 bytes)" in repo
    assert "AssertionError: &lt;b&gt;3 != 4&lt;/b&gt;" in repo  # the test output, failed
    # the request pane: the conversation's first request, no placeholder for tool output
    request = page.split("<h2>Request</h2>")[1].split("<h2>Conversation")[0]
    assert "Fix add in calc/ops.py" in request and "tool output" not in request
    assert "Running the tests." not in request


def test_rough_edges_of_the_pages(served: Served) -> None:
    name, number = item_number(served, "refund_001")
    page = served.get(f"/run/{name}/item/1")[1]
    assert 'item 2 of 3 · <a id="previous-case"' in page.replace("\n", "")
    assert 'previous</a> · <a id="next-case"' in page.replace("\n", "")
    status, icon = served.get("/favicon.ico")
    assert status == 200 and icon.startswith("<svg")
    # the run's summary as tables: a cell per figure
    run = served.get(f"/run/{name}")[1]
    assert '<table class="summary"><tr><th>version</th><th>items</th>' in run
    assert "<th>cost $</th>" in run and "<pre>" not in run.split("<h2>Cases")[0]
    # a rating without the reviewer's name is refused
    rating = {"rubric": "seed", "ratings": {d: 3 for d in SEED}, "reviewer": "  "}
    status, answer = served.post(f"/run/{name}/item/{number}/review", rating, TOKEN)
    assert status == 400 and "reviewer's name" in answer
    assert not (served.results / f"{name}.review.json").exists()


SEED = ("correctness", "completeness", "edge_case_handling", "code_quality")


def test_the_comparison_names_the_versions_in_the_verdicts_order(tmp_path: Path) -> None:
    from starlette.testclient import TestClient

    from pytest_prompteval.view.app import ViewConfig, build_app
    from pytest_prompteval.workflows.review import SEED_DIMENSIONS

    history = RunHistory(tmp_path, {"old": {}, "new": {}})
    for version in ("old", "new"):
        history.add(ItemResult(case_id="c", file="f.yaml", prompt=version, outcome="passed",
                               passed=True, score=1.0))  # fmt: skip
    history.finalize({}, partial=False)
    a, b = (_run_name(tmp_path, v) for v in ("old", "new"))
    app = build_app(ViewConfig(tmp_path, None, {"seed": SEED_DIMENSIONS}, token=TOKEN))
    page = TestClient(app, base_url="http://127.0.0.1").get(f"/compare?a={a}&b={b}").text
    title = page.split("<h1>")[1].split("</h1>")[0]
    verdict = page.split('id="verdict"><b>')[1]
    assert title == "new vs old" and "new vs old" in verdict.split("</b>")[0]
    assert "old vs new" not in page


# -- in the browser ---------------------------------------------------------------------------


def shot(tmp_path: Path, name: str) -> str:
    """Where a screenshot goes: the docs' folder when PROMPTEVAL_VIEW_SCREENSHOTS names it."""
    folder = os.environ.get("PROMPTEVAL_VIEW_SCREENSHOTS")
    return str(Path(folder) / name if folder else tmp_path / name)


@pytest.fixture
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    executable = chromium()
    with sync_playwright() as driver:
        launched = driver.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        try:
            yield launched
        finally:
            launched.close()


def colour(page: Any, selector: str, what: str = "color") -> str:
    return str(page.eval_on_selector(selector, f"e => getComputedStyle(e).{what}"))


def test_an_agent_conversation_in_chromium(served: Served, browser: Any, tmp_path: Path) -> None:
    name, number = item_number(served, "refund_001")
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    page.goto(f"{served.url}/run/{name}/item/{number}")
    page.wait_for_selector(".conversation")
    assert page.evaluate("window.pwned") is None
    error = ".step#step-2 .tool-error pre"
    assert page.text_content(error) == HOSTILE
    assert colour(page, error) == "rgb(140, 29, 24)"  # red on red
    assert colour(page, ".step#step-2", "borderLeftColor") == "rgb(179, 38, 30)"
    assert colour(page, ".step#step-1", "borderLeftColor") != "rgb(179, 38, 30)"
    figures = page.locator(".step .figures").all_text_contents()
    assert figures[1] == "520 in / 21 out tokens · 610 ms · $0.0019 · replayed"
    assert not page.is_visible(".thinking pre")  # folded until asked
    page.click(".thinking summary")
    assert page.is_visible(".thinking pre")
    page.click(".thinking summary")
    page.locator("#step-1").scroll_into_view_if_needed()
    page.evaluate("document.querySelector('h2').scrollIntoView()")
    page.screenshot(path=shot(tmp_path, "view-agent.png"))


def test_a_repository_item_in_chromium(served: Served, browser: Any, tmp_path: Path) -> None:
    name, number = item_number(served, "calc_add")
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    page.goto(f"{served.url}/run/{name}/item/{number}")
    page.wait_for_selector(".repo")
    assert page.evaluate("window.pwned") is None
    assert page.locator("details.diff-file").count() == 2
    assert colour(page, "table.diff tr.add", "backgroundColor") == "rgb(230, 255, 236)"
    assert colour(page, "table.diff tr.del", "backgroundColor") == "rgb(255, 235, 233)"
    assert page.text_content("table.diff tr.add .code") == (
        "+    return a + b  # <script>window.pwned = 3</script>"
    )
    rows = page.locator("table.tests tr").all_text_contents()
    assert FAIL_TO_PASS in rows[1] and "failed" in rows[1] and "passed" in rows[2]
    page.evaluate("document.querySelectorAll('h2')[3].scrollIntoView()")
    page.screenshot(path=shot(tmp_path, "view-repo.png"))


def test_review_rough_edges_in_chromium(served: Served, browser: Any) -> None:
    name, number = item_number(served, "plain_001")
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    missing: list[str] = []
    page.on("response", lambda r: missing.append(r.url) if r.status >= 400 else None)
    page.goto(f"{served.url}/run/{name}/item/{number}")
    page.wait_for_selector("#review")

    def active() -> str:
        return str(page.eval_on_selector("fieldset.active", "e => e.dataset.dimension"))

    # four ratings go round the dimensions: the fifth rates the first again
    for key in ("Escape", "2", "3", "1", "4"):
        page.keyboard.press(key)
    assert active() == "correctness"
    page.keyboard.press("5")
    assert page.is_checked('input[name="dim-correctness"][value="5"]')
    assert page.is_checked('input[name="dim-code_quality"][value="4"]')
    assert active() == "completeness"
    page.click('input[name="dim-edge_case_handling"][value="2"]')  # a click moves it too
    assert active() == "code_quality"
    # no name: nothing saved, the name asked for
    page.fill('input[name="reviewer"]', "")
    page.click("#review button[type=submit]")
    page.wait_for_selector("#review-status.warn")
    assert "name" in (page.text_content("#review-status") or "")
    assert not (served.results / f"{name}.review.json").exists()
    page.fill('input[name="reviewer"]', "ana")
    page.click("#review button[type=submit]")
    page.wait_for_selector("#review-status.saved")
    (review,) = load_reviews(served.results / name).values()
    assert review["reviewer"] == "ana" and review["ratings"]["correctness"] == 5
    # once per browser: the next item knows the name
    page.goto(f"{served.url}/run/{name}/item/0")
    page.wait_for_selector("#review")
    assert page.input_value('input[name="reviewer"]') == "ana"
    assert " · " in (page.text_content(".item-pager") or "")
    # the summary's cost column on one line
    page.goto(f"{served.url}/run/{name}")
    page.wait_for_selector("table.summary")
    heights = page.eval_on_selector_all(
        "table.summary:first-of-type td", "cells => cells.map(c => c.getClientRects().length)"
    )
    assert heights and set(heights) == {1}
    assert missing == []  # the favicon too


# -- the static report ------------------------------------------------------------------------


def test_the_static_report_shows_the_repository_diff_and_the_conversation(
    tmp_path: Path,
) -> None:
    items = [agent_item(), repo_item("repo_step.json")]
    page = render_html(items, summarize(items, ["agent"]), [], "suite")
    assert "<script" not in page.replace("&lt;script", "")
    assert '<span class="unresolved">unresolved</span>' in page
    assert '<tr class="add"><td class="ln"></td><td class="ln">2</td><td class="code">+' in page
    assert "+    return a + b  # &lt;script&gt;window.pwned = 3&lt;/script&gt;" in page
    assert FAIL_TO_PASS in page and "AssertionError: &lt;b&gt;3 != 4&lt;/b&gt;" in page
    assert '<div class="msg tool-result tool-error">' in page
    assert "412 in / 38 out tokens · 830 ms · $0.0021 · replayed" in page
    assert 'class="step failed-step" id="step-2"' in page


# -- the pieces -------------------------------------------------------------------------------


def test_a_diff_is_read_by_its_hunks_counts_whatever_it_holds() -> None:
    files = diffview.parse(DIFF)
    assert [(f.name, f.status, f.added, f.removed) for f in files] == [
        ("calc/ops.py", "changed", 1, 1),
        ("notes.txt", "added", 1, 0),
        ("Binary file logo.png added (12 bytes)", "note", 0, 0),
    ]
    assert [line.kind for line in files[0].hunks[0].lines] == ["ctx", "del", "add", "ctx", "ctx"]
    # hostile: a header past the end, counts larger than the text, a bad quoted name
    hostile = '--- "a/x\\q"\n+++ b/x\n@@ -1,99999999 +1,99999999 @@\n-a\n+b\n@@ -x @@\n'
    (only,) = diffview.parse(hostile)
    assert (only.name, only.added, only.removed) == ("x", 1, 1)
    assert [(line.kind, line.text) for line in only.hunks[0].lines][-1] == ("ctx", "@ -x @@")
    assert diffview.parse("") == [] and diffview.parse("@@ -1 +1 @@\n")[0].status == "note"


def test_a_result_written_before_the_step_figures_loads_and_shows(tmp_path: Path) -> None:
    old = agent_item().to_json()
    for step in old["trajectory"]["steps"]:
        for key in ("simulated", "thinking", "input_tokens", "output_tokens", "latency_ms",
                    "cost_usd", "replayed"):  # fmt: skip
            del step[key]
    for check in old["assertions"]:
        del check["step"]
    old["repo"] = {**repo_item("x").to_json()["repo"]}
    del old["repo"]["output"]
    loaded = ItemResult.from_json(json.loads(json.dumps(old)))
    assert loaded.trajectory is not None and loaded.trajectory.steps[0].input_tokens is None
    assert loaded.repo is not None and loaded.repo.output is None
    page = render_html([loaded], summarize([loaded], ["agent"]), [], "old")
    assert "tokens ·" not in page and "issue_refund" in page


@pytest.mark.parametrize(
    ("kind", "value", "mode", "step"),
    [
        ("tool_not_called", "issue_refund", "exact", 2),
        ("tool_sequence", ["lookup_order", "cancel"], "exact", 2),  # off at the second call
        ("tool_sequence", ["lookup_order"], "exact", 2),  # a call more than the sequence
        ("tool_sequence", ["lookup_order"], "subset", 2),  # the first call outside it
        ("tool_sequence", ["a", "lookup_order", "issue_refund"], "in_order", None),
        ("tool_called", "cancel", "exact", None),  # no call broke it: none missing is named
        ("max_steps", 1, "exact", 2),  # the first step over
    ],
)
def test_a_failed_trajectory_assertion_names_the_step_that_broke_it(
    kind: str, value: Any, mode: str, step: int | None
) -> None:
    from pytest_prompteval.scoring.assertions import Assertion, check_trajectory

    trajectory = agent_item().trajectory
    assert trajectory is not None
    checked = check_trajectory(Assertion(kind, value, mode=mode), trajectory)
    assert not checked.passed and checked.result().step == step


def test_a_results_file_with_figures_of_any_shape_still_renders() -> None:
    # the results folder is hostile input: a figure that is no number shows as none
    data = agent_item().to_json()
    step = data["trajectory"]["steps"][0]
    step.update(input_tokens="lots", output_tokens=[], cost_usd="x", latency_ms={}, number='1"x')
    step["calls"][0]["input"] = ["not", "a", "mapping"]
    data["assertions"][0]["step"] = [2]
    loaded = ItemResult.from_json(json.loads(json.dumps(data)))
    page = render_html([loaded], summarize([loaded], ["agent"]), [], "hostile")
    assert 'id="step-1&#34;x"' in page and "lots" not in page
    assert "<th>input</th>" in page and "520 in / 21 out tokens" in page
