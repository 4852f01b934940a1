"""A live run against a faulty server: nothing lost, infrastructure errors reported as such.

    python benchmarks/chaos.py [--items 1002] [--concurrency 32] [--fault-rate 0.2]
                               [--permanent 0.25] [--latency 0.1] [--stall 2.0] [--seed 0]
                               [--kinds 429 529 500 reset malformed stall]

One project of N generated cases, three whole ``pytest`` processes against the loopback server:

1. fault-free, recording every call: the reference wall time;
2. the same with faults on a fixed share of the items, spread evenly over 429, 529, 500,
   reset connection, malformed 200 body and stall (the answer comes ``--stall`` s late); a
   ``--permanent`` share of the faulty items (stalls excepted) fault on every attempt;
3. ``--prompteval-record=new`` with the faults gone: it must call only for the items run 2
   could not answer.

Printed: how each item of run 2 was reported (from its JUnit XML: passed, failed, error,
skipped), whether every permanent fault is an error naming its class and request id (a reset
connection has none), recordings kept, the calls run 3 made, and run 2's wall time against
run 1's plus the stalls' share of the calls in flight (target: within 2x).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path
from typing import Any

import throughput  # the benchmarks' folder: the same generated project

from pytest_prompteval.testing import AnthropicServer, Fault

ANSWER = " The loop optimization unrolls the loop; an early exit skips it when n is zero."
KINDS = ("429", "529", "500", "reset", "malformed", "stall")
ITEM = re.compile(r"Item (\d+)\.")


def project(root: Path, items: int) -> None:
    # each request names its item, so a fault plan can pick the items it breaks
    throughput.project(root, items, user_prompt="Item {n}.")


def fault(kind: str, stall: float) -> Fault:
    if kind == "429":
        return Fault.rate_limited()
    if kind == "529":
        return Fault.overloaded()
    if kind == "500":
        return Fault(status=500, retry_after=None)
    if kind == "stall":
        return Fault(kind="stall", delay=stall)
    return Fault(kind=kind)


def plan(args: argparse.Namespace) -> dict[int, tuple[str, bool]]:
    """Item number -> (fault kind, permanent): a fixed share, kinds evenly spread."""
    rng = random.Random(args.seed)
    faulty = rng.sample(range(args.items), round(args.fault_rate * args.items))
    kinds = [args.kinds[i % len(args.kinds)] for i in range(len(faulty))]
    rng.shuffle(kinds)
    return {
        n: (kind, kind != "stall" and rng.random() < args.permanent)
        for n, kind in zip(faulty, kinds, strict=True)
    }


def run(root: Path, server: AnthropicServer, concurrency: int, *extra: str) -> float:
    env = {**os.environ, "ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": "benchmark"}
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "--prompt=v",
        f"--prompteval-concurrency={concurrency}",
        "--prompteval-results=none",
        *extra,
    ]
    started = time.monotonic()
    subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, check=False)
    return time.monotonic() - started


def outcomes(junit: Path) -> dict[int, tuple[str, str]]:
    """Item number -> (outcome, the report's text) from a JUnit XML file."""
    found = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        outcome, text = "passed", ""
        for tag in ("error", "failure", "skipped"):
            node = case.find(tag)
            if node is not None:
                outcome = {"failure": "failed"}.get(tag, tag)
                text = f"{node.get('message', '')}\n{node.text or ''}"
                break
        found[int(case.get("name", "c-1")[1:].split("[")[0])] = (outcome, text)
    return found


def calls(server: AnthropicServer) -> int:
    return sum(1 for r in server.requests if r.path.split("?")[0] == "/v1/messages")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=1002)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--fault-rate", type=float, default=0.2)
    parser.add_argument("--permanent", type=float, default=0.25)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--stall", type=float, default=2.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--kinds", nargs="+", choices=KINDS, default=list(KINDS))
    args = parser.parse_args()
    faults = plan(args)
    permanent = {n for n, (_, always) in faults.items() if always}
    stalls = sum(1 for kind, _ in faults.values() if kind == "stall")

    def fault_for(body: dict[str, Any], before: int) -> Fault | None:
        found = ITEM.search(json.dumps(body.get("messages", [])))
        entry = faults.get(int(found.group(1))) if found else None
        if entry is None or (before and not entry[1]):
            return None
        return fault(entry[0], args.stall)

    with AnthropicServer(lambda request: ANSWER, latency=args.latency) as server:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            project(root, args.items)
            clean = run(root, server, args.concurrency, "--prompteval-record=all")
        clean_calls = calls(server)
        server.requests.clear()
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            project(root, args.items)
            server.fault_plan = fault_for
            junit = root / "junit.xml"
            wall = run(
                root, server, args.concurrency, "--prompteval-record=new", f"--junitxml={junit}"
            )
            faulty_calls = calls(server)
            reported = outcomes(junit)
            recordings = len(list((root / "prompt_recordings").glob("*.json")))
            server.fault_plan = None
            server.requests.clear()
            rerun = run(
                root, server, args.concurrency, "--prompteval-record=new", f"--junitxml={junit}"
            )
            rerun_calls = calls(server)
            after = Counter(outcome for outcome, _ in outcomes(junit).values())

    counts = Counter(outcome for outcome, _ in reported.values())
    as_error = sum(1 for n in permanent if reported.get(n, ("", ""))[0] == "error")
    named = 0
    for n in permanent:
        kind = faults[n][0]
        text = reported.get(n, ("", ""))[1]
        has_id = kind == "reset" or re.search(r"request_id req_fault_\d+", text)
        has_class = re.search(r"\b(\w+Error): ", text)
        named += bool(has_id and has_class)
    wrongly_failed = sum(
        1 for n, (outcome, _) in reported.items() if outcome != "passed" and n not in permanent
    )
    allowance = stalls * args.stall / args.concurrency
    target = 2 * (clean + allowance)
    kinds = Counter(kind for kind, _ in faults.values())
    print(
        f"{args.items} items, concurrency {args.concurrency}, latency {args.latency:.2f} s: "
        f"{len(faults)} faulty ({', '.join(f'{k} {kinds[k]}' for k in KINDS)}), "
        f"{len(permanent)} of them on every attempt"
    )
    print(f"fault-free run: {clean:.2f} s, {clean_calls} calls")
    print(
        f"faulty run: {wall:.2f} s, {faulty_calls} calls; reported {len(reported)}/{args.items} "
        f"items: {', '.join(f'{k} {counts[k]}' for k in ('passed', 'failed', 'error', 'skipped'))}"
    )
    print(
        f"permanent faults: {len(permanent)}; reported as error {as_error}, naming their class "
        f"and request id {named}; other items not passed: {wrongly_failed}"
    )
    print(f"recordings kept: {recordings} (items answered: {args.items - len(permanent)})")
    print(
        f"re-run with --prompteval-record=new: {rerun_calls} calls (missing: {len(permanent)}), "
        f"{rerun:.2f} s; {after['passed']} passed"
    )
    print(
        f"wall time: {wall:.2f} s vs fault-free {clean:.2f} s + stalls {allowance:.2f} s "
        f"({stalls} x {args.stall:.1f} s / {args.concurrency}) = {clean + allowance:.2f} s: "
        f"{wall / (clean + allowance):.2f}x (target <= 2x, {target:.2f} s)"
    )


if __name__ == "__main__":
    main()
