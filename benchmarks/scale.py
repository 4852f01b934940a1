"""10,000 cases: collection time (cold, and with parsed case files cached in .pytest_cache),
replay overhead per item, peak memory.

    python benchmarks/scale.py [--cases 10000]

Makes a project of N cases in 10 files, records a short answer for each through a python:
provider (not timed), then times, each in a fresh pytest process: ``--collect-only``, and a
full replay run (``--prompteval-record none``, one process, no xdist). Per-item overhead is
(replay - collect-only) / N. Peak memory is the replay process's maximum resident set.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

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
    per_file = cases // 10
    for f in range(10):
        lines = ["description: generated\ncases:\n"]
        for i in range(f * per_file, (f + 1) * per_file):
            lines.append(
                f"- id: case_{i:05d}\n  category: cat_{i % 7}\n  difficulty: beginner\n"
                f"  expected_topics: [loop_optimization, early_termination]\n"
                f"  input: {{instructionSet: x86_64, code: 'int f{i}(int n);', "
                f"asm: [{{text: 'f{i}:'}}, {{text: '        ret'}}]}}\n"
            )
        (root / "prompt_cases" / f"cases_{f}.yaml").write_text("".join(lines))
    (root / "benchapp.py").write_text(APP)
    (root / "pytest.ini").write_text("[pytest]\npythonpath = .\n")


def pytest(root: Path, *args: str) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "--prompt=v",
            "--prompteval-results=none",
            *args,
        ],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )
    last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-500:]
    return time.perf_counter() - started, last


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_project(root, args.cases)
        seconds, last = pytest(
            root, "--prompteval-provider=python:benchapp:answer", "--prompteval-record=new"
        )
        print(f"recorded {args.cases} answers in {seconds:.1f} s: {last}", flush=True)
        cold, cold_last = pytest(root, "--collect-only", "--cache-clear")
        collect, last = pytest(root, "--collect-only")
        print(
            f"collection, parsed case files cached: {last} (whole process {collect:.2f} s); "
            f"cold, parsing the YAML: {cold_last} ({cold:.2f} s)",
            flush=True,
        )
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        replay, last = pytest(root, "--prompteval-record=none")
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        per_item = (replay - collect) / args.cases * 1000
        print(
            f"replay: {replay:.2f} s ({last}); {per_item:.2f} ms per item over collection; "
            f"peak memory {peak / 1024:.0f} MB"
            + ("" if peak > before else " (not above an earlier child's peak)"),
            flush=True,
        )


if __name__ == "__main__":
    main()
