"""Peak memory of copying a git snapshot that holds one blob of zeros (512 MiB of zeros
pack into half a megabyte).

    python benchmarks/snapshot_memory.py [--mib 512]

Each measurement runs in a fresh process and prints its peak resident memory (getrusage)
and time: the process with the plugin imported and nothing copied; the copy as it is (a
blob past MAX_FILE is refused from its size, before it is read); and the copy with the
bounds raised past the blob, which streams it to its file in chunks.
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


def make_clone(top: Path, mib: int) -> Path:
    clone = top / "clone"
    subprocess.run(["git", "init", "-q", str(clone)], check=True)
    script = (
        f"b=$(head -c {mib}M /dev/zero | git hash-object -w --stdin) && "
        't=$(printf "100644 blob $b\\tzeros.bin\\n" | git mktree) && '
        "c=$(git -c user.name=b -c user.email=b@example.com commit-tree $t -m zeros) && "
        "git update-ref refs/heads/main $c"
    )
    subprocess.run(script, shell=True, cwd=clone, check=True)
    return clone


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
            with Copy(Snapshot(git=Path(clone), ref="main")) as copy:
                outcome = f"copied {(copy.path / 'zeros.bin').stat().st_size:,} bytes"
        except PromptevalError as exc:
            outcome = str(exc)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"outcome": outcome, "peak_mib": round(peak), "seconds": time.perf_counter() - start}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mib", type=int, default=512)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as top:
        clone = make_clone(Path(top), args.mib)
        for mode in ("none", "bounded", "raised"):
            done = subprocess.run(
                [sys.executable, __file__, "--child", str(clone), mode],
                capture_output=True,
                text=True,
                check=True,
            )
            found = json.loads(done.stdout)
            print(
                f"{mode:8} peak {found['peak_mib']:5,} MiB  {found['seconds']:6.2f} s  "
                f"{found['outcome']}"
            )


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        print(json.dumps(measure(sys.argv[2], sys.argv[3])))
    else:
        main()
