"""Where a repository task's time goes, per item, for the examples' cases.

    python benchmarks/repo_tasks.py [--samples 10]

For each case of ``examples/repo-tasks`` and each sample: the private copy, the sandbox's
start (namespaces, its own root), the shell's first command, one editor call, the reference
patch (standing in for the agent's edits), and the verdict (a fresh sandbox, the diff, the
tests). Prints the median and the maximum of each phase per case, in milliseconds. The tool
loop's model turns are not in it: replayed, they are a file read each.

Then the whole ``pytest`` run of the examples, ``--prompteval-samples`` of them: recorded
once against the loopback server playing record.py's scripted agent, then replayed offline
(timed): the run's wall time, time per item, and where an item's time goes (the copy, the
agent's sandbox start, the conversation: replayed turns and the tools run again, the
verdict, the rest: rendering, scoring, reporting).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_prompteval.core.cases import load_case_file
from pytest_prompteval.core.repocases import parse_repo_case
from pytest_prompteval.interaction import repository
from pytest_prompteval.sandbox.workspace import Copy, Executor, Workspace
from pytest_prompteval.scoring.repo import apply_patch, snapshot_of, verdict
from pytest_prompteval.testing import AnthropicServer

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


class ItemTimes:
    """A plugin: each item's setup (where its work is done) and, within it, the time spent
    in the glue's steps (repository.Copy, Workspace, converse, verdict), by wrapping them."""

    STEPS = ("Copy", "Workspace", "converse", "verdict")

    def __init__(self) -> None:
        self.items: list[float] = []
        self.steps: dict[str, list[float]] = defaultdict(list)
        self.current: dict[str, float] = defaultdict(float)
        for name in self.STEPS:
            setattr(repository, name, self._timed(name, getattr(repository, name)))

    def _timed(self, name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                self.current[name] += (time.perf_counter() - start) * 1000

        return timed

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "setup":
            self.items.append(report.duration * 1000)
            for name in self.STEPS:
                self.steps[name].append(self.current.pop(name, 0.0))


def whole_run(samples: int) -> None:
    """The examples' pytest run, recorded, then replayed offline and timed."""
    sys.path.insert(0, str(EXAMPLES))  # record.py's scripted agent
    from record import AGENT  # type: ignore[import-not-found]

    project = Path(tempfile.mkdtemp(prefix="prompteval-bench-")) / "repo-tasks"
    shutil.copytree(EXAMPLES, project)
    os.chdir(project)
    args = ["--prompt=fixer", f"--prompteval-samples={samples}", "-q", "-p", "no:randomly"]
    with AnthropicServer(AGENT) as server:
        os.environ.update(ANTHROPIC_BASE_URL=server.url, ANTHROPIC_API_KEY="loopback")
        assert pytest.main([*args, "--prompteval-record=all"]) == 0
    del os.environ["ANTHROPIC_API_KEY"]
    times = ItemTimes()
    start = time.perf_counter()
    code = pytest.main([*args, "--prompteval-record=none"], plugins=[times])
    wall = time.perf_counter() - start
    shutil.rmtree(project.parent)
    items = times.items
    print(
        f"\nwhole pytest run, {len(items)} items replayed offline (exit {code}): {wall:.1f} s, "
        f"{wall * 1000 / len(items):.0f} ms per item; per item, median (max) in ms:"
    )
    spent = {"copy": "Copy", "sandbox start": "Workspace", "conversation": "converse"}
    spent["verdict"] = "verdict"
    rest = [
        item - sum(times.steps[name][i] for name in ItemTimes.STEPS) for i, item in enumerate(items)
    ]
    for label, values in (
        ("item (setup)", items),
        *((label, times.steps[name]) for label, name in spent.items()),
        ("rest", rest),
    ):
        print(f"  {label:16} {statistics.median(values):7.1f} ({max(values):7.1f})")


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

    whole_run(samples)


if __name__ == "__main__":
    main()
