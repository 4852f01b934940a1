"""``prompteval view`` over big runs: a run's page and its digest read no more of the results
file than they show (counted, not timed), and show what reading it whole showed."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from pytest_prompteval.core.errors import PromptevalError
from pytest_prompteval.core.history import load_run, write_json_atomically
from pytest_prompteval.core.result import ItemResult
from pytest_prompteval.report import pages
from pytest_prompteval.report.summary import JSON_FIELDS, outcome_of, summarize
from pytest_prompteval.view import index as index_module
from pytest_prompteval.view.digest import RunDigest
from pytest_prompteval.view.summaries import stored_summary

from . import test_view
from .test_view import Served
from .test_view_grid import _big_session


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How many results were built whole, and how many runs read whole, meanwhile."""
    counts = {"from_json": 0, "load_run": 0}
    from_json = ItemResult.from_json.__func__  # type: ignore[attr-defined]
    read_whole = getattr(index_module, "load_run")  # noqa: B009 - imported there, not exported

    def counting(cls: type[ItemResult], data: dict[str, Any]) -> ItemResult:
        counts["from_json"] += 1
        return from_json(cls, data)  # type: ignore[no-any-return]

    def load_run(*args: Any) -> Any:
        counts["load_run"] += 1
        return read_whole(*args)

    monkeypatch.setattr(ItemResult, "from_json", classmethod(counting))
    monkeypatch.setattr("pytest_prompteval.view.index.load_run", load_run)
    return counts


@pytest.fixture
def project(tmp_path: Path) -> tuple[Path, Path]:
    """A session of two versions, 200 cases x 3 samples each, min_pass 3, some errored."""
    results = tmp_path / "results"
    _big_session(results, 200, 3)
    return results, tmp_path / "recordings"


# the view served on a real socket over that session
served = test_view.served


def _name(served: Served, version: str) -> str:
    return test_view._run_name(served.results, version)


def test_a_digest_builds_only_the_results_its_failed_cases_show(
    tmp_path: Path, counted: dict[str, int]
) -> None:
    base, _ = _big_session(tmp_path, 200, 3)
    digest = RunDigest(base, tmp_path / base, tmp_path)
    failing = sum(not cell.passing for cell in digest.cases)
    assert digest.items == 600 and 0 < failing < 200
    assert counted["from_json"] == failing  # one per failed case (its reason), none else


def test_a_run_page_reads_no_answer(served: Served, counted: dict[str, int]) -> None:
    name = _name(served, "candidate")
    status, page = served.get(f"/run/{name}")
    assert status == 200 and "<h2>Cases (200)</h2>" in page
    assert counted["load_run"] == 0  # the summary is the one its file keeps
    assert counted["from_json"] < 200  # the failed cases' reasons only, not 600 results
    counted["from_json"] = 0
    status, page = served.get(f"/run/{name}?page=2&failures=1")
    assert status == 200 and counted == {"from_json": 0, "load_run": 0}  # the digest, kept


_ROW = re.compile(r'<tr class="case-row (\w+)"><td><b>([^<]*)</b>')
_SAMPLE = re.compile(r'/item/(\d+)">(\w+) ([^<]*)</a>')


def _rows(page: str) -> list[tuple[str, str, list[tuple[str, ...]]]]:
    """(outcome, case id, [(item, outcome, score)]) of each row of a run page's cases."""
    parts = page.split('<tr class="case-row ')[1:]
    return [
        (*_ROW.findall('<tr class="case-row ' + part)[0], _SAMPLE.findall(part)) for part in parts
    ]


@pytest.mark.parametrize(
    "query",
    ["", "?page=2", "?failures=1", "?flaky=1", "?category=loops", "?marker=hard&failures=1"],
)
def test_a_run_page_shows_the_rows_reading_it_whole_shows(served: Served, query: str) -> None:
    name = _name(served, "candidate")
    run = load_run(served.results / name, served.results)
    numbered = {id(r): n for n, r in enumerate(run.results)}
    params = dict(p.split("=") for p in query.lstrip("?").split("&") if p)
    rows = [
        row
        for row in pages.case_rows(run.results)
        if (params.get("failures") != "1" or row.outcome != "passed")
        and (params.get("flaky") != "1" or row.flaky)
        and params.get("category", row.samples[0].category) == row.samples[0].category
        and params.get("marker", row.samples[0].difficulty) == row.samples[0].difficulty
    ]
    start = (int(params.get("page", 1)) - 1) * 100
    expected = [
        (
            row.outcome,
            row.case_id,
            [
                (str(numbered[id(r)]), outcome_of(r), pages.environment().filters["score"](r.score))
                for r in row.samples
            ],
        )
        for row in rows[start : start + 100]
    ]
    status, page = served.get(f"/run/{name}{query}")
    assert status == 200 and f"<h2>Cases ({len(rows)})</h2>" in page
    assert _rows(page) == expected and expected


def _rewrite(path: Path, change: Any) -> None:
    """The run file with its document changed, laid out as a run writes it."""
    document = json.loads(path.read_text())
    change(document)
    write_json_atomically(path, document)


def test_the_summary_kept_in_the_file_shows_what_summarizing_the_run_shows(
    served: Served, counted: dict[str, int]
) -> None:
    name = _name(served, "candidate")
    kept = served.get(f"/run/{name}")[1]
    assert counted["load_run"] == 0 and "errored, not scored" in kept
    _rewrite(served.results / name, lambda document: document.pop("summary"))
    assert served.get(f"/run/{name}")[1] == kept  # the run read whole and summarized
    assert counted["load_run"] == 1


@pytest.mark.parametrize(
    ("change", "shown"),
    [
        # counts that are not the results': the results are summarized
        (lambda s: s.update(passed=s["passed"] + 1), None),
        # a figure of the wrong type, markup where a number goes
        (lambda s: s.update(cost_usd="<script>alert(1)</script>"), None),
        (lambda s: s["groups"]["category"].update({"<b>x</b>": {"passed": 1}}), None),
        (lambda s: s.update(pass_at_k={"pass@one": 0.5}), None),
        (lambda s: s.pop("latency_p95_ms"), None),
        # a label that is markup but holds together: shown, as text
        (lambda s: s["errors"].update({"<img src=x>": 0}), "&lt;img src=x&gt; 0"),
    ],
)
def test_a_summary_that_does_not_hold_together_is_not_shown(
    served: Served, counted: dict[str, int], change: Any, shown: str | None
) -> None:
    name = _name(served, "candidate")
    _rewrite(served.results / name, lambda document: change(document["summary"]))
    status, page = served.get(f"/run/{name}")
    assert status == 200 and "<script>alert" not in page and "<img src=x>" not in page
    assert counted["load_run"] == (shown is None)
    if shown:
        assert shown in page


def test_a_stored_summary_reads_back_as_the_summary_it_was() -> None:
    results = [
        test_view._result("v", f"case_{i}", i % 3 != 0, "answer", sample=s, samples=2)
        for i in range(6)
        for s in range(2)
    ]
    (summary,) = summarize(results, ["v"], (1, 2))
    # each case's pass@k, which the page does not show, is left out
    stored = stored_summary(summary.to_json())
    assert stored is not None and stored.case_pass_at_k == {}
    for name in JSON_FIELDS:
        if name != "case_pass_at_k":
            assert getattr(stored, name) == getattr(summary, name), name
    assert stored.spent_usd == summary.spent_usd
    assert stored_summary({**summary.to_json(), "items": True}) is None
    assert stored_summary({"version": "v"}) is None


def test_a_run_that_writes_a_big_results_file_digests_it_for_the_view(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_prompteval import plugin

    monkeypatch.setenv("XDG_CACHE_HOME", str(pytester.path / "cache"))
    monkeypatch.setattr(plugin, "DIGEST_FROM_BYTES", 0)  # every file counts as big here
    pytester.makepyfile(app="def answer(request, *, case, prompt, sample):\n    return 'a loop'\n")
    pytester.makeini("[pytest]\npythonpath = .\n")
    pytester.mkdir("prompts").joinpath("v.yaml").write_text("user_prompt: x\n")
    cases = "".join(
        f"- id: c{i}\n  input: {{n: {i}}}\n  threshold: 0\n  assert: [{{contains: loop}}]\n"
        for i in range(4)
    )
    pytester.mkdir("prompt_cases").joinpath("c.yaml").write_text("cases:\n" + cases)
    result = pytester.runpytest("--prompt=v", "--prompteval-provider=python:app:answer")
    result.assert_outcomes(passed=4)
    (written,) = (pytester.path / "prompt_results").glob("*_v.json")
    kept = pytester.path / "cache" / "pytest-prompteval" / "view"
    assert len(list(kept.glob("*.digest"))) == 1 and len(list(kept.glob("*.search"))) == 1
    # the view reads the digest the run wrote: no result line is read for it
    monkeypatch.setattr(RunDigest, "_stream", lambda self: pytest.fail("streamed"))
    digest = RunDigest(written.name, written, written.parent, kept)
    assert [c.case_id for c in digest.cases] == ["c0", "c1", "c2", "c3"]
    assert digest.search("a loop") == {0, 1, 2, 3}


def test_json_nested_beyond_the_parsers_depth_is_a_broken_file_not_a_crash(
    served: Served, tmp_path: Path
) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    name = _name(served, "candidate")
    path = served.results / name
    text = path.read_text()
    path.write_text(text[: text.index('\n  "summary": ')] + f'\n  "summary": {deep}\n}}\n')
    status, page = served.get("/")
    assert status == 200 and "not a results file (RecursionError" in page
    status, page = served.get(f"/run/{name}")
    assert status == 404 and "not a results file" in page
    # a result line so nested, in a journal: a corrupt line, named
    base = _name(served, "base")
    line = next(x for x in (served.results / base).read_text().splitlines() if x[:6] == '    {"')
    journal = served.results / base.replace(".json", "x.jsonl")
    journal.write_text("\n".join([json.dumps({"header": {}}), line.strip(" ,"), deep, "{}"]))
    with pytest.raises(PromptevalError, match="corrupt result line"):
        RunDigest(journal.name, journal, served.results)
    with pytest.raises(PromptevalError, match="corrupt result line"):
        load_run(journal, served.results)
