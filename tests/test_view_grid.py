"""``prompteval view``'s grid of cases against runs, the cases that flipped between two runs,
and big runs read from their digest: over real HTTP, and in real headless Chromium."""

from __future__ import annotations

import json
import os
import urllib.parse
from pathlib import Path

import pytest

from pytest_prompteval.core.errors import PromptevalError
from pytest_prompteval.core.history import RunHistory, load_run
from pytest_prompteval.core.result import CheckResult, ItemResult
from pytest_prompteval.report.summary import summarize
from pytest_prompteval.view.digest import KEPT_FORMAT, Digests, RunDigest
from pytest_prompteval.view.index import Index

from . import test_view
from .test_view import HOSTILE, SECRET, Served, _result, _run_name, chromium

# the view's fixtures: a results folder of two versions, served on a real socket
project = test_view.project
served = test_view.served


def _grid(served: Served, query: str = "") -> str:
    status, page = served.get("/grid" + query)
    assert status == 200, page
    return page


def _rows(page: str) -> list[str]:
    """The case ids of the grid's rows, in order."""
    return [row.split("<b>", 1)[1].split("</b>", 1)[0] for row in page.split('"grid-row"')[1:]]


def test_the_grid_sets_the_latest_run_of_each_version_side_by_side(served: Served) -> None:
    page = _grid(served)
    v1, v2 = _run_name(served.results, "v1"), _run_name(served.results, "v2")
    assert page.index(f'href="/run/{v1}"') < page.index(f'href="/run/{v2}"')
    assert _rows(page) == ["inline_001", "loop_001", "loop_002"]
    row = page.split('"grid-row"')[2]  # loop_001: passed under v1, failed under v2
    assert 'class="cell passed"' in row and 'class="cell failed"' in row
    assert "passed 1/1 100.0% · 0.900" in row and "failed 0/1 0.0% · 0.300" in row
    assert "contains: wanted &#39;loop&#39;" in row  # why it failed, escaped
    assert f'href="/run/{v2}/item/' in row


@pytest.mark.parametrize(
    ("query", "shown"),
    [
        ("?failed=1", ["loop_001"]),
        ("?flipped=1", ["loop_001"]),
        ("?errored=1", []),
        ("?category=inline", ["inline_001"]),
        ("?marker=hot", ["loop_002"]),
        ("?kind=agent", ["loop_001"]),  # v2's answer is an agent's
        ("?q=VECTORIZED", ["loop_002"]),  # an answer, any case
        ("?q=inline_0", ["inline_001"]),  # a case id
        ("?q=window.pwned", ["loop_001"]),  # hostile text is searched as text
        ("?q=nowhere", []),
        ("?sort=score", ["loop_001", "inline_001", "loop_002"]),
        ("?sort=spread", ["loop_001", "inline_001", "loop_002"]),
        ("?sort=nonsense&kind=nonsense", ["inline_001", "loop_001", "loop_002"]),
    ],
)
def test_the_grid_filters_searches_and_sorts(served: Served, query: str, shown: list[str]) -> None:
    assert _rows(_grid(served, query)) == shown


def test_the_grid_escapes_the_search_and_the_case_ids(served: Served) -> None:
    page = _grid(served, "?q=" + urllib.parse.quote('"><script>alert(1)</script>'))
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)" in page
    assert 'value="&#34;&gt;&lt;script&gt;' in page
    # a case id that is markup stays text, in the grid and in the flips
    history = RunHistory(served.results, {"v3": {}})
    history.add(_result("v3", '<img src=x onerror="window.pwned=3">', False, HOSTILE))
    history.finalize({}, partial=False)
    page = _grid(served)
    assert "<img src=x" not in page and "&lt;img src=x onerror=" in page


@pytest.mark.parametrize(
    "query",
    ["?run=..%2Fsecret.json", "?run=%2e%2e%2fsecret.json", "?run=20250101_000000_x.json"],
)
def test_the_grid_reads_no_file_outside_the_results(served: Served, query: str) -> None:
    status, page = served.get("/grid" + query)
    assert status == 404 and SECRET not in page


def test_the_grid_takes_at_most_twelve_runs(served: Served) -> None:
    name = _run_name(served.results, "v1")
    status, page = served.get("/grid?" + "&".join(f"run={name}{'x' * i}" for i in range(13)))
    assert status == 404 and "at most 12 runs side by side" in page


def test_the_flips_put_the_newly_failing_first_with_their_reason(served: Served) -> None:
    v1, v2 = _run_name(served.results, "v1"), _run_name(served.results, "v2")
    status, page = served.get(f"/flips?a={v1}&b={v2}")
    assert status == 200
    assert "<h1>v1 → v2: what flipped</h1>" in page
    assert '1 newly failing</b> · <b class="passed">0 newly passing' in page
    assert "2 still passing" in page
    (flip,) = page.split('<tr class="flip worse">')[1:]
    assert "loop_001" in flip and "contains: wanted &#39;loop&#39;" in flip
    diff = flip.split('class="diff-link" href="')[1].split('"')[0].replace("&amp;", "&")
    assert diff.startswith(f"/run/{v1}/item/") and diff.endswith(f"?vs={v2}")
    status, page = served.get(diff)  # the two answers' diff, first run to second
    assert status == 200 and '<span class="del">-The loop is unrolled.</span>' in page
    assert '<span class="add">+Beware &lt;script&gt;' in page
    # the other way round, it newly passes
    page = served.get(f"/flips?a={v2}&b={v1}")[1]
    assert '<tr class="flip better">' in page and "Newly passing" in page


def _big_session(folder: Path, cases: int, samples: int) -> tuple[str, str]:
    """Two versions of ``cases`` cases x ``samples`` samples, written as a run writes them;
    about one case in ten fails in each version, not the same ones."""
    history = RunHistory(folder, {"base": {}, "candidate": {}})
    for shift, version in enumerate(("base", "candidate")):
        results = []
        for i in range(cases):
            for sample in range(samples):
                passed = (i * 7 + shift * 3) % 10 != 0 or sample == 0
                errored = shift == 1 and i % 100 == 55  # the API failed, not the prompt
                result = ItemResult(
                    case_id=f"case_{i:05d}", file=f"cases/area_{i % 4}.yaml", prompt=version,
                    sample=sample, samples=samples, min_pass=3,
                    category=("parsing", "loops", "io")[i % 3],
                    difficulty=("easy", "hard")[i % 2],
                    outcome="error" if errored else "passed" if passed else "failed",
                    passed=passed and not errored,
                    score=None if errored else 0.9 if passed else 0.25,
                    error="529 overloaded" if errored else None,
                    error_type="api_error" if errored else None,
                    response=f"Answer {version} {i}.{sample}: token{i} and the loop.",
                    assertions=[CheckResult("contains", passed, float(passed), 1.0,
                                            f"wanted 'token{i + shift}'")],
                )  # fmt: skip
                history.add(result)
                results.append(result)
    summaries = {
        v: summarize([r for r, _ in history.results[v]], [v])[0].to_json()
        for v in ("base", "candidate")
    }
    base, candidate = history.finalize(summaries, partial=False)
    return base.name, candidate.name


def test_a_digest_reads_each_item_as_load_run_does(tmp_path: Path) -> None:
    base, _ = _big_session(tmp_path, 40, 3)
    digest = RunDigest(base, tmp_path / base, tmp_path)
    whole = load_run(tmp_path / base, tmp_path)
    assert digest.items == len(whole.results) == 120 and len(digest.cases) == 40
    assert [digest.item(n) for n in range(digest.items)] == whole.results
    assert digest._loaded is None  # read line by line, no answer kept
    cell = digest.cases[0]  # case_00000: samples 1 and 2 fail, min_pass 3 not met
    assert (cell.outcome, cell.kn, cell.shown) == ("failed", "1/3 33.3%", 1)
    assert cell.reason == "contains: wanted 'token0'" and cell.min_pass_text.endswith("not met")

    def found(text: str) -> set[int]:
        return {int(digest.cases[p].case_id[5:]) for p in digest.search(text)}

    assert found("TOKEN39") == {39} and found("token3") == {3, *range(30, 40)}
    with pytest.raises(PromptevalError, match="no item 120"):
        digest.item(120)


def test_a_journal_in_arrival_order_is_grouped_by_case(tmp_path: Path) -> None:
    header = {"header": {"prompt_version": "v9"}, "partial": True}
    results = [
        _result("v9", case, passed, f"answer {n}", sample=sample, samples=2)
        for n, (case, sample, passed) in enumerate(
            [("b", 0, True), ("a", 0, False), ("b", 1, True), ("a", 1, True)]
        )
    ]
    lines = [json.dumps(header)] + [json.dumps(r.to_json()) for r in results]
    journal = tmp_path / "20250101_000000_v9.jsonl"
    journal.write_text("\n".join(lines) + '\n{"case_id": "cut sho')  # killed mid-line
    digest = RunDigest(journal.name, journal, tmp_path)
    assert [c.case_id for c in digest.cases] == ["a", "b"] and digest.partial
    assert [c.items for c in digest.cases] == [((0, 1), (1, 3)), ((0, 0), (1, 2))]
    assert digest.item(3).response == "answer 3" and digest.version == "v9"
    # a journal grows while its run goes: its digest is not kept between sessions
    RunDigest(journal.name, journal, tmp_path, tmp_path / "kept")
    assert not (tmp_path / "kept").exists()
    # a bad line that is not the last is a corrupt file, named with its line
    journal.write_text("\n".join([*lines[:2], "{not json", *lines[2:]]) + "\n")
    with pytest.raises(PromptevalError, match="corrupt result line") as error:
        RunDigest(journal.name, journal, tmp_path)
    assert error.value.line == 3


def test_a_results_file_not_written_line_by_line_is_read_whole(tmp_path: Path) -> None:
    result = _result("v1", "only", True, "ok")
    document = {"meta": {"prompt_version": "v1"}, "results": [result.to_json()]}
    path = tmp_path / "20250101_000000_v1.json"
    path.write_text(json.dumps(document))  # one line, as another tool might write it
    digest = RunDigest(path.name, path, tmp_path)
    assert [c.case_id for c in digest.cases] == ["only"] and digest.item(0) == result


def test_a_digest_is_read_again_when_its_run_changes(tmp_path: Path) -> None:
    base, _ = _big_session(tmp_path, 3, 1)
    digests = Digests(Index(tmp_path))
    first = digests.get(base)
    assert digests.get(base) is first
    text = (tmp_path / base).read_text()
    (tmp_path / base).write_text(text.replace("Answer base 2.0", "Answer base 2.0 changed"))
    assert digests.get(base) is not first and digests.get(base).search("changed") == {2}


def _screenshot(page: object, name: str, tmp_path: Path) -> None:
    """Saved to PROMPTEVAL_VIEW_SCREENSHOTS (the docs' pictures) when it is set."""
    folder = os.environ.get("PROMPTEVAL_VIEW_SCREENSHOTS")
    page.screenshot(path=str(Path(folder or tmp_path) / name), full_page=False)  # type: ignore[attr-defined]


def test_the_grid_in_headless_chromium(served: Served, tmp_path: Path) -> None:
    from playwright.sync_api import Dialog, sync_playwright

    executable = chromium()
    v2 = _run_name(served.results, "v2")
    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            dialogs: list[str] = []

            def dismiss(dialog: Dialog) -> None:  # an alert() that slipped through is caught
                dialogs.append(dialog.message)
                dialog.dismiss()

            page.on("dialog", dismiss)
            page.goto(served.url + "/")
            page.click('nav.top a[href="/grid"]')
            page.wait_for_selector("#grid")
            assert page.locator("tr.grid-row").count() == 3
            page.check('input[name="flipped"]')
            page.click("#apply-grid")
            page.wait_for_url("**flipped=1**")
            assert page.locator("tr.grid-row").count() == 1
            page.uncheck('input[name="flipped"]')
            page.keyboard.press("Escape")
            page.keyboard.press("/")  # the search field, from the keyboard
            page.keyboard.type("<script>window.pwned")
            page.keyboard.press("Enter")
            page.wait_for_url(lambda url: "pwned" in url)
            assert page.locator("tr.grid-row").count() == 1
            counted = page.text_content("#grid-count")
            assert counted is not None
            assert counted.startswith("1 of 3 cases matching “<script>window.pwned”")
            # the keys: the first cell has the focus; right is v2's failing cell, Enter opens
            page.locator("#grid-search").blur()
            page.keyboard.press("ArrowRight")
            assert page.locator("td.cell.focus").get_attribute("class") == "cell failed focus"
            page.keyboard.press("Enter")
            page.wait_for_url(f"**/run/{v2}/item/**")
            page.wait_for_selector("#answer")
            assert page.text_content("#answer") == HOSTILE
            assert page.evaluate("window.pwned") is None and dialogs == []
        finally:
            browser.close()


def test_a_run_of_ten_thousand_items_opens_searches_and_flips_in_chromium(
    tmp_path: Path,
) -> None:
    from playwright.sync_api import sync_playwright

    executable = chromium()
    results = tmp_path / "results"
    base, candidate = _big_session(results, 2000, 5)
    assert Index(results).entry(candidate).items == 10_000
    import threading

    import uvicorn

    from pytest_prompteval.view.app import ViewConfig, build_app
    from pytest_prompteval.view.serve import listen
    from pytest_prompteval.workflows.review import SEED_DIMENSIONS

    config = ViewConfig(results, None, {"seed": SEED_DIMENSIONS}, token="t")
    sock = listen()
    server = uvicorn.Server(uvicorn.Config(build_app(config), log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    try:
        with sync_playwright() as driver:
            browser = driver.chromium.launch(executable_path=executable, args=["--no-sandbox"])
            try:
                page = browser.new_page(viewport={"width": 1280, "height": 800})
                page.goto(f"{url}/run/{candidate}")
                page.click("#grid-link")  # this session's two runs
                page.wait_for_selector("#grid")
                assert page.locator("tr.grid-row").count() == 100  # a page of 2,000 cases
                assert "2000 cases \u00d7 2 runs" in page.text_content("h1")  # type: ignore[operator]
                page.select_option('select[name="sort"]', "worst")
                page.click("#apply-grid")
                page.wait_for_url("**sort=worst**")
                _screenshot(page, "view-grid.png", tmp_path)
                page.keyboard.press("n")  # the next page, from the keyboard
                page.wait_for_url("**page=2**")
                page.fill("#grid-search", "token1234")
                page.press("#grid-search", "Enter")
                page.wait_for_url("**q=token1234**")
                # the case whose answers hold it, and those whose reason names it
                assert page.locator("tr.grid-row").count() == 2
                page.goto(f"{url}/flips?a={base}&b={candidate}")
                headings = page.locator("tr.flip-heading th").all_text_contents()
                assert headings == ["Newly failing"]  # 100 a page: the first are all so
                rows = page.locator("tr.flip")
                assert rows.count() == 100 and rows.first.get_attribute("class") == "flip worse"
                counts = page.text_content("#flip-counts")
                assert counts is not None and "200 newly failing" in counts
                assert "200 newly passing" in counts
                _screenshot(page, "view-flips.png", tmp_path)
                page.click("#next-page")
                page.wait_for_url("**page=2**")
                page.locator("tr.flip a.diff-link").last.click()
                page.wait_for_selector(".diff")
            finally:
                browser.close()
    finally:
        server.should_exit = True
        thread.join()
        sock.close()


def test_a_digest_kept_between_sessions_is_read_instead_of_the_run(tmp_path: Path) -> None:
    results, kept = tmp_path / "results", tmp_path / "kept"
    base, _ = _big_session(results, 30, 2)
    first = RunDigest(base, results / base, results, kept)
    (search,) = kept.glob("*.search")
    lines = search.read_bytes().splitlines(keepends=True)
    search.write_bytes(b"".join([b"only in the kept copy\n", *lines[1:]]))
    again = RunDigest(base, results / base, results, kept)
    assert again.cases == first.cases and again.search("only in the kept copy") == {0}
    assert [again.item(n) for n in range(60)] == load_run(results / base, results).results
    # a kept digest that does not hold together is built again from the run
    (digest,) = kept.glob("*.digest")
    for broken in (
        digest.read_text().replace('"failed"', '"<b>nonsense</b>"'),
        digest.read_text().replace(f'"format": {KEPT_FORMAT}', '"format": 99'),
        "[1, 2]",
        "{not json",
    ):
        digest.write_text(broken)
        rebuilt = RunDigest(base, results / base, results, kept)
        assert rebuilt.cases == first.cases and rebuilt.search("only in the kept") == frozenset()
    search.write_bytes(b"one line too few\n")  # the search text of another run
    assert RunDigest(base, results / base, results, kept).search("too few") == frozenset()
    # a run rewritten has a digest of its own
    (results / base).write_text((results / base).read_text().replace("Answer base 3.1", "New"))
    assert RunDigest(base, results / base, results, kept).search("new") != frozenset()
    assert len(list(kept.glob("*.digest"))) == 2


def test_the_runs_page_reads_a_big_runs_figures_from_the_ends_of_its_file(
    tmp_path: Path,
) -> None:
    _, candidate = _big_session(tmp_path, 300, 3)
    assert (tmp_path / candidate).stat().st_size > 1 << 18  # more than its ends are read
    run = load_run(tmp_path / candidate, tmp_path)
    lines = (tmp_path / candidate).read_text().splitlines(keepends=True)
    lines[len(lines) // 2] = "not parsed" + "\n"  # the middle of the file is never read
    (tmp_path / candidate).write_text("".join(lines))
    entry = Index(tmp_path).entry(candidate)
    assert (entry.items, entry.partial, entry.version) == (900, False, "candidate")
    assert (entry.passed, entry.failed, entry.errored) == (
        run.summary["passed"], run.summary["failed"], run.summary["errored"],
    )  # fmt: skip
    assert entry.errored == 9


def test_the_newest_sessions_runs_are_digested_in_the_background_once(tmp_path: Path) -> None:
    import threading

    results, kept = tmp_path / "results", tmp_path / "kept"
    older = RunHistory(results, {"old": {}})
    older.add(_result("old", "loop_001", True, "ok"))
    (written,) = older.finalize({}, partial=False)
    written.rename(results / "20200101_000000_old.json")  # a session before
    base, _ = _big_session(results, 400, 2)
    digests = Digests(Index(results), kept)
    digests.warm().join()
    assert len(list(kept.glob("*.digest"))) == 2  # base and candidate, not the older run
    # two pages asking for a run not digested yet: it is built once, the second waits
    fresh = Digests(Index(results))
    start = threading.Barrier(2)
    got: list[RunDigest] = []

    def ask() -> None:
        start.wait()
        got.append(fresh.get(base))

    threads = [threading.Thread(target=ask) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert got[0] is got[1]


def test_an_item_is_read_from_its_runs_digest_and_a_missing_one_is_a_404(served: Served) -> None:
    v1 = _run_name(served.results, "v1")
    status, page = served.get(f"/run/{v1}/item/1")
    assert status == 200 and "The loop is unrolled." in page
    status, page = served.get(f"/run/{v1}/item/3")
    assert status == 404 and f"no item 3 in {v1}" in page
    status, page = served.get("/flips?a=&b=" + v1)
    assert status == 404 and "no run named" in page
