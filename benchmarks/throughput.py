"""Calls in flight from one pytest process, against the loopback server.

    python benchmarks/throughput.py [--items 500] [--latency 0.2] [--concurrency 0 4]
                                    [--repeat 3] [--agent-items 100] [--agent-steps 5]
                                    [--limited-items 300]
                                    [--per-minute 600] [--burst 10]

For each concurrency (0: the default settings, no option; 4: promptfoo's fixed default):
fresh ``pytest --prompt`` processes (recording every call, so each item really calls the
server) over N generated cases, ``--repeat`` times. Prints, per run and as the median: the
time before the first call reached the server, the call phase (first request in to last
answer out, seen by the server) next to the ideal N x latency / concurrency, and the whole
process's wall time. Start-up is measured too: the same pytest command with
``--collect-only`` (interpreter, pytest and its plugins, collection, summary) and the time
``import anthropic`` adds to a bare interpreter.

Then ``--agent-items`` agent cases of ``--agent-steps`` model calls each (a scripted tool call
per step, then the answer) at the default settings: their conversations are walked ahead,
each step a call of the pool in turn with the others, so the call phase is set beside the
ideal for as many independent calls (items x steps x latency / concurrency) and beside the
plain items' call phase measured above.

Then a run at the default settings against the server enforcing ``--per-minute`` requests in
bursts of ``--burst`` (a token bucket, announced in the API's ``anthropic-ratelimit-requests-*``
headers, 429 with ``retry-after`` over it): requests refused (target <= 5%) and the call
phase next to the limit's minimum, (items - burst) / (per-minute / 60) (target <= 1.25x).
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

from pytest_prompteval.providers.ratelimit import DEFAULT_CONCURRENCY
from pytest_prompteval.testing import AnthropicServer, RequestLimit, ScriptedAgent, call

ANSWER = " The loop optimization unrolls the loop; an early exit skips it when n is zero."


def project(root: Path, items: int, user_prompt: str = "Explain.") -> None:
    """``items`` cases c00000, c00001, ... with distinct inputs, and one prompt version."""
    (root / "prompts").mkdir()
    (root / "prompts" / "v.yaml").write_text(
        f"user_prompt: '{user_prompt}'\n"
        "model_config: {model: claude-haiku-4-5, max_tokens: 200}\n"
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


def agent_project(root: Path, items: int) -> None:
    """``items`` agent cases whose scripted world answers every ``lookup`` call."""
    (root / "prompts").mkdir()
    (root / "prompts" / "v.yaml").write_text(
        "user_prompt: 'Order {n}'\ninclude_input: false\n"
        "model_config: {model: claude-haiku-4-5, max_tokens: 200}\nmax_steps: 20\n"
        "tools:\n  - {name: lookup, input_schema: {type: object}}\n"
    )
    (root / "prompt_cases").mkdir()
    (root / "prompt_cases" / "c.yaml").write_text(
        "cases:\n"
        + "".join(
            f"- id: c{i:05d}\n  input: {{n: {i}}}\n  tool_results: [{{tool: lookup, result: ok}}]"
            "\n  assert: [{contains: Done}]\n"
            for i in range(items)
        )
    )
    (root / "pytest.ini").write_text("[pytest]\n")


def timed(command: list[str], **kwargs: Any) -> tuple[float, subprocess.CompletedProcess[str]]:
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, check=False, **kwargs)
    return time.monotonic() - started, done


def pytest_command(concurrency: int, *extra: str) -> list[str]:
    """0: the default concurrency."""
    return [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "--prompt=v",
        *([f"--prompteval-concurrency={concurrency}"] if concurrency else []),
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


def live_run(
    server: AnthropicServer,
    arrivals: list[float],
    items: int,
    concurrency: int,
    make: Any = project,
) -> tuple[float, float, float, str]:
    """(before the first call, call phase, whole process, pytest's last line)."""
    arrivals.clear()
    with tempfile.TemporaryDirectory() as tmp:
        make(Path(tmp), items)
        env = {**os.environ, "ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": "benchmark"}
        started = time.monotonic()
        wall, done = timed(pytest_command(concurrency), cwd=tmp, env=env)
    first = min(arrivals) - started if arrivals else 0.0
    phase = (max(arrivals) - min(arrivals) + server.latency) if arrivals else 0.0
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else "?"
    return first, phase, wall, summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=500)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, nargs="*", default=[0, 4])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--agent-items", type=int, default=100)
    parser.add_argument("--agent-steps", type=int, default=5)
    parser.add_argument("--limited-items", type=int, default=300)
    parser.add_argument("--per-minute", type=int, default=600)
    parser.add_argument("--burst", type=int, default=10)
    args = parser.parse_args()
    collect, sdk = startup(args.items)
    print(
        f"start-up: pytest --collect-only {collect:.2f} s; import anthropic adds {sdk:.2f} s "
        "to a bare interpreter",
        flush=True,
    )
    arrivals: list[float] = []

    def respond(request: dict[str, Any]) -> str:
        arrivals.append(time.monotonic())
        return ANSWER

    walls: dict[int, float] = {}
    phases: dict[int, float] = {}
    with AnthropicServer(respond, latency=args.latency) as server:
        for concurrency in args.concurrency:
            effective = concurrency or DEFAULT_CONCURRENCY
            label = f"concurrency {effective:3d}{' (default)' if not concurrency else ''}"
            ideal = args.items * args.latency / effective
            runs = []
            for _ in range(args.repeat):
                first, phase, wall, summary = live_run(server, arrivals, args.items, concurrency)
                runs.append((first, phase, wall))
                print(
                    f"{label}: {len(arrivals)} calls | first call after {first:.2f} s | call "
                    f"phase {phase:6.2f} s ({phase / ideal:.2f}x the ideal {ideal:.2f} s) | "
                    f"whole process {wall:6.2f} s | {summary}",
                    flush=True,
                )
            first, phase, wall = (statistics.median(r[i] for r in runs) for i in range(3))
            walls[concurrency], phases[concurrency] = wall, phase
            print(
                f"{label}, median of {args.repeat}: first call after {first:.2f} s; call phase "
                f"{phase:.2f} s = {phase / ideal:.2f}x the ideal; whole process {wall:.2f} s",
                flush=True,
            )
        if 0 in walls and 4 in walls:
            print(
                f"default settings vs fixed concurrency 4 (promptfoo's default): "
                f"{walls[4] / walls[0]:.2f}x faster (target >= 3x)",
                flush=True,
            )
        if args.agent_items:
            agent = ScriptedAgent(
                {"Order": [[call("lookup", n=1)]] * (args.agent_steps - 1) + [["Done."]]}
            )

            def converse(request: dict[str, Any]) -> dict[str, Any]:
                arrivals.append(time.monotonic())
                return agent(request)

            server.responder = converse
            calls = args.agent_items * args.agent_steps
            ideal = calls * args.latency / DEFAULT_CONCURRENCY
            agent_runs = [
                live_run(server, arrivals, args.agent_items, 0, agent_project)
                for _ in range(args.repeat)
            ]
            phase = statistics.median(r[1] for r in agent_runs)
            wall = statistics.median(r[2] for r in agent_runs)
            plain = f"; {args.items} plain items took {phases[0]:.2f} s" if 0 in phases else ""
            print(
                f"{args.agent_items} agent items of {args.agent_steps} steps ({calls} calls) at "
                f"the default settings, median of {args.repeat}: call phase {phase:.2f} s = "
                f"{phase / ideal:.2f}x the ideal {ideal:.2f} s for {calls} independent calls"
                f"{plain}; whole process {wall:.2f} s | {agent_runs[-1][3]}",
                flush=True,
            )
            server.responder = respond
        if args.limited_items:
            server.limit = RequestLimit(args.per_minute, args.burst)
            server.refused = 0
            first, phase, wall, summary = live_run(server, arrivals, args.limited_items, 0)
            minimum = (args.limited_items - args.burst) / (args.per_minute / 60)
            sent = len(arrivals) + server.refused
            print(
                f"limited to {args.per_minute}/min in bursts of {args.burst}, "
                f"{args.limited_items} items at the default settings: {server.refused} of "
                f"{sent} requests refused ({100 * server.refused / max(1, sent):.1f}%, target "
                f"<= 5%); call phase {phase:.2f} s = {phase / minimum:.2f}x the limit's minimum "
                f"{minimum:.2f} s (target <= 1.25x); whole process {wall:.2f} s | {summary}",
                flush=True,
            )


if __name__ == "__main__":
    main()
