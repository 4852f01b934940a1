"""What a program's stdin test costs beside a function's io test: one case of N tests of
each kind, the same sum computed, run through the sandbox pool as pytest runs a sample.

    python benchmarks/code_programs.py [N]

Prints, per kind, the sample's CPU time (the judge's and the candidate's, as the sandbox
counts it for the timeout) and wall time, each the median of 5 runs, and per test.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from pytest_prompteval.core.cases import load_case_file
from pytest_prompteval.sandbox.provider import NamespaceSandboxes
from pytest_prompteval.scoring.code.runner import CodeRunner
from pytest_prompteval.scoring.code.spec import parse_code_spec

PROGRAM = "a, b = map(int, input().split())\nprint(a + b)\n"
FUNCTION = "def add(a, b):\n    return a + b\n"


def case_file(folder: Path, count: int) -> Path:
    stdin = "".join(f"  - {{stdin: '{i} {i}', stdout: '{2 * i}'}}\n" for i in range(count))
    args = "".join(f"  - {{args: [{i}, {i}], expected: {2 * i}}}\n" for i in range(count))
    path = folder / "c.yaml"
    path.write_text(
        "cases:\n"
        f"- id: program\n  kind: code\n  input: {{}}\n  timeout: 60\n  tests:\n{stdin}"
        f"- id: function\n  entry_point: add\n  input: {{}}\n  timeout: 60\n  tests:\n{args}"
    )
    return path


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    with tempfile.TemporaryDirectory() as folder:
        cases = {c.id: c for c in load_case_file(case_file(Path(folder), count)).cases}
        runner = CodeRunner(sandboxes=NamespaceSandboxes(concurrency=1))
        try:
            for name, code in (("program", PROGRAM), ("function", FUNCTION)):
                case = cases[name]
                spec = parse_code_spec(case)
                cpu, wall = [], []
                for attempt in range(5):
                    # a comment makes each run's code its own: no run is shared
                    text = f"```python\n# {attempt}\n{code}```"
                    started = time.perf_counter()
                    _, metrics = runner.score(case, spec, text, "")
                    wall.append(time.perf_counter() - started)
                    run, _ = runner.run(case, spec, metrics.details["code"])
                    cpu.append(run.cpu or 0.0)
                    assert metrics.functional, metrics.first_failure
                c, w = statistics.median(cpu), statistics.median(wall)
                print(
                    f"{name:8} {count} tests: CPU {c * 1000:.1f} ms ({c / count * 1e6:.0f} us a "
                    f"test), wall {w * 1000:.1f} ms ({w / count * 1e6:.0f} us a test)"
                )
        finally:
            runner.close()
    print(f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
