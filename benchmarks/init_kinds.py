"""What a new user waits for: ``prompteval init --kind K`` (files written, then the first
recordings made by the stand-in model through one pytest run), then their first ``pytest``
(every answer replayed), per kind, in a fresh folder, offline.

    python benchmarks/init_kinds.py [--kinds plain structured agent code repo] [--repeat 3]

Printed per kind: the median wall time of init and of the first pytest, and its items.
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

from pytest_prompteval.workflows.init import KINDS


def timed(command: list[str], cwd: Path) -> tuple[float, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "PYTEST_ADDOPTS")}
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(
            f"{' '.join(command)} in {cwd}: exit {done.returncode}\n{done.stdout}{done.stderr}"
        )
    return elapsed, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--kinds", nargs="+", default=list(KINDS), choices=KINDS)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"{'kind':<11} {'init s':>7} {'pytest s':>9}  first run")
    for kind in args.kinds:
        inits, runs, last = [], [], ""
        for _ in range(args.repeat):
            with tempfile.TemporaryDirectory() as folder:
                init = [sys.executable, "-m", "pytest_prompteval.cli", "init", "p", "--kind", kind]
                inits.append(timed(init, Path(folder))[0])
                seconds, last = timed([sys.executable, "-m", "pytest", "-q"], Path(folder) / "p")
                runs.append(seconds)
        outcome = last.strip().splitlines()[-1].strip("= ")
        print(
            f"{kind:<11} {statistics.median(inits):7.2f} {statistics.median(runs):9.2f}  {outcome}"
        )


if __name__ == "__main__":
    main()
