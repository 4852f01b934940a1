"""What the verdict's diff costs pytest when the agent leaves large changes behind.

    python benchmarks/diff_memory.py [six-16mb | one-100mb-line | many-files]

One scenario per process (peak memory is the process's): a small project, a copy changed
as the scenario says, the diff taken through the repository sandbox as the verdict takes
it. Printed: the diff's size, its first lines, and pytest's peak resident memory before and
after (``ru_maxrss``), in MiB.
"""

from __future__ import annotations

import resource
import sys
import tempfile
import time
from pathlib import Path

from pytest_prompteval.sandbox.workspace import Copy, Snapshot, Workspace


def peak() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def change(top: Path, scenario: str) -> None:
    if scenario == "six-16mb":
        for number in range(6):
            with open(top / f"big{number}.txt", "wb") as file:
                for _ in range(16):
                    file.write((b"x" * 99 + b"\n") * 10_000)
    elif scenario == "one-100mb-line":
        with open(top / "line.txt", "wb") as file:
            for _ in range(100):
                file.write(b"y" * 1_000_000)
    elif scenario == "many-files":
        for number in range(20_000):
            (top / f"f{number:05d}.txt").write_text("z" * 200 + "\n")
    else:
        raise SystemExit(f"unknown scenario {scenario!r}")


def main() -> None:
    scenario = sys.argv[1] if len(sys.argv) > 1 else "six-16mb"
    base = Path(tempfile.mkdtemp(prefix="prompteval-bench-base-"))
    (base / "m.py").write_text("x = 1\n")
    with Copy(Snapshot(folder=base)) as copy:
        change(copy.path, scenario)
        before = peak()
        started = time.perf_counter()
        with Workspace(copy.path, base=base) as workspace:
            shown = workspace.diff(timeout=300.0)
        seconds = time.perf_counter() - started
    print(f"scenario {scenario}: diff {len(shown.encode()):,} bytes in {seconds:.1f} s")
    print("  " + "\n  ".join(shown[:400].splitlines()[:4]))
    print(f"  pytest's peak memory: {before:.0f} MiB before the diff, {peak():.0f} MiB after")


if __name__ == "__main__":
    main()
