"""Where a repository task's time goes, per item, for the examples' cases.

    python benchmarks/repo_tasks.py [--samples 10]

For each case of ``examples/repo-tasks`` and each sample: the private copy, the sandbox's
start (namespaces, its own root), the shell's first command, one editor call, the reference
patch (standing in for the agent's edits), and the verdict (a fresh sandbox, the diff, the
tests). Prints the median and the maximum of each phase per case, in milliseconds. The tool
loop's model turns are not in it: replayed, they are a file read each.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import defaultdict
from pathlib import Path

from pytest_prompteval.core.cases import load_case_file
from pytest_prompteval.core.repocases import parse_repo_case
from pytest_prompteval.sandbox.workspace import Copy, Executor, Workspace
from pytest_prompteval.scoring.repo import apply_patch, snapshot_of, verdict

EXAMPLES = Path(__file__).parents[1] / "examples" / "repo-tasks"
TOOLS = {"bash": "bash_20250124", "edit": "text_editor_20250728"}
PHASES = ("copy", "sandbox start", "shell start + command", "editor call", "patch", "verdict")


class Phases:
    """Each call records the milliseconds since the previous one under its name."""

    def __init__(self, times: dict[str, list[float]]) -> None:
        self.times = times
        self.mark = time.perf_counter()

    def __call__(self, name: str) -> None:
        now = time.perf_counter()
        self.times[name].append((now - self.mark) * 1000)
        self.mark = now


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=10)
    samples = parser.parse_args().samples
    cases = [
        parse_repo_case(c)
        for c in load_case_file(EXAMPLES / "prompt_cases" / "repo.yaml", root=EXAMPLES).cases
    ]
    for case in cases:
        times: dict[str, list[float]] = defaultdict(list)
        resolved = 0
        for _ in range(samples):
            phase = Phases(times)
            with Copy(snapshot_of(case)) as copy:
                phase("copy")
                with Workspace(copy.path) as workspace:
                    phase("sandbox start")
                    run = Executor(workspace, TOOLS, case.timeout)
                    run("bash", {"command": "ls"})
                    phase("shell start + command")
                    run("edit", {"command": "view", "path": "/repo"})
                    phase("editor call")
                    assert case.reference_patch is not None
                    apply_patch(workspace, case.reference_patch, case.timeout)
                    phase("patch")
                resolved += verdict(case, copy).passed
                phase("verdict")
        total = sum(sum(v) for v in times.values()) / samples
        print(f"{case.id}: {samples} samples, {resolved} resolved, {total:.0f} ms per item")
        for name in PHASES:
            values = times[name]
            print(
                f"  {name:24} median {statistics.median(values):7.1f} ms  max {max(values):7.1f} ms"
            )


if __name__ == "__main__":
    main()
