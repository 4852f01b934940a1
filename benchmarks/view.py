"""``prompteval view`` over a large history: time to the first page, and to a run's pages.

    python benchmarks/view.py [--runs 200] [--items 1000]

Writes a generated history of RUNS runs (versions v0-v3 in turn) of ITEMS items each, with
the writer the plugin uses (``core/history``), into a temporary folder; serves it on
127.0.0.1 as ``prompteval view`` does; and times, over real HTTP:

- the first page of runs, cold (a fresh server: every run on the page read from disk), then
  warm (cached by name, size and modification time);
- a run's page (its 1,000 items parsed, summarized and the first page of cases rendered),
  and an item's page of that run (the run cached).

For scale, it also prints what reading the first page's runs whole would cost (what the
index avoids by reading a file's meta and summary only).
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import uvicorn

from pytest_prompteval.core.history import RunHistory, load_run
from pytest_prompteval.core.result import CheckResult, ItemResult, JudgeResult
from pytest_prompteval.report.summary import summarize
from pytest_prompteval.view.app import RUNS_PER_PAGE, ViewConfig, build_app
from pytest_prompteval.view.index import Index
from pytest_prompteval.view.serve import listen
from pytest_prompteval.workflows.review import SEED_DIMENSIONS


def generate(folder: Path, runs: int, items: int) -> None:
    for number in range(runs):
        version = f"v{number % 4}"
        history = RunHistory(folder, {version: {}})
        results = []
        for i in range(items):
            passed = (i * 7 + number) % 10 != 0
            result = ItemResult(
                case_id=f"case_{i:05d}", file=f"cases/file_{i % 20}.yaml", prompt=version,
                category=f"cat{i % 8}", outcome="passed" if passed else "failed", passed=passed,
                score=0.9 if passed else 0.3, cost_usd=0.0004, latency_ms=800.0,
                response=f"Answer {i}: the loop is unrolled and vectorized. " * 4,
                judge=JudgeResult(0.8, {"correctness": 0.8, "clarity": 0.7}, "fine", [], 0,
                                  "claude-judge", "default_review"),
                assertions=[CheckResult("contains", passed, float(passed), 1.0, "wanted loop")],
            )  # fmt: skip
            history.add(result)
            results.append(result)
        history.finalize({version: summarize(results, [version])[0].to_json()}, partial=False)


def timed_get(url: str) -> tuple[float, int]:
    start = time.perf_counter()
    with urllib.request.urlopen(url) as answer:
        body = answer.read()
    return time.perf_counter() - start, len(body)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--items", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "results"
        start = time.perf_counter()
        generate(folder, args.runs, args.items)
        size = sum(p.stat().st_size for p in folder.iterdir()) / 1e6
        print(f"history: {args.runs} runs x {args.items} items, {size:.0f} MB, "
              f"written in {time.perf_counter() - start:.1f} s")  # fmt: skip
        config = ViewConfig(folder, None, {"seed": SEED_DIMENSIONS}, token="benchmark")
        sock = listen()
        server = uvicorn.Server(uvicorn.Config(build_app(config), log_level="warning"))
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        try:
            cold, size_first = timed_get(url + "/")
            warm, _ = timed_get(url + "/")
            newest = Index(folder).names()[0]
            run_page, _ = timed_get(f"{url}/run/{newest}")
            item_page, _ = timed_get(f"{url}/run/{newest}/item/{args.items // 2}")
        finally:
            server.should_exit = True
            thread.join()
        print(f"first page of runs ({RUNS_PER_PAGE} runs, {size_first // 1000} kB): "
              f"{cold * 1000:.0f} ms cold, {warm * 1000:.0f} ms warm")  # fmt: skip
        print(f"a run's page ({args.items} items): {run_page * 1000:.0f} ms; "
              f"an item's page: {item_page * 1000:.0f} ms")  # fmt: skip
        start = time.perf_counter()
        for name in Index(folder).names()[:RUNS_PER_PAGE]:
            load_run(folder / name, folder)
        whole = time.perf_counter() - start
        print(f"for scale: reading the first page's {RUNS_PER_PAGE} runs whole: "
              f"{whole * 1000:.0f} ms")  # fmt: skip


if __name__ == "__main__":
    main()
