"""What importing the plugin costs a pytest process, and where it goes.

    python benchmarks/plugin_import.py [--repeat 7]

Each repeat is a fresh interpreter that imports pytest, then (timed) ``pytest_prompteval.plugin``
as pytest's entry point loads it: the milliseconds, the plugin's modules loaded, the
dataclasses made (Python 3.11 compiles each generated method on its own: most of the time)
and the regular expressions compiled on the way. Prints the median of each. The plugin's
modules are compiled first, as pip leaves them when it installs the package.
"""

from __future__ import annotations

import argparse
import compileall
import json
import statistics
import subprocess
import sys
from pathlib import Path

import pytest_prompteval

CHILD = """
import dataclasses, json, re, sys, time
import pytest  # not counted: plain pytest has it too

made = [0, 0.0]
compiled = [0, 0.0]


def timed(function, tally):
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            tally[0] += 1
            tally[1] += time.perf_counter() - start
    return wrapper


dataclasses._process_class = timed(dataclasses._process_class, made)
re._compile = timed(re._compile, compiled)
start = time.perf_counter()
import pytest_prompteval.plugin
took = time.perf_counter() - start
ours = [n for n in sys.modules if n.startswith("pytest_prompteval")]
figures = [took * 1000, len(ours), made[0], made[1] * 1000, compiled[0], compiled[1] * 1000]
print(json.dumps(figures))
"""

FIGURES = ("import ms", "modules", "dataclasses", "their ms", "patterns", "their ms")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=7)
    repeat = parser.parse_args().repeat
    compileall.compile_dir(Path(pytest_prompteval.__file__).parent, quiet=1)
    runs = [
        json.loads(subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True,
                                  check=True).stdout)
        for _ in range(repeat)
    ]  # fmt: skip
    medians = [statistics.median(run[i] for run in runs) for i in range(len(FIGURES))]
    print(f"importing the plugin (median of {repeat}):")
    for name, value in zip(FIGURES, medians, strict=True):
        print(f"  {name:>12}: {value:7.1f}")


if __name__ == "__main__":
    main()
