"""``prompteval view``: the server on a real socket, and the pages in real headless Chromium."""

from __future__ import annotations

import json
import os
import shutil
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from pytest_prompteval.core.history import RunHistory
from pytest_prompteval.core.request import Message, Request
from pytest_prompteval.core.response import Response
from pytest_prompteval.core.result import (
    CheckResult,
    ItemResult,
    JudgeResult,
    Step,
    ToolCall,
    Trajectory,
)
from pytest_prompteval.report.summary import summarize
from pytest_prompteval.testing import AnthropicServer
from pytest_prompteval.view.app import TOKEN_HEADER, ViewConfig, build_app
from pytest_prompteval.view.index import Index
from pytest_prompteval.view.serve import listen
from pytest_prompteval.workflows.review import SEED_DIMENSIONS, load_reviews

from .conftest import generated_project, item_results

TOKEN = "session-token-for-tests"
HOSTILE = 'Beware <script>window.pwned = 1</script> and <img src=x onerror="window.pwned = 2">'
SECRET = "outside-the-results-folder"
TRAJECTORY = Trajectory(
    [
        Step(1, "tool_use", "Let me look.", [ToolCall("grep", {"q": "loop"}, HOSTILE, True)]),
        Step(2, "end_turn", "Found it.", turn="thanks"),
    ],
    max_steps=5,
)


def _result(version: str, case: str, passed: bool, answer: str, **fields: object) -> ItemResult:
    return ItemResult(
        case_id=case,
        file="cases.yaml",
        prompt=version,
        category="loops" if case.startswith("loop") else "inline",
        outcome="passed" if passed else "failed",
        passed=passed,
        score=0.9 if passed else 0.3,
        response=answer,
        judge=JudgeResult(
            0.8 if passed else 0.2, {"correctness": 0.75}, "judge notes", [], 0, "j", "t"
        ),
        assertions=[CheckResult("contains", passed, 1.0 if passed else 0.0, 1.0, "wanted 'loop'")],
        **fields,  # type: ignore[arg-type]
    )


def _recording(folder: Path) -> str:
    request = Request.create(
        "claude-test", [Message("user", ("Explain the loop in <b>main</b>",))], "You explain code."
    )
    key = request.key(0)
    record = {
        "format": 1,
        "key": key,
        "sample": 0,
        "request": request.to_api(),
        "response": Response(text=HOSTILE, model="claude-test").to_json(),
    }
    folder.mkdir(exist_ok=True)
    (folder / f"{key}.json").write_text(json.dumps(record))
    return f"{key}.json"


@pytest.fixture
def project(tmp_path: Path) -> tuple[Path, Path]:
    results, recordings = tmp_path / "results", tmp_path / "recordings"
    recording = _recording(recordings)
    history = RunHistory(results, {"v1": {}, "v2": {}})
    rows = [
        ("v1", "loop_001", True, "The loop is unrolled."),
        ("v1", "loop_002", True, "A loop."),
        ("v1", "inline_001", True, "Inlined."),
        ("v2", "loop_001", False, HOSTILE),
        ("v2", "loop_002", True, "A loop, vectorized."),
        ("v2", "inline_001", True, "Inlined call."),
    ]
    for version, case, passed, answer in rows:
        extra: dict[str, object] = {"extra": {"tags": ["hot"]}} if case == "loop_002" else {}
        if answer == HOSTILE:
            extra = {"recording": f"recordings/{recording}", "trajectory": TRAJECTORY}
        history.add(_result(version, case, passed, answer, **extra))
    summaries = {}
    for version in ("v1", "v2"):
        results_of = [r for r, _ in history.results[version]]
        summaries[version] = summarize(results_of, [version])[0].to_json()
    history.finalize(summaries, partial=False)
    (tmp_path / "secret.json").write_text(SECRET)
    return results, recordings


@dataclass
class Served:
    url: str
    results: Path

    def get(self, path: str, host: str | None = None) -> tuple[int, str]:
        request = urllib.request.Request(self.url + path)
        if host:
            request.add_header("Host", host)
        try:
            with urllib.request.urlopen(request) as answer:
                return answer.status, answer.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()

    def post(self, path: str, body: object, token: str | None) -> tuple[int, str]:
        request = urllib.request.Request(self.url + path, data=json.dumps(body).encode())
        request.add_header("Content-Type", "application/json")
        if token is not None:
            request.add_header(TOKEN_HEADER, token)
        try:
            with urllib.request.urlopen(request) as answer:
                return answer.status, answer.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()


@pytest.fixture
def served(project: tuple[Path, Path]) -> Iterator[Served]:
    results, recordings = project
    config = ViewConfig(results, recordings, {"seed": SEED_DIMENSIONS}, token=TOKEN)
    sock = listen()  # listening already: requests queue until the server takes them
    server = uvicorn.Server(uvicorn.Config(build_app(config), log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        yield Served(f"http://127.0.0.1:{sock.getsockname()[1]}", results)
    finally:
        server.should_exit = True
        thread.join()
        sock.close()


def _run_name(results: Path, version: str) -> str:
    return next(p.name for p in results.glob(f"*_{version}.json"))


def test_runs_page_lists_both_runs_from_head_and_tail(served: Served) -> None:
    status, page = served.get("/")
    assert status == 200
    assert _run_name(served.results, "v1") in page and _run_name(served.results, "v2") in page
    entry = Index(served.results).entry(_run_name(served.results, "v2"))
    assert (entry.items, entry.passed, entry.failed, entry.partial) == (3, 2, 1, False)


def test_a_run_filtered_by_a_marker_shows_the_cases_with_that_label(served: Served) -> None:
    name = _run_name(served.results, "v2")
    status, page = served.get(f"/run/{name}?marker=hot")
    assert status == 200 and "loop_002" in page
    assert "loop_001" not in page and "inline_001" not in page
    assert "inline_001" in served.get(f"/run/{name}?marker=inline")[1]  # a category


def test_a_partial_run_is_marked_and_counted_from_its_journal(tmp_path: Path) -> None:
    header = {"header": {"prompt_version": "v3", "started_at": "now"}, "partial": True}
    lines = [json.dumps(header), json.dumps(_result("v3", "loop_001", True, "ok").to_json())]
    (tmp_path / "20250101_000000_v3.jsonl").write_text("\n".join(lines) + "\n")
    entry = Index(tmp_path).entry("20250101_000000_v3.jsonl")
    assert (entry.items, entry.passed, entry.partial, entry.version) == (1, 1, True, "v3")


@pytest.mark.parametrize(
    "path",
    [
        "/run/..%2Fsecret.json",
        "/run/%2e%2e%2fsecret.json",
        "/run/20250101_000000_x.json.review.json",
        "/recording/..%2Fsecret.json",
        "/recording/%2e%2e%2fsecret.json",
        "/static/..%2F..%2Fpyproject.toml",
        "/static/%2e%2e/%2e%2e/secret.json",
        "/compare?a=../secret.json&b=../secret.json",
    ],
)
def test_no_file_outside_the_folders_is_served(served: Served, path: str) -> None:
    status, page = served.get(path)
    assert status == 404 and SECRET not in page


def test_a_link_out_of_the_folders_is_refused(served: Served, project: tuple[Path, Path]) -> None:
    results, recordings = project
    outside = results.parent / "secret.json"
    (results / "20250101_000000_evil.json").symlink_to(outside)
    (recordings / "evil.json").symlink_to(outside)
    for path in ("/run/20250101_000000_evil.json", "/recording/evil.json"):
        status, page = served.get(path)
        assert status == 404 and SECRET not in page, path


def test_a_write_needs_the_session_token_and_the_local_host(served: Served) -> None:
    name = _run_name(served.results, "v2")
    rating: dict[str, Any] = {
        "rubric": "seed",
        "ratings": {d: 4 for d, _ in SEED_DIMENSIONS},
        "comment": "ok",
        "reviewer": "ana",
    }
    assert served.post(f"/run/{name}/item/0/review", rating, None)[0] == 403
    assert served.post(f"/run/{name}/item/0/review", rating, "guessed")[0] == 403
    assert not (served.results / f"{name}.review.json").exists()
    # DNS rebinding: a page of evil.example resolving to 127.0.0.1 names its own host
    assert served.get("/", host="evil.example")[0] == 400
    status, answer = served.post(f"/run/{name}/item/0/review", rating, TOKEN)
    assert status == 200, answer
    (review,) = load_reviews(served.results / name).values()
    assert review["ratings"] == rating["ratings"] and review["reviewer"] == "ana"
    bad = {**rating, "ratings": {**rating["ratings"], "correctness": 9}}
    assert served.post(f"/run/{name}/item/0/review", bad, TOKEN)[0] == 400


def test_two_reviewers_keep_their_own_ratings(served: Served) -> None:
    name = _run_name(served.results, "v1")
    for reviewer, value in (("ana", 2), ("bo", 5)):
        rating = {"rubric": "seed", "ratings": {d: value for d, _ in SEED_DIMENSIONS},
                  "reviewer": reviewer}  # fmt: skip
        assert served.post(f"/run/{name}/item/1/review", rating, TOKEN)[0] == 200
    reviews = load_reviews(served.results / name)
    assert {k[3]: r["ratings"]["correctness"] for k, r in reviews.items()} == {"ana": 2, "bo": 5}


def test_the_case_page_escapes_the_answer_and_shows_the_request(served: Served) -> None:
    name = _run_name(served.results, "v2")
    status, page = served.get(f"/run/{name}/item/1")
    assert status == 200
    assert "<script>window.pwned" not in page and "&lt;script&gt;window.pwned" in page
    assert 'onerror="window' not in page
    assert "You explain code." in page and "Explain the loop in &lt;b&gt;main&lt;/b&gt;" in page
    # the agent's conversation, its tool's result escaped
    assert "<h2>Conversation <small>2 steps, 1 tool calls, 1 tool errors</small></h2>" in page
    assert '<code class="tool-name">grep</code>' in page and "<th>q</th><td><pre>loop</pre>" in page
    error = page.split('<div class="msg tool-result tool-error">')[1].split("</div>")[0]
    assert "&lt;script&gt;window.pwned" in error
    assert '<span class="role">user</span><pre>thanks</pre>' in page


def chromium() -> str:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        if os.environ.get("PROMPTEVAL_REQUIRE_CHROMIUM"):
            pytest.fail("chromium is required here (PROMPTEVAL_REQUIRE_CHROMIUM is set)")
        pytest.skip("chromium is not installed (.ci/run installs it)")
    return browser


def test_review_in_headless_chromium(served: Served, tmp_path: Path) -> None:
    from playwright.sync_api import Dialog, sync_playwright

    executable = chromium()
    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            dialogs: list[str] = []

            def dismiss(dialog: Dialog) -> None:
                dialogs.append(dialog.message)
                dialog.dismiss()

            page.on("dialog", dismiss)
            page.goto(served.url + "/")
            assert page.locator("tr.run").count() == 2
            v2 = _run_name(served.results, "v2")
            page.click(f'a[href="/run/{v2}"]')
            page.wait_for_url(f"**/run/{v2}")
            assert page.locator("tr.case-row").count() == 3
            page.check('input[name="failures"]')
            page.click("#apply-filters")
            page.wait_for_url("**failures=1**")
            assert page.locator("tr.case-row").count() == 1
            page.click("tr.case-row a.item")
            page.wait_for_selector("#answer")
            assert page.text_content("#answer") == HOSTILE
            assert page.evaluate("window.pwned") is None and dialogs == []
            assert page.text_content("#system") == "You explain code."
            # rate with the keyboard: 1-5 per dimension, Enter saves
            page.fill('input[name="reviewer"]', "ana")
            page.fill('textarea[name="comment"]', "confident and wrong")
            for key in ("Escape", "2", "3", "1", "4", "Enter"):
                page.keyboard.press(key)
            page.wait_for_selector("#review-status.saved")
            page.wait_for_url("**reviewer=ana**")
            page.reload()
            page.wait_for_selector("#review")
            checked = page.eval_on_selector_all(
                "#review input[type=radio]:checked", "els => els.map(e => e.name + '=' + e.value)"
            )
            assert checked == ["dim-correctness=2", "dim-completeness=3",
                               "dim-edge_case_handling=1", "dim-code_quality=4"]  # fmt: skip
            assert page.input_value('textarea[name="comment"]') == "confident and wrong"
            assert "human (ana" in page.text_content("body")  # type: ignore[operator]
            page.evaluate("window.scrollTo(0, 0)")
            shot = os.environ.get("PROMPTEVAL_VIEW_SCREENSHOT")  # the docs' picture, docs/view.png
            page.screenshot(path=shot or str(tmp_path / "view.png"), full_page=False)
            page.go_back()  # ordinary links: back is the filtered list
            page.wait_for_selector("#cases")
            assert page.locator("tr.case-row").count() == 1
        finally:
            browser.close()
    (review,) = load_reviews(served.results / v2).values()
    assert review["ratings"]["correctness"] == 2 and review["comment"] == "confident and wrong"


def test_the_comparison_page_names_what_got_worse_with_scores(served: Served) -> None:
    v1, v2 = _run_name(served.results, "v1"), _run_name(served.results, "v2")
    status, page = served.get(f"/compare?a={v1}&b={v2}")
    assert status == 200
    assert 'id="verdict"' in page and "v2 vs v1" in page
    worse = page.split("<h2>Worse (1)</h2>")[1].split("<h2>Better")[0]
    assert "cases.yaml::loop_001" in worse and "0.900" in worse and "0.300" in worse
    assert f'href="/run/{v1}/item/' in worse and f"?vs={v2}" in worse
    # the same case's two answers side by side, with their diff
    status, page = served.get(f"/run/{v1}/item/1?vs={v2}")
    assert status == 200 and '<span class="del">-The loop is unrolled.</span>' in page
    assert '<span class="add">+Beware &lt;script&gt;' in page


def test_the_calibration_page_sets_ratings_beside_the_judge(served: Served) -> None:
    name = _run_name(served.results, "v2")
    for number, value in ((0, 4), (1, 1), (2, 5)):
        rating = {"rubric": "seed", "ratings": {d: value for d, _ in SEED_DIMENSIONS},
                  "reviewer": "ana"}  # fmt: skip
        assert served.post(f"/run/{name}/item/{number}/review", rating, TOKEN)[0] == 200
    status, page = served.get("/calibration")
    assert status == 200 and "Judge j" in page and "quadratic weights" in page
    row = page.split("<td>correctness</td>")[1].split("</tr>")[0]
    assert '<td class="num">3</td>' in row  # three answers rated by both


def _many_cases(count: int, failing: int) -> list[ItemResult]:
    results = []
    for i in range(count):
        for sample in range(3):
            passed = i >= failing or sample == 0
            results.append(
                ItemResult(
                    case_id=f"case_{i:04d}", file="cases.yaml", prompt="v", sample=sample,
                    samples=3, outcome="passed" if passed else "failed", passed=passed,
                    score=0.9 if passed else 0.2, response=f"answer {i}.{sample}\n" * 3,
                    min_pass=2,
                )
            )  # fmt: skip
    return results


def test_the_static_report_puts_failures_first_and_folds_the_passes(tmp_path: Path) -> None:
    from pytest_prompteval.report.html import render_html

    results = _many_cases(1000, 5)
    page = render_html(results, summarize(results, ["v"]), [], "big suite")
    assert page.index("case_0004") < page.index("case_0005")
    assert "<h2>Cases not passing (5)</h2>" in page and "<h2>Passing cases (995)</h2>" in page
    failing = page.split("<h2>Cases not passing")[1].split("<h2>Passing cases")[0]
    assert failing.count('<details class="case" open>') == 5
    assert "k/n 1/3" in failing and "min_pass 2: not met" in failing
    passing = page.split("<h2>Passing cases")[1]
    assert "<details open" not in passing and "min_pass 2: met" in passing
    executable = chromium()
    (tmp_path / "report.html").write_text(page)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        try:
            view = browser.new_page(viewport={"width": 1280, "height": 900})
            view.goto((tmp_path / "report.html").as_uri())
            height = view.evaluate("document.documentElement.scrollHeight")
        finally:
            browser.close()
    # 1,000 cases of 3 samples: the five failing ones open, the rest one folded line
    assert height < 6000, height


def test_prompteval_view_serves_on_loopback_and_names_a_misspelled_rubric(tmp_path: Path) -> None:
    import subprocess
    import sys

    (tmp_path / "prompt_results").mkdir()
    command = [sys.executable, "-m", "pytest_prompteval.cli", "view", "--no-open"]
    wrong = subprocess.run([*command, "--rubric", "defualt_review"], cwd=tmp_path,
                           capture_output=True, text=True, check=False)  # fmt: skip
    assert wrong.returncode == 2
    assert wrong.stderr == (
        "prompteval: error: --rubric 'defualt_review': unknown review template; "
        "did you mean 'default_review'?\n"
    )
    with subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE, text=True) as server:
        try:
            assert server.stdout is not None
            line = server.stdout.readline()  # printed once it listens
            assert line.startswith("prompteval view: http://127.0.0.1:"), line
            with urllib.request.urlopen(line.split()[2]) as answer:
                assert answer.status == 200 and b"no runs in this folder yet" in answer.read()
        finally:
            server.terminate()


def test_a_run_keeps_each_cases_own_labels_with_its_results(
    pytester: pytest.Pytester, anthropic_server: AnthropicServer
) -> None:
    # what the view's marker filter reads, from a real run
    anthropic_server.responder = lambda request: "loop"
    generated_project(pytester, 2, fields="  tags: [hot]\n  expected_topics: [loop]\n")
    reprec = pytester.inline_run("--prompt=v")
    assert [r.get("tags") for r in item_results(reprec)] == [["hot"], ["hot"]]
