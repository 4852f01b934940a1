"""``prompteval view`` over a large history: time to the first page, to a run's pages, and
to the grid, a search and the flips of a run of 50,000 items.

    python benchmarks/view.py [--runs 200] [--items 1000] [--cases 10000] [--samples 5]

Writes a generated history of RUNS runs (versions v0-v3 in turn) of ITEMS items each, then
one session of two versions (big-a, big-b) of CASES cases x SAMPLES samples, with the writer
the plugin uses (``core/history``), into a temporary folder; serves it with
``prompteval view`` in its own process (so its memory is the server's alone); and times,
over real HTTP:

- the first page of runs, cold (a fresh server: every run on the page read from disk), then
  warm (cached by name, size and modification time);
- a run's page of 1,000 items (its summary from the file's tail, its cases from its
  digest), and an item's page of that run;
- the big run's page, first opened in a first session (nothing kept: its digest streamed
  from the file; the server streams the newest session's digests in the background from
  its start), with the server's peak resident memory (VmHWM) then; a filtered page of it;
- the grid of the big run, a search over its case ids and answers (a term not searched
  before), a filtered page; an item's page of it; the grid of both big runs; the cases that
  flipped between them; the server's peak memory at the end;
- the big run's page and a search in a later session (the digests kept are read);
- the digest a run writes with a big results file (``keep_written``, as the plugin does at
  the end of a session): its cost, then the big run's page first opened in a session after
  it, with the server's peak memory then, and the grid's first page.

For scale, it also prints what reading the first page's runs whole would cost (what the
index avoids by reading a file's meta and summary only).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

from pytest_prompteval.core.history import RunHistory, load_run
from pytest_prompteval.core.result import CheckResult, ItemResult, JudgeResult
from pytest_prompteval.report.summary import summarize
from pytest_prompteval.view.app import RUNS_PER_PAGE
from pytest_prompteval.view.digest import RunDigest, keep_written
from pytest_prompteval.view.index import Index


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


def generate_big(folder: Path, cases: int, samples: int) -> list[str]:
    """One session of two versions; about one case in ten fails in each, differently."""
    versions = ("big-a", "big-b")
    history = RunHistory(folder, {v: {} for v in versions})
    for number, version in enumerate(versions):
        results = []
        for i in range(cases):
            for sample in range(samples):
                passed = (i * 7 + number * 3 + sample // 4) % 10 != 0
                result = ItemResult(
                    case_id=f"case_{i:05d}", file=f"cases/file_{i % 50}.yaml", prompt=version,
                    sample=sample, samples=samples, category=f"cat{i % 8}",
                    difficulty=("easy", "medium", "hard")[i % 3], min_pass=3,
                    outcome="passed" if passed else "failed", passed=passed,
                    score=0.9 if passed else 0.3, cost_usd=0.0004, latency_ms=800.0,
                    response=f"Answer {i}.{sample} ({version}): the loop over word{i} "
                    "is unrolled and vectorized. " * 3,
                    judge=JudgeResult(0.8, {"correctness": 0.8}, "fine", [], 0, "j", "t"),
                    assertions=[CheckResult("contains", passed, float(passed), 1.0, "loop")],
                )  # fmt: skip
                history.add(result)
                results.append(result)
    summaries = {
        v: summarize([r for r, _ in history.results[v]], [v])[0].to_json() for v in versions
    }
    return [p.name for p in history.finalize(summaries, partial=False)]


def peak_memory_mb(pid: int) -> tuple[float, float]:
    """The process's peak and current resident memory, in MB (Linux)."""
    fields = dict(
        line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
    )
    return int(fields["VmHWM"].split()[0]) / 1024, int(fields["VmRSS"].split()[0]) / 1024


def timed_get(url: str) -> tuple[float, int]:
    start = time.perf_counter()
    with urllib.request.urlopen(url) as answer:
        body = answer.read()
    return time.perf_counter() - start, len(body)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--samples", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "results"
        start = time.perf_counter()
        generate(folder, args.runs, args.items)
        big_a, big_b = generate_big(folder, args.cases, args.samples)
        size = sum(p.stat().st_size for p in folder.iterdir()) / 1e6
        big = (folder / big_a).stat().st_size / 1e6
        items = args.cases * args.samples
        print(f"history: {args.runs} runs x {args.items} items and 2 runs x {items} items "
              f"({big:.0f} MB each), {size:.0f} MB, "
              f"written in {time.perf_counter() - start:.1f} s")  # fmt: skip
        command = [sys.executable, "-m", "pytest_prompteval.cli", "view", "--no-open",
                   "--results", str(folder)]  # fmt: skip

        def popen(cache: str) -> subprocess.Popen[str]:
            """A server whose kept digests go to ``cache`` in the temporary folder."""
            environment = {**os.environ, "XDG_CACHE_HOME": str(Path(tmp) / cache)}
            return subprocess.Popen(
                command, cwd=tmp, stdout=subprocess.PIPE, text=True, env=environment
            )

        def url_of(server: subprocess.Popen[str]) -> str:
            assert server.stdout is not None
            return server.stdout.readline().split()[2].rstrip("/")

        big_page = f"/run/{big_a}"
        with popen("cache") as server:  # a first session: nothing kept
            try:
                url = url_of(server)
                cold, size_first = timed_get(url + "/")
                warm, _ = timed_get(url + "/")
                small = Index(folder).names("v0")[0]
                run_page, _ = timed_get(f"{url}/run/{small}")
                item_page, _ = timed_get(f"{url}/run/{small}/item/{args.items // 2}")
                big_run_cold, _ = timed_get(url + big_page)
                peak_run_cold, _ = peak_memory_mb(server.pid)
                big_run_again, _ = timed_get(url + big_page + "?failures=1&page=3")
                grid = f"{url}/grid?run={big_a}"
                grid_warm, _ = timed_get(grid)
                search, _size_search = timed_get(grid + "&q=" + urllib.parse.quote("word4242 "))
                filtered, _ = timed_get(grid + "&failed=1&category=cat3&sort=score&page=3")
                big_item, _ = timed_get(f"{url}/run/{big_a}/item/{items // 2}?vs={big_b}")
                both, _ = timed_get(f"{grid}&run={big_b}&flipped=1")
                flips, _ = timed_get(f"{url}/flips?a={big_a}&b={big_b}")
                peak, resident = peak_memory_mb(server.pid)
            finally:
                server.terminate()
        with popen("cache") as server:  # a later session: the digests kept are read
            try:
                url = url_of(server)
                later, _ = timed_get(url + big_page)
                later_search, _ = timed_get(f"{url}/grid?run={big_a}&q=word777%20")
            finally:
                server.terminate()
        # what a run does when it writes a big results file: its digest, for the view
        os.environ["XDG_CACHE_HOME"] = str(Path(tmp) / "cache-run-end")
        start = time.perf_counter()
        keep_written([folder / big_a, folder / big_b])
        at_run_end = (time.perf_counter() - start) / 2
        with popen("cache-run-end") as server:  # the first session after that run
            try:
                url = url_of(server)
                big_run_written, _ = timed_get(url + big_page)
                peak_run_written, _ = peak_memory_mb(server.pid)
                grid_written, _ = timed_get(f"{url}/grid?run={big_a}")
            finally:
                server.terminate()

        def ms(seconds: float) -> str:
            return f"{seconds * 1000:.0f} ms"

        print(f"first page of runs ({RUNS_PER_PAGE} runs, {size_first // 1000} kB): "
              f"{ms(cold)} cold, {ms(warm)} warm")  # fmt: skip
        print(f"a run's page ({args.items} items): {ms(run_page)}; an item's page: "
              f"{ms(item_page)}")  # fmt: skip
        print(
            f"the big run's page ({items} items: {args.cases} cases x {args.samples} samples), "
            f"first open in a first session (its digest streamed from the file, the other "
            f"run's in the background): {ms(big_run_cold)}, the server's peak memory then "
            f"{peak_run_cold:.0f} MB; a filtered page of it: {ms(big_run_again)}"
        )
        print(
            f"  with its digest written when the run wrote the file ({ms(at_run_end)} added "
            f"to the run's end per run): first open {ms(big_run_written)}, the server's peak "
            f"memory then {peak_run_written:.0f} MB; the grid's first page {ms(grid_written)}"
        )
        print(
            f"  the grid's first page: {ms(grid_warm)}; a search over its case ids and "
            f"answers: {ms(search)}; a filtered, sorted page: {ms(filtered)}; an item's page "
            f"beside the other run: {ms(big_item)}"
        )
        print(f"  grid of both big runs, flipped only: {ms(both)}; what flipped between "
              f"them: {ms(flips)}")  # fmt: skip
        print(f"  in a later session (its digest kept): its page {ms(later)}, "
              f"a search {ms(later_search)}")  # fmt: skip
        print(f"server's memory: peak {peak:.0f} MB resident, {resident:.0f} MB at the end "
              f"(two {big:.0f} MB results files digested)")  # fmt: skip
        start = time.perf_counter()
        RunDigest(big_a, folder / big_a, folder)
        print(f"for scale: streaming the big run's digest alone, in this process: "
              f"{ms(time.perf_counter() - start)}")  # fmt: skip
        start = time.perf_counter()
        for name in Index(folder).names()[:RUNS_PER_PAGE]:
            load_run(folder / name, folder)
        whole = time.perf_counter() - start
        print(f"for scale: reading the first page's {RUNS_PER_PAGE} runs whole: "
              f"{ms(whole)}")  # fmt: skip


if __name__ == "__main__":
    main()
