"""The sandbox's fork server: ``python -I -m pytest_prompteval.sandbox.server``.

It starts once per pytest process, imports what generated code usually needs (and, for
property tests, hypothesis), then reads one JSON job per line on stdin and answers one JSON
line on stdout. Each job is one fork of the server: the sample, which runs ``harness.run``.

What isolates a sample:
- a sanitised environment (set by the client: no API keys), no stdin, a fresh working
  directory, stdout and stderr into a file whose size is capped (RLIMIT_FSIZE);
- RLIMIT_CPU, RLIMIT_AS (memory), RLIMIT_NPROC, RLIMIT_NOFILE, no core files;
- a wall-clock timer that SIGKILLs the sample;
- as root (when the kernel allows): the server runs as PID 1 of its own PID namespace, in
  its own network namespace (no interface up) and mount namespace (fresh tmpfs on /tmp,
  /var/tmp and /dev/shm, emptied after every job). After each sample, kill(-1) from PID 1
  ends every process the sample started, ``setsid`` or not. The sample runs as ``nobody``:
  it can neither signal the server nor write where nobody may not;
- otherwise: the sample's own session, killed as a process group, and a sweep of /proc
  for any process that still carries the job's marker in its environment.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import json
import math
import os
import resource
import select
import shutil
import signal
import sys
import time
from typing import Any

from pytest_prompteval.sandbox import harness

CLONE_NEWNS, CLONE_NEWPID, CLONE_NEWNET = 0x00020000, 0x20000000, 0x40000000
MS_REC, MS_PRIVATE = 0x4000, 1 << 18
NOBODY = 65534
MARKER = "PROMPTEVAL_SANDBOX"
PRELOAD = [
    "abc",
    "array",
    "bisect",
    "calendar",
    "cmath",
    "collections",
    "collections.abc",
    "contextlib",
    "copy",
    "csv",
    "dataclasses",
    "datetime",
    "decimal",
    "enum",
    "fractions",
    "functools",
    "hashlib",
    "heapq",
    "io",
    "itertools",
    "json",
    "math",
    "numbers",
    "operator",
    "random",
    "re",
    "statistics",
    "string",
    "struct",
    "textwrap",
    "time",
    "types",
    "typing",
    "unicodedata",
    "socket",
    "encodings.idna",
    "encodings.latin_1",
    "encodings.utf_16",
    "encodings.utf_32",
    "encodings.unicode_escape",
    "encodings.raw_unicode_escape",
    "encodings.cp1252",
]

_libc = ctypes.CDLL(None, use_errno=True)
ROOT = os.geteuid() == 0


def _unshare(flags: int) -> bool:
    return ROOT and _libc.unshare(flags) == 0


def _private_tmp() -> bool:
    if not _unshare(CLONE_NEWNS):
        return False
    if _libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None) != 0:
        return False
    ok = True
    for path in (b"/tmp", b"/var/tmp", b"/dev/shm"):
        if os.path.isdir(path):
            ok &= _libc.mount(b"tmpfs", path, b"tmpfs", 0, b"size=64m,mode=1777") == 0
    return ok


def _vm_size() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def _sample(job: dict[str, Any], events_fd: int, limits: dict[str, Any]) -> None:
    """The grandchild: limits, then the harness. Never returns."""
    try:
        os.setsid()
        workdir = os.path.join(
            "/tmp" if limits["fs_private"] else os.getcwd(), f"job-{os.getpid()}"
        )
        os.makedirs(workdir, exist_ok=True)
        if ROOT:
            os.chown(workdir, NOBODY, NOBODY)
        os.chdir(workdir)
        output = os.open("output.txt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        if ROOT:
            os.fchown(output, NOBODY, NOBODY)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(output, 1)
        os.dup2(output, 2)
        cpu = math.ceil(limits["timeout"]) + 1
        memory = _vm_size() + limits["memory_mb"] * 1024 * 1024
        for name, value in (
            ("RLIMIT_CPU", cpu),
            ("RLIMIT_AS", memory),
            ("RLIMIT_FSIZE", limits["output_bytes"]),
            ("RLIMIT_NPROC", limits["processes"]),
            ("RLIMIT_NOFILE", 256),
            ("RLIMIT_CORE", 0),
        ):
            resource.setrlimit(getattr(resource, name), (value, value))
        if ROOT:
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
        sys.setrecursionlimit(3000)
        with os.fdopen(events_fd, "w") as events:
            harness.run(job, events)
    finally:
        os._exit(0)


def _sweep(marker: str) -> None:
    """Kill every process whose environment carries this job's marker (no PID namespace)."""
    needle = f"{MARKER}={marker}".encode()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        if int(pid) == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as environ:
                if needle in environ.read().split(b"\0"):
                    os.kill(int(pid), signal.SIGKILL)
        except OSError:
            continue


def _clear_tmp() -> None:
    """Empty the private /tmp, /var/tmp and /dev/shm between jobs."""
    for directory in ("/tmp", "/var/tmp", "/dev/shm"):
        with contextlib.suppress(OSError), os.scandir(directory) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path, ignore_errors=True)
                else:
                    with contextlib.suppress(OSError):
                        os.unlink(entry.path)


def run_job(job: dict[str, Any], isolation: dict[str, bool]) -> dict[str, Any]:
    """Fork the sample, time it, collect its events, and leave nothing of it behind."""
    limits = {**job["limits"], "fs_private": isolation["fs_private"]}
    marker = f"{os.getpid()}-{time.monotonic_ns()}"
    events_r, events_w = os.pipe()
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:
        os.close(events_r)
        os.environ[MARKER] = marker
        _sample(job, events_w, limits)
    os.close(events_w)
    timed_out = False

    def expire(*_: object) -> None:
        nonlocal timed_out
        timed_out = True
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)

    signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, limits["timeout"])
    buffer, status = bytearray(), None
    while True:
        if len(buffer) > 4 * 1024 * 1024:  # more events than any harness writes: stop it
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            break
        ready, _, _ = select.select([events_r], [], [], 0.05)
        if ready:
            chunk = os.read(events_r, 65536)
            if not chunk:
                break
            buffer += chunk
        elif status is None:
            done, code = os.waitpid(pid, os.WNOHANG)
            if done:  # the sample ended but a descendant holds the pipe: end them all
                status = code
                _kill_descendants(pid, marker, isolation)
    os.close(events_r)
    if status is None:
        _, status = os.waitpid(pid, 0)  # the timer still guards this wait
    signal.setitimer(signal.ITIMER_REAL, 0)
    _kill_descendants(pid, marker, isolation)
    if isolation["fs_private"]:
        _clear_tmp()
    else:
        shutil.rmtree(os.path.join(os.getcwd(), f"job-{pid}"), ignore_errors=True)
    return {
        "events": [
            json.loads(line)
            for line in bytes(buffer).decode(errors="replace").splitlines()
            if line.startswith("{")
        ][:10_000],
        "timed_out": timed_out,
        "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
        "exit_code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
        "seconds": time.monotonic() - started,
    }


def _kill_descendants(pid: int, marker: str, isolation: dict[str, bool]) -> None:
    if isolation["own_pids"]:
        # PID 1 of its namespace: kill(-1) reaches every other process in it, setsid or not.
        with contextlib.suppress(ProcessLookupError):
            os.kill(-1, signal.SIGKILL)
        while True:  # reap what was re-parented to us
            try:
                os.waitpid(-1, 0)
            except ChildProcessError:
                break
    else:
        with contextlib.suppress(OSError):
            os.killpg(pid, signal.SIGKILL)
        _sweep(marker)


def _isolate() -> dict[str, bool]:
    """As root: own network, mount and PID namespaces for the server and all it forks.
    The process that called this waits for the namespace's first process, which goes on
    as the server (PID 1 there) and returns."""
    network = _unshare(CLONE_NEWNET)
    own_pids = _unshare(CLONE_NEWPID)
    if own_pids:
        child = os.fork()
        if child:
            _, status = os.waitpid(child, 0)
            os._exit(os.waitstatus_to_exitcode(status) & 0xFF)
        _libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: die with the outer process
    return {"network_isolated": network, "own_pids": own_pids, "fs_private": _private_tmp()}


# Modules hypothesis imports only on some paths (targeting, shrinking, reporting).
LAZY_HYPOTHESIS = (
    "hypothesis.internal.conjecture.optimiser",
    "hypothesis.internal.conjecture.shrinker",
    "hypothesis.internal.conjecture.pareto",
    "hypothesis.internal.conjecture.shrinking",
    "hypothesis.internal.scrutineer",
    "hypothesis.internal.reflection",
    "hypothesis.internal.escalation",
    "hypothesis.extra._patching",
)


def _warm_hypothesis() -> None:
    """Import hypothesis, and exercise it (generate, fail, shrink) once, in the server: a
    sample running as nobody cannot import the modules it would load lazily."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    @settings(
        max_examples=60,
        database=None,
        deadline=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    @given(
        st.tuples(
            st.integers(),
            st.floats(),
            st.text(),
            st.lists(st.booleans()),
            st.dictionaries(st.text(), st.none()),
            st.sampled_from([1, 2]),
        )
    )
    def fails_late(values: tuple[Any, ...]) -> None:
        assert values[0] < 10

    @settings(max_examples=30, database=None, deadline=None, derandomize=True)
    @given(st.lists(st.integers()))
    def passes(values: list[int]) -> None:
        assert len(values) >= 0

    with (
        open(os.devnull, "w") as null,
        contextlib.redirect_stdout(null),
        contextlib.redirect_stderr(null),
    ):
        passes()
        with contextlib.suppress(AssertionError):
            fails_late()
    for name in LAZY_HYPOTHESIS:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    if "numpy" in sys.modules:  # then hypothesis seeds numpy's generator on every run
        importlib.import_module("numpy.random")


def main() -> None:
    for module in PRELOAD:
        __import__(module)
    # Before the private /tmp hides anything installed there (a venv under /tmp, say).
    if os.environ.get("PROMPTEVAL_SANDBOX_HYPOTHESIS"):
        _warm_hypothesis()
    isolation = _isolate()
    print(json.dumps({"ready": True, "root": ROOT, **isolation}), flush=True)
    for line in sys.stdin:
        print(json.dumps(run_job(json.loads(line), isolation), default=repr), flush=True)


if __name__ == "__main__":
    main()
