"""The web app of ``prompteval view``: server-rendered pages over the results folder, one URL
per run, comparison and item (ordinary links: the back button works, a link can be pasted
into a review), and the one write there is, a human rating.

What it defends against (answers and case files are hostile input, and a page of another
site open in the same browser can send requests to 127.0.0.1):

- every value goes through autoescaping templates (``report/pages``), and the Content
  Security Policy allows only the app's own script file, so markup that slipped through
  would still not run;
- a write needs the session's token, which only the app's own pages carry (another
  origin cannot read them), and a request naming another host is refused (DNS rebinding);
- a run is a run file's name in the results folder, a recording a file name in the
  recordings folder: no ``..``, separator, encoded traversal or link out of the folder
  reaches a file (``core/paths``), and the front end is a fixed list of package files.
"""

from __future__ import annotations

import difflib
import inspect
import itertools
import json
import re
import secrets
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from pytest_prompteval.core.errors import PromptevalError
from pytest_prompteval.core.paths import resolve_inside
from pytest_prompteval.providers.recording_file import UnreadableRecording
from pytest_prompteval.providers.recording_file import load as load_recording
from pytest_prompteval.report import pages
from pytest_prompteval.report.compare import compare
from pytest_prompteval.report.terminal import comparison_block, notes_block, tables
from pytest_prompteval.view import flips, grid
from pytest_prompteval.view.digest import Digests
from pytest_prompteval.view.index import Index, page_numbers
from pytest_prompteval.view.summaries import Summaries
from pytest_prompteval.workflows import calibrate
from pytest_prompteval.workflows.review import (
    SEED_DIMENSIONS,
    load_reviews,
    review_entry,
    save_review,
)

RUNS_PER_PAGE = 50
CASES_PER_PAGE = 100
TOKEN_HEADER = "X-Prompteval-Token"
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
_RECORDING = re.compile(r"^[0-9A-Za-z_][\w.-]*\.json\Z")
SVG = "image/svg+xml"
MAX_COMMENT = 10_000
MAX_REVIEWER = 100


@dataclass(frozen=True)
class ViewConfig:
    results: Path
    recordings: Path | None
    #: rubric name -> its dimensions and weights; "seed" is the seed's human evaluation
    rubrics: dict[str, tuple[tuple[str, float], ...]]
    rubric: str = "seed"
    min_effect: float = 0.0
    gate_metric: str = "pass_rate"
    token: str = ""
    #: where runs' digests stay between sessions (``view/digest``); None: in memory only
    kept: Path | None = None
    #: digest the newest session's runs in the background when the app starts
    warm: bool = False


def rubrics_of(templates: dict[str, Any]) -> dict[str, tuple[tuple[str, float], ...]]:
    """The seed's dimensions and every review template's, by name."""
    rubrics = {"seed": SEED_DIMENSIONS}
    for name, template in templates.items():
        rubrics[name] = tuple((d, w) for d, (w, _) in template.dimensions.items())
    return rubrics


class NotFound(Exception):
    pass


def _int(request: Request, name: str, default: int, low: int = 1) -> int:
    raw = request.query_params.get(name, "")
    return max(low, int(raw)) if raw.isdigit() else default


def _render(template: str, request: Request, config: ViewConfig, **context: Any) -> HTMLResponse:
    return HTMLResponse(
        pages.render(template, token=config.token, path=request.url.path, **context),
        headers=_HEADERS,
    )


_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


def request_of(recording: dict[str, Any], first: bool = False) -> dict[str, Any]:
    """A recorded API request as system text and turns of (role, texts) to show; ``first``:
    only the turns before the model's first (an agent's, whose conversation is shown from
    its result: a repository's recording holds no tool output)."""

    def texts(content: Any) -> list[str]:
        if isinstance(content, str):
            return [content]
        shown = []
        for block in content if isinstance(content, list) else []:
            is_text = isinstance(block, dict) and block.get("type") == "text"
            shown.append(str(block.get("text", "")) if is_text else json.dumps(block, indent=1))
        return shown

    messages = recording.get("messages")
    turns = [
        (str(m.get("role", "")), texts(m.get("content")))
        for m in (messages if isinstance(messages, list) else [])
        if isinstance(m, dict)
    ]
    if first:
        turns = list(itertools.takewhile(lambda turn: turn[0] != "assistant", turns))
    return {"system": "\n\n".join(texts(recording.get("system") or [])), "turns": turns}


def diff_lines(first: str, second: str) -> list[tuple[str, str]]:
    """(kind, line) of a unified diff of two answers: kind add, del or ''."""
    shown = []
    for line in difflib.unified_diff(first.splitlines(), second.splitlines(), lineterm="", n=2):
        if line.startswith(("---", "+++")):
            continue
        kind = "add" if line.startswith("+") else "del" if line.startswith("-") else ""
        shown.append((kind, line))
    return shown


def build_app(config: ViewConfig) -> Starlette:
    index = Index(config.results)
    digests = Digests(index, config.kept)  # a run's cases and where its items are
    summaries = Summaries(index)
    if config.warm:
        digests.warm()

    def rubric_of(request: Request) -> str:
        name = request.query_params.get("rubric", config.rubric)
        return name if name in config.rubrics else config.rubric

    def runs_page(request: Request) -> Response:
        version = request.query_params.get("version") or None
        number = _int(request, "page", 1)
        shown, count = index.page(number, RUNS_PER_PAGE, version)
        return _render(
            "runs.html", request, config,
            title="Runs", runs=shown, page=number, pages=page_numbers(number, count),
            last=count, version=version or "", versions=index.versions(),
            siblings={e.name: index.siblings(e.name) for e in shown if not isinstance(e, tuple)},
        )  # fmt: skip

    def run_page(request: Request) -> Response:
        """A run's summary tables (from the summary its file keeps) and a page of its
        cases, failures first (from its digest): no answer is read."""
        name = request.path_params["name"]
        digest = digests.get(name)
        q = request.query_params
        failures, flaky = q.get("failures") == "1", q.get("flaky") == "1"
        category, marker = q.get("category", ""), q.get("marker", "")
        rows = [
            cell
            for cell in digest.cases
            if (not failures or cell.outcome != "passed")
            and (not flaky or cell.flaky)
            and (not category or cell.category == category)
            and (not marker or marker in cell.markers)
        ]
        rows.sort(key=lambda cell: (pages.ORDER[cell.outcome], cell.key))
        number = _int(request, "page", 1)
        count = max(1, -(-len(rows) // CASES_PER_PAGE))
        shown = summaries.of(digest)
        return _render(
            "run.html", request, config,
            title=name, run=digest, name=name, tables=tables(shown), notes=notes_block(shown),
            rows=rows[(number - 1) * CASES_PER_PAGE : number * CASES_PER_PAGE], shown=len(rows),
            page=number, pages=page_numbers(number, count), last=count,
            failures=failures, flaky=flaky, category=category, marker=marker,
            categories=digest.categories, siblings=index.siblings(name),
        )  # fmt: skip

    def item_page(request: Request) -> Response:
        name = request.path_params["name"]
        digest = digests.get(name)
        number = request.path_params["number"]
        result = digest.item(number)
        rubric = rubric_of(request)
        reviewer = request.query_params.get("reviewer", "")[:MAX_REVIEWER]
        key = (result.file, result.case_id, result.sample)
        reviews = [r for k, r in load_reviews(digest.path).items() if k[:3] == key]
        mine = next((r for r in reviews if (r.get("reviewer") or "") == reviewer), None)
        recording, recording_error = None, ""
        if result.recording and config.recordings is not None:
            try:
                recording = _recording(config, Path(result.recording).name)
            except (NotFound, PromptevalError) as exc:
                recording_error = str(exc)
        vs_name = request.query_params.get("vs", "")
        vs = None
        if vs_name:
            vs = digests.item_beside(vs_name, f"{result.file}::{result.case_id}", result.sample)
        return _render(
            "case.html", request, config,
            title=f"{result.case_id} [{result.prompt}]", name=name, number=number, r=result,
            count=digest.items, rubric=rubric, rubrics=sorted(config.rubrics),
            dimensions=config.rubrics[rubric], reviews=reviews, mine=mine, reviewer=reviewer,
            recording=request_of(recording.request, result.trajectory is not None)
            if recording
            else None,
            recording_name=Path(result.recording).name if result.recording else "",
            recording_error=recording_error, others=_others(index, name),
            vs_name=vs_name, vs=vs,
            diff=diff_lines(result.response or "", vs.response or "") if vs else [],
        )  # fmt: skip

    def compare_page(request: Request) -> Response:
        a_name, b_name = request.query_params.get("a", ""), request.query_params.get("b", "")
        a, b = index.run(a_name), index.run(b_name)
        comparison = compare(
            a.results, b.results, (a.version, b.version),
            min_effect=config.min_effect, primary=config.gate_metric,
        )  # fmt: skip
        rows_a = {row.key: row for row in pages.case_rows(a.results)}
        rows_b = {row.key: row for row in pages.case_rows(b.results)}
        first_a = {f"{r.file}::{r.case_id}": i for i, r in reversed(list(enumerate(a.results)))}
        first_b = {f"{r.file}::{r.case_id}": i for i, r in reversed(list(enumerate(b.results)))}

        def changed(keys: Sequence[str]) -> list[dict[str, Any]]:
            return [
                {"key": k, "a": rows_a.get(k), "b": rows_b.get(k),
                 "a_item": first_a.get(k), "b_item": first_b.get(k)}
                for k in keys
            ]  # fmt: skip

        return _render(
            "compare.html", request, config,
            title=f"{b.version} vs {a.version}", a=a, b=b, a_name=a_name, b_name=b_name,
            c=comparison, lines=comparison_block(comparison, True),
            regressions=changed(comparison.regressions),
            improvements=changed(comparison.improvements),
        )  # fmt: skip

    def grid_page(request: Request) -> Response:
        names = request.query_params.getlist("run")
        shown = grid.grid(index, digests, names, grid.Query.of(request.query_params))
        return _render("grid.html", request, config, title="Grid", named=bool(names), **shown)

    def flips_page(request: Request) -> Response:
        a, b = request.query_params.get("a", ""), request.query_params.get("b", "")
        shown = flips.flips(digests, a, b, _int(request, "page", 1))
        title = f"{shown['a'].version} → {shown['b'].version}: what flipped"
        return _render("flips.html", request, config, title=title, **shown)

    def calibration_page(request: Request) -> Response:
        return _render(
            "calibration.html", request, config,
            title="Judge calibration", calibrations=calibrate.calibrate(config.results),
            weights=calibrate.WEIGHTS, scale=calibrate.SCALE,
        )  # fmt: skip

    def recording_page(request: Request) -> Response:
        name = request.path_params["name"]
        recording = _recording(config, name)
        return _render(
            "recording.html", request, config,
            title=name, name=name, request_shown=request_of(recording.request),
            answer=recording.response.text, raw=json.dumps(recording.request, indent=1),
        )  # fmt: skip

    async def save_rating(request: Request) -> Response:
        given = request.headers.get(TOKEN_HEADER, "")
        if not secrets.compare_digest(given.encode(), config.token.encode()):
            return JSONResponse({"error": "missing or wrong session token"}, 403)
        try:
            body = await request.json()
        except ValueError:
            return JSONResponse({"error": "expected a JSON body"}, 400)
        name = request.path_params["name"]
        digest = digests.get(name)
        result = digest.item(request.path_params["number"])
        problem = _check_rating(body, config)
        if problem:
            return JSONResponse({"error": problem}, 400)
        entry = review_entry(
            result,
            {k: int(v) for k, v in body["ratings"].items()},
            body.get("comment", ""),
            body.get("reviewer", "").strip(),
            config.rubrics[body["rubric"]],
        )
        entry["rubric"] = body["rubric"]
        save_review(digest.path, entry)
        return JSONResponse({"human_score": entry["human_score"]})

    def favicon(request: Request) -> Response:
        return Response(pages.static_text("favicon.svg"), media_type=SVG, headers=_HEADERS)

    def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in (*pages.STATIC_FILES, *grid.STATIC):
            raise NotFound(f"no file {name!r}")
        kind = {"css": "text/css", "js": "text/javascript", "svg": SVG}[name.rsplit(".", 1)[1]]
        return Response(pages.static_text(name), media_type=kind, headers=_HEADERS)

    async def not_found(request: Request, exc: Exception) -> Response:
        return HTMLResponse(
            pages.render("error.html", title="Not found", message=str(exc), token="", path=""),
            404,
            headers=_HEADERS,
        )

    def guarded(
        endpoint: Callable[[Request], Response | Awaitable[Response]],
    ) -> Callable[[Request], Awaitable[Response]]:
        """A user-facing error (no such run, a refused path) is a 404 page, not a trace. A
        page that reads files runs in the thread pool, so one large run read does not hold
        up the other requests."""

        async def handle(request: Request) -> Response:
            try:
                if inspect.iscoroutinefunction(endpoint):
                    return await endpoint(request)  # type: ignore[no-any-return]
                return await run_in_threadpool(endpoint, request)  # type: ignore[arg-type]
            except (NotFound, PromptevalError, UnreadableRecording) as exc:
                return await not_found(request, exc)

        return handle

    routes = [
        Route("/", guarded(runs_page)),
        Route("/run/{name}", guarded(run_page)),
        Route("/run/{name}/item/{number:int}", guarded(item_page)),
        Route("/run/{name}/item/{number:int}/review", guarded(save_rating), methods=["POST"]),
        Route("/compare", guarded(compare_page)),
        Route("/grid", guarded(grid_page)),
        Route("/flips", guarded(flips_page)),
        Route("/calibration", guarded(calibration_page)),
        Route("/recording/{name}", guarded(recording_page)),
        Route("/static/{name}", guarded(static)),
        Route("/favicon.ico", favicon),  # asked for by browsers whatever the page links
    ]
    return Starlette(
        routes=routes,
        middleware=[Middleware(TrustedHostMiddleware, allowed_hosts=["127.0.0.1", "localhost"])],
        exception_handlers={404: not_found},
    )


def _others(index: Index, name: str) -> list[str]:
    """Runs to set an answer beside: the same session's other versions first."""
    siblings = index.siblings(name)
    rest = [n for n in index.names() if n != name and n not in siblings]
    return siblings + rest[:30]


def _recording(config: ViewConfig, name: str) -> Any:
    """A recording by its file name, read only from the recordings folder."""
    if config.recordings is None or not _RECORDING.match(name):
        raise NotFound(f"no recording {name!r}")
    path = resolve_inside(config.recordings, name)
    return load_recording(path)


def _check_rating(body: Any, config: ViewConfig) -> str:
    """What is wrong with a posted rating, or ''."""
    if not isinstance(body, dict):
        return "expected a JSON object"
    rubric = body.get("rubric")
    if rubric not in config.rubrics:
        return f"unknown rubric {rubric!r}"
    ratings = body.get("ratings")
    wanted = {d for d, _ in config.rubrics[rubric]}
    if not isinstance(ratings, dict) or set(ratings) != wanted:
        return f"expected a rating of each of {', '.join(sorted(wanted))}"
    if any(isinstance(v, bool) or v not in (1, 2, 3, 4, 5) for v in ratings.values()):
        return "a rating is a whole number from 1 to 5"
    comment, reviewer = body.get("comment", ""), body.get("reviewer", "")
    if not isinstance(comment, str) or len(comment) > MAX_COMMENT:
        return f"a comment is text of at most {MAX_COMMENT} characters"
    if not isinstance(reviewer, str) or not reviewer.strip() or len(reviewer) > MAX_REVIEWER:
        return f"a rating needs the reviewer's name (text of at most {MAX_REVIEWER} characters)"
    return ""
