"""Calls in flight from one pytest process, against the loopback server.

    python benchmarks/throughput.py [--items 500] [--latency 0.2] [--concurrency 8 32]
                                    [--repeat 3]

For each concurrency: fresh ``pytest --prompt`` processes (recording every call, so each
item really calls the server) over N generated cases, ``--repeat`` times. Prints, per run
and as the median: the call phase (first request in to last answer out, seen by the
server) next to the ideal N x latency / concurrency, and the whole process's wall time next
to the ideal plus start-up. Start-up is measured here too: the same pytest command with
``--collect-only`` (interpreter, pytest and its plugins, collection, summary) plus the time
``import anthropic`` adds to a bare interpreter.
"""

from __future__ import annotations

import argparse
import os
import statistics
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


def timed(command: list[str], **kwargs: Any) -> tuple[float, subprocess.CompletedProcess[str]]:
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, check=False, **kwargs)
    return time.monotonic() - started, done


def pytest_command(concurrency: int, *extra: str) -> list[str]:
    return [
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
        *extra,
    ]


def startup(items: int) -> tuple[float, float]:
    """(pytest --collect-only, import anthropic): medians of three."""
    with tempfile.TemporaryDirectory() as tmp:
        project(Path(tmp), items)
        collect = statistics.median(
            timed(pytest_command(1, "--collect-only"), cwd=tmp)[0] for _ in range(3)
        )
    bare = statistics.median(timed([sys.executable, "-c", "pass"])[0] for _ in range(3))
    sdk = statistics.median(timed([sys.executable, "-c", "import anthropic"])[0] for _ in range(3))
    return collect, sdk - bare


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=500)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[8, 32])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    collect, sdk = startup(args.items)
    start = collect + sdk
    print(
        f"start-up {start:.2f} s: pytest --collect-only {collect:.2f} s + import anthropic "
        f"{sdk:.2f} s",
        flush=True,
    )
    arrivals: list[float] = []

    def respond(request: dict[str, Any]) -> str:
        arrivals.append(time.monotonic())
        return ANSWER

    with AnthropicServer(respond, latency=args.latency) as server:
        for concurrency in args.concurrency:
            ideal = args.items * args.latency / concurrency
            phases, walls = [], []
            for _ in range(args.repeat):
                arrivals.clear()
                with tempfile.TemporaryDirectory() as tmp:
                    project(Path(tmp), args.items)
                    env = {
                        **os.environ,
                        "ANTHROPIC_BASE_URL": server.url,
                        "ANTHROPIC_API_KEY": "benchmark",
                    }
                    wall, done = timed(pytest_command(concurrency), cwd=tmp, env=env)
                phase = (max(arrivals) - min(arrivals) + args.latency) if arrivals else 0.0
                phases.append(phase)
                walls.append(wall)
                summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else "?"
                print(
                    f"concurrency {concurrency:3d}: {len(arrivals)} calls | call phase "
                    f"{phase:6.2f} s ({phase / ideal:.2f}x the ideal {ideal:.2f} s) | whole "
                    f"process {wall:6.2f} s ({wall - start:.2f} s after start-up) | {summary}",
                    flush=True,
                )
            phase, wall = statistics.median(phases), statistics.median(walls)
            print(
                f"concurrency {concurrency:3d}, median of {args.repeat}: call phase "
                f"{phase:.2f} s = {phase / ideal:.2f}x the ideal; whole process {wall:.2f} s "
                f"= start-up {start:.2f} s + {wall - start:.2f} s "
                f"({(wall - start) / ideal:.2f}x the ideal)",
                flush=True,
            )


if __name__ == "__main__":
    main()
