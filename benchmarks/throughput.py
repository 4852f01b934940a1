"""Calls in flight from one pytest process, against the loopback server.

    python benchmarks/throughput.py [--items 500] [--latency 0.2] [--concurrency 8 32]

For each concurrency: a fresh ``pytest --prompt`` process (recording every call, so each
item really calls the server) over N generated cases. Prints the whole process's wall time,
the call phase (first request in to last answer out, seen by the server), and the ideal
N x latency / concurrency.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from pytest_prompteval.testing import AnthropicServer

ANSWER = " The loop optimization unrolls the loop; an early exit skips it when n is zero."


def project(root: Path, items: int) -> None:
    (root / "prompts").mkdir()
    (root / "prompts" / "v.yaml").write_text(
        "user_prompt: Explain.\nmodel_config: {model: claude-haiku-4-5, max_tokens: 200}\n"
    )
    (root / "prompt_cases").mkdir()
    (root / "prompt_cases" / "c.yaml").write_text(
        "cases:\n"
        + "".join(
            f"- id: c{i:05d}\n  expected_topics: [loop_optimization]\n  input: {{n: {i}}}\n"
            for i in range(items)
        )
    )
    (root / "pytest.ini").write_text("[pytest]\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=500)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[8, 32])
    args = parser.parse_args()
    arrivals: list[float] = []

    def respond(request: dict[str, Any]) -> str:
        arrivals.append(time.monotonic())
        return ANSWER

    with AnthropicServer(respond, latency=args.latency) as server:
        for concurrency in args.concurrency:
            arrivals.clear()
            with tempfile.TemporaryDirectory() as tmp:
                root = Path(tmp)
                project(root, args.items)
                env = {
                    **os.environ,
                    "ANTHROPIC_BASE_URL": server.url,
                    "ANTHROPIC_API_KEY": "benchmark",
                }
                started = time.monotonic()
                done = subprocess.run(
                    [
                        sys.executable,
                        "-m",
                        "pytest",
                        "-q",
                        "-p",
                        "no:cacheprovider",
                        "--prompt=v",
                        f"--prompteval-concurrency={concurrency}",
                        "--prompteval-record=all",
                        "--prompteval-results=none",
                    ],
                    cwd=root,
                    env=env,
                    capture_output=True,
                    text=True,
                    check=False,
                )
                wall = time.monotonic() - started
            calls = len(arrivals)
            phase = (max(arrivals) - min(arrivals) + args.latency) if arrivals else 0.0
            ideal = args.items * args.latency / concurrency
            summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else "?"
            print(
                f"concurrency {concurrency:3d}: {calls} calls | call phase {phase:6.2f} s "
                f"({phase / ideal:.2f}x the ideal {ideal:.2f} s) | whole pytest process "
                f"{wall:6.2f} s | {summary}",
                flush=True,
            )


if __name__ == "__main__":
    main()
