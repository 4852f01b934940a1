"""Peak memory of copying git snapshots that are small as objects and large as a copy.

    python benchmarks/snapshot_memory.py [--mib 512] [--entries 20000]

``zeros``: one blob of ``--mib`` MiB of zeros (512 MiB pack into half a megabyte). ``deep``:
``--entries`` empty files 126 folders deep (one tree of 1,000 reused), whose paths are long
as listed and short as objects. Each measurement runs in a fresh process and prints its
peak resident memory (getrusage) and time: the process with the plugin imported and
nothing copied; each copy as it is (a blob past MAX_FILE is refused from its size, before
it is read); and the zeros with the bounds raised past the blob, streamed in chunks.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def make_clone(top: Path, name: str, script: str) -> Path:
    clone = top / name
    subprocess.run(["git", "init", "-q", str(clone)], check=True)
    commit = "c=$(git -c user.name=b -c user.email=b@example.com commit-tree $t -m b)"
    script += f" && {commit} && git update-ref refs/heads/main $c"
    subprocess.run(script, shell=True, cwd=clone, check=True, stdout=subprocess.DEVNULL)
    return clone


def zeros(top: Path, mib: int) -> Path:
    script = (
        f"b=$(head -c {mib}M /dev/zero | git hash-object -w --stdin) && "
        't=$(printf "100644 blob $b\\tzeros.bin\\n" | git mktree)'
    )
    return make_clone(top, "zeros", script)


def deep(top: Path, entries: int) -> Path:
    """``entries`` empty files, 1,000 to a folder, below 125 folders named ``dd``."""
    script = (
        "e=$(git hash-object -w --stdin </dev/null) && "
        'f=$(for i in $(seq 1000); do printf "100644 blob $e\\tf$i\\n"; done | git mktree) && '
        f'w=$(for i in $(seq {entries // 1000}); do printf "040000 tree $f\\tw$i\\n"; done '
        "| git mktree) && "
        't=$w && for i in $(seq 125); do t=$(printf "040000 tree $t\\tdd\\n" | git mktree); done'
    )
    return make_clone(top, "deep", script)


def measure(clone: str, mode: str) -> dict[str, object]:
    """In the child: one copy (``mode``: none, bounded, raised) and its figures."""
    from pytest_prompteval.core.errors import PromptevalError
    from pytest_prompteval.sandbox import trees
    from pytest_prompteval.sandbox.workspace import Copy, Snapshot

    if mode == "raised":
        trees.MAX_FILE = trees.MAX_TOTAL = 2**40
    start = time.perf_counter()
    outcome = "nothing copied"
    if mode != "none":
        try:
            with Copy(Snapshot(git=Path(clone), ref="main")):
                outcome = "copied"
        except PromptevalError as exc:
            outcome = str(exc)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"outcome": outcome, "peak_mib": round(peak), "seconds": time.perf_counter() - start}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mib", type=int, default=512)
    parser.add_argument("--entries", type=int, default=20_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as top:
        big, wide = zeros(Path(top), args.mib), deep(Path(top), args.entries)
        runs = [("none", big, "none"), ("zeros", big, "bounded"), ("zeros", big, "raised")]
        for name, clone, mode in [*runs, ("deep", wide, "bounded")]:
            done = subprocess.run(
                [sys.executable, __file__, "--child", str(clone), mode],
                capture_output=True,
                text=True,
                check=True,
            )
            found = json.loads(done.stdout)
            print(
                f"{name:6} {mode:8} peak {found['peak_mib']:5,} MiB  {found['seconds']:7.2f} s  "
                f"{found['outcome']}"
            )


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        print(json.dumps(measure(sys.argv[2], sys.argv[3])))
    else:
        main()
