"""10,000 cases: collection time (cold, and with the case files' validated YAML cached in
.pytest_cache), replay overhead per item, peak memory.

    python benchmarks/scale.py [--cases 10000]

Makes a project of N cases in 10 files, records a short answer for each through a python:
provider (not timed), then times, each in a fresh pytest process: ``--collect-only``, and a
full replay run (``--prompteval-record none``, one process, no xdist). Collection is timed by
a small plugin from the start of ``pytest_collection`` to ``pytest_collection_finish``;
pytest's own "collected in" figure is shown beside it (it starts earlier, at session start,
and so also counts other plugins' report headers: hypothesis imports itself there). Per-item
overhead is (replay - collect-only) / N, whole processes. Peak memory is the replay
process's own maximum resident set. The whole ``--collect-only`` process is also shown less
a ``pytest --version`` process (Python and pytest starting), with the load average (the
machine may be shared). Python caches bytecode, as on a user's machine.
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

TIMING = """
import resource, time
import pytest

_started = []

@pytest.hookimpl(tryfirst=True)
def pytest_collection(session):
    _started.append(time.perf_counter())

@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session):
    print(f"\\nBENCH collection {time.perf_counter() - _started[0]:.3f}")

@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    print(f"BENCH peak {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}")
"""

APP = """
def answer(request, *, case, prompt, sample):
    return " The loop optimization unrolls the loop; an early exit skips it when n is zero."
"""


def write_project(root: Path, cases: int) -> None:
    (root / "prompts").mkdir()
    (root / "prompts" / "v.yaml").write_text(
        "system_prompt: 'You explain {arch} assembly.'\nuser_prompt: 'Explain {arch}.'\n"
        "model_config: {model: claude-haiku-4-5}\n"
    )
    (root / "prompt_cases").mkdir()
    for f in range(10):  # N cases in all, spread over the ten files
        lines = ["description: generated\ncases:\n"]
        for i in range(f * cases // 10, (f + 1) * cases // 10):
            lines.append(
                f"- id: case_{i:05d}\n  category: cat_{i % 7}\n  difficulty: beginner\n"
                f"  expected_topics: [loop_optimization, early_termination]\n"
                f"  input: {{instructionSet: x86_64, code: 'int f{i}(int n);', "
                f"asm: [{{text: 'f{i}:'}}, {{text: '        ret'}}]}}\n"
            )
        (root / "prompt_cases" / f"cases_{f}.yaml").write_text("".join(lines))
    (root / "benchapp.py").write_text(APP)
    (root / "benchtiming.py").write_text(TIMING)
    (root / "pytest.ini").write_text("[pytest]\npythonpath = .\n")


#: As on a user's machine: Python caching bytecode (a shell that sets
#: PYTHONDONTWRITEBYTECODE makes every run compile all it imports).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def version_seconds(root: Path) -> float:
    """A ``pytest --version`` process, median of 3: Python and pytest starting."""
    runs = []
    for _ in range(3):
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "pytest", "--version"], cwd=root, env=ENV, capture_output=True
        )
        runs.append(time.perf_counter() - started)
    return statistics.median(runs)


def pytest(root: Path, *args: str) -> tuple[float, str, dict[str, float]]:
    started = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "--prompt=v",
            "--prompteval-results=none",
            "-p",
            "benchtiming",
            *args,
        ],
        cwd=root,
        env=ENV,
        capture_output=True,
        text=True,
        check=False,
    )
    lines = done.stdout.strip().splitlines()
    figures = {
        line.split()[1]: float(line.split()[2]) for line in lines if line.startswith("BENCH ")
    }
    last = next((line for line in reversed(lines) if not line.startswith("BENCH ")), "")
    return time.perf_counter() - started, last or done.stderr[-500:], figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_project(root, args.cases)
        seconds, last, _ = pytest(
            root, "--prompteval-provider=python:benchapp:answer", "--prompteval-record=new"
        )
        print(f"recorded {args.cases} answers in {seconds:.1f} s: {last}", flush=True)
        for label, extra in (
            ("cold, parsing the YAML", "--cache-clear"),
            ("cached, not validated again", None),
        ):
            load = os.getloadavg()[0]
            runs = [pytest(root, "--collect-only", *([extra] if extra else [])) for _ in range(3)]
            whole, last, figures = sorted(runs, key=lambda run: run[2]["collection"])[1]
            version = version_seconds(root)
            print(
                f"collection {label} (median of 3): {figures['collection']:.2f} s; "
                f"pytest says: {last}; whole process {whole:.2f} s, less pytest --version "
                f"({version:.2f} s): {whole - version:.2f} s | load {load:.1f}",
                flush=True,
            )
        replay, last, figures = pytest(root, "--prompteval-record=none")
        per_item = (replay - whole) / args.cases * 1000
        print(
            f"replay: {replay:.2f} s ({last}); {per_item:.2f} ms per item over collect-only; "
            f"peak memory {figures['peak'] / 1024:.0f} MB",
            flush=True,
        )


if __name__ == "__main__":
    main()
