"""Where a repository task's time goes, per item, for the examples' cases.

    python benchmarks/repo_tasks.py [--samples 10] [--beside-plain-only]

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

Last, the cost of an item beside plain pytest, as whole processes: the ``feet_to_meters``
case (a src layout, in its environment) with an agent that changes nothing (recorded once,
replayed), one item per ``pytest`` process, against the environment's own ``python -m
pytest`` on the same tests of a copy; and per item within one run of ``--samples`` items.
``--beside-plain-only`` runs this last part alone. Each figure is given in wall seconds and
in CPU seconds (the process and its children): on a loaded machine the first grows with the
load, the second much less. pytest rewrites the asserts of every other plugin's modules
(anyio's, which the SDK brings, above all) and keeps the result as bytecode where bytecode
is written: the recording runs write it, as a user's first run does; ``--cold`` removes it
first, as where bytecode was never written (``PYTHONDONTWRITEBYTECODE`` from the start).

The plugin's modules are compiled first, as pip leaves them when it installs the package;
``--editable`` leaves them as an editable checkout has them (bytecode an earlier run wrote is
still read: remove ``src/pytest_prompteval/**/__pycache__`` to measure without it).
"""

from __future__ import annotations

import argparse
import compileall
import os
import resource
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import pytest

import pytest_prompteval
from pytest_prompteval.core.cases import load_case_file
from pytest_prompteval.core.repocases import parse_repo_case
from pytest_prompteval.interaction import repository
from pytest_prompteval.sandbox.environments import default_cache, ensure
from pytest_prompteval.sandbox.provider import NamespaceSandboxes
from pytest_prompteval.sandbox.workspace import Copy, Executor, Workspace
from pytest_prompteval.scoring.repo import apply_patch, snapshot_of, verdict
from pytest_prompteval.testing import AnthropicServer, ScriptedAgent

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
    in the glue's steps (the provider's copy and the agent's sandbox start, converse,
    verdict), by wrapping them. The verdict's sandbox starts on a thread of its own during
    the conversation: in none of them."""

    STEPS = ("copy_in", "repo_sandbox", "converse", "verdict")

    def __init__(self) -> None:
        self.items: list[float] = []
        self.steps: dict[str, list[float]] = defaultdict(list)
        self.current: dict[str, float] = defaultdict(float)
        for name in self.STEPS:
            owner = repository if hasattr(repository, name) else NamespaceSandboxes
            setattr(owner, name, self._timed(name, getattr(owner, name)))

    def _timed(self, name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            if threading.current_thread() is not threading.main_thread():
                return function(*args, **kwargs)
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
    spent = {"copy": "copy_in", "sandbox start": "repo_sandbox", "conversation": "converse"}
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


def forget_rewrites() -> int:
    """Remove the rewritten bytecode pytest keeps for other plugins' modules in this
    interpreter's site-packages (pytest makes it again; a process that writes no bytecode
    then rewrites them every time): how many files."""
    tail = f"-pytest-{pytest.__version__}.pyc"
    found = [p for p in Path(sysconfig.get_paths()["purelib"]).rglob(f"*{tail}")]
    for path in found:
        path.unlink()
    return len(found)


def beside_plain_pytest(samples: int, cold: bool, repeat: int = 7) -> None:
    """One item per process, and per item within a run, beside plain pytest. ``cold``: no
    rewritten bytecode of the environment's other plugins (anyio's among them) for pytest
    to read, as where bytecode was never written; else the recording runs write it, as a
    user's first run does where bytecode is written."""
    project = Path(tempfile.mkdtemp(prefix="prompteval-bench-")) / "repo-tasks"
    shutil.copytree(EXAMPLES, project)
    (project / "prompt_recordings").mkdir(exist_ok=True)
    for old in (project / "prompt_recordings").iterdir():
        old.unlink()
    case = next(
        parse_repo_case(c)
        for c in load_case_file(project / "prompt_cases" / "repo.yaml", root=project).cases
        if c.id == "feet_to_meters"
    )
    environment = ensure(case.environment, default_cache())
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    pytest_args = ["-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider"]
    item = [sys.executable, *pytest_args, "--prompt=fixer", "-k", "feet_to_meters"]
    item += ["--prompteval-results=none"]
    with AnthropicServer(ScriptedAgent({"to_meters": [["Nothing to change."]]})) as server:
        live = {**env, "ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": "loopback"}
        if not cold:
            live.pop("PYTHONDONTWRITEBYTECODE", None)
        for count in (1, samples):
            _timed([*item, f"--prompteval-samples={count}"], project, live)  # recorded
    replay = [*item, "--prompteval-record=none"]
    if cold:
        print(f"\n{forget_rewrites()} files of pytest's rewritten bytecode removed")
    tests = [*case.fail_to_pass, *case.pass_to_pass]
    with Copy(snapshot_of(case)) as copy:
        plain_env = {**env, "PYTHONPATH": str(copy.path / "src")}
        plain = [str(environment.bin / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        _timed([*plain, *tests], copy.path, plain_env)  # warm the file cache
        runs: dict[str, list[Timing]] = {"plain": [], "one item": [], f"{samples} items": []}
        for _ in range(repeat):  # interleaved: a load on the machine falls on all three
            # the snapshot's fail_to_pass test fails there: the time is what counts
            runs["plain"].append(_timed([*plain, *tests], copy.path, plain_env))
            runs["one item"].append(_timed([*replay, "--prompteval-samples=1"], project, env))
            runs[f"{samples} items"].append(
                _timed([*replay, f"--prompteval-samples={samples}"], project, env)
            )
    shutil.rmtree(project.parent)
    caches = "none" if cold else "written by the first run"
    print(
        f"\nbeside plain pytest (feet_to_meters, in its environment; median of {repeat}, s; "
        f"PYTHONDONTWRITEBYTECODE={env.get('PYTHONDONTWRITEBYTECODE', '')!r}, other plugins' "
        f"rewritten bytecode: {caches}):"
    )
    for kind in Timing._fields:
        median = {name: statistics.median(getattr(t, kind) for t in v) for name, v in runs.items()}
        one, many, plain_s = median["one item"], median[f"{samples} items"], median["plain"]
        per_item = (many - one) / (samples - 1)
        print(
            f"{kind:>5}: plain pytest, one process {plain_s:6.2f}; one item per process "
            f"{one:6.2f} (+{one - plain_s:.2f} beyond plain); {samples} items in one process "
            f"{many:6.2f} ({per_item:.2f} per further item, {per_item - plain_s:+.2f} beyond plain)"
        )


class Timing(NamedTuple):
    wall: float
    cpu: float  # user + system of the process and every child it waited for


def _timed(command: list[str], cwd: Path, env: dict[str, str]) -> Timing:
    """Wall and CPU seconds of ``command`` (its exit status does not matter here). CPU
    seconds hold still on a loaded machine where wall seconds do not."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, cwd=cwd, env=env, capture_output=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return Timing(wall, cpu)


def compile_plugin() -> None:
    """Bytecode for the plugin's modules, as pip leaves it when it installs the package: an
    editable checkout has none, and under PYTHONDONTWRITEBYTECODE compiles all of them in
    every process (about 0.08 s)."""
    compileall.compile_dir(Path(pytest_prompteval.__file__).parent, quiet=1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=10)
    parser.add_argument("--beside-plain-only", action="store_true")
    parser.add_argument(
        "--editable", action="store_true", help="do not compile the plugin's modules first"
    )
    parser.add_argument(
        "--cold",
        action="store_true",
        help="beside plain pytest with no rewritten bytecode of other plugins (removed first)",
    )
    options = parser.parse_args()
    samples = options.samples
    if not options.editable:
        compile_plugin()
    if options.beside_plain_only:
        beside_plain_pytest(samples, options.cold)
        return
    cases = [
        parse_repo_case(c)
        for c in load_case_file(EXAMPLES / "prompt_cases" / "repo.yaml", root=EXAMPLES).cases
    ]
    for case in cases:
        environment = ensure(case.environment, default_cache())
        times: dict[str, list[float]] = defaultdict(list)
        resolved = 0
        for _ in range(samples):
            phase = Phases(times)
            with Copy(snapshot_of(case)) as copy:
                phase("copy")
                with Workspace(copy.path, environment=environment) as workspace:
                    phase("sandbox start")
                    run = Executor(workspace, TOOLS, case.timeout)
                    run("bash", {"command": "ls"})
                    phase("shell start + command")
                    run("edit", {"command": "view", "path": "/repo"})
                    phase("editor call")
                    assert case.reference_patch is not None
                    apply_patch(workspace, case.reference_patch, case.timeout)
                    phase("patch")
                resolved += verdict(case, copy, environment=environment).passed
                phase("verdict")
        total = sum(sum(v) for v in times.values()) / samples
        print(f"{case.id}: {samples} samples, {resolved} resolved, {total:.0f} ms per item")
        for name in PHASES:
            values = times[name]
            print(
                f"  {name:24} median {statistics.median(values):7.1f} ms  max {max(values):7.1f} ms"
            )

    whole_run(samples)
    beside_plain_pytest(samples, options.cold)


if __name__ == "__main__":
    main()
