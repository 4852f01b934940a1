"""The sandbox's fork server: ``python -I -m pytest_prompteval.sandbox.server``.

It starts once per pytest process, imports what generated code usually needs, then reads one
JSON job per line on stdin and answers one JSON line on stdout. Each job runs in a
grandchild of the server:

    server ── job init (timer, collects events) ── sample (runs harness.run)

What isolates a sample:
- a sanitised environment (set by the client: no API keys), no stdin, a fresh working
  directory, stdout and stderr into a file whose size is capped (RLIMIT_FSIZE);
- RLIMIT_CPU, RLIMIT_AS (memory), RLIMIT_NPROC, RLIMIT_NOFILE, no core files;
- a wall-clock timer in the job init that SIGKILLs the sample;
- as root (when the kernel allows): a network namespace with no interfaces up (made once,
  for the server and all it forks); per job a PID namespace whose init is the sample, so
  that when it dies the kernel kills every process it started, ``setsid`` or not; a mount
  namespace with fresh tmpfs on /tmp, /var/tmp and /dev/shm; and the sample runs as
  ``nobody``, so it can neither signal the server nor write where nobody may not;
- otherwise: its own session, killed as a process group, and a sweep of /proc for any
  process that still carries the job's marker in its environment.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import json
import math
import os
import pkgutil
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
        if not ROOT:
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
    """Kill every process whose environment carries this job's marker (non-root fallback)."""
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


def _job_init(job: dict[str, Any], report_fd: int, limits: dict[str, Any]) -> None:
    """The child: its own PID and mount namespaces (as root), the timer, the events."""
    own_pids = _unshare(CLONE_NEWPID)
    fs_private = _private_tmp()
    marker = f"{os.getpid()}-{time.monotonic_ns()}"
    os.environ[MARKER] = marker
    events_r, events_w = os.pipe()
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:
        os.close(events_r)
        os.close(report_fd)
        _sample(job, events_w, {**limits, "fs_private": fs_private})
    os.close(events_w)
    timed_out = False

    def expire(*_: object) -> None:
        nonlocal timed_out
        timed_out = True
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)

    signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, limits["timeout"])
    buffer, status, exited_at = bytearray(), None, 0.0
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
            continue
        if status is None:
            done, code = os.waitpid(pid, os.WNOHANG)
            if done:
                status, exited_at = code, time.monotonic()
        elif time.monotonic() - exited_at > 0.1:
            break  # a descendant that escaped still holds the pipe
    if status is None:
        _, status = os.waitpid(pid, 0)  # the timer still guards this wait
    signal.setitimer(signal.ITIMER_REAL, 0)
    if not own_pids:
        with contextlib.suppress(OSError):
            os.killpg(pid, signal.SIGKILL)
        _sweep(marker)
    if not fs_private:
        shutil.rmtree(os.path.join(os.getcwd(), f"job-{pid}"), ignore_errors=True)
    report = {
        "events": [
            json.loads(line)
            for line in bytes(buffer).decode(errors="replace").splitlines()
            if line.startswith("{")
        ][:10_000],
        "timed_out": timed_out,
        "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
        "exit_code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
        "seconds": time.monotonic() - started,
        "fs_private": fs_private,
    }
    os.write(report_fd, json.dumps(report, default=repr).encode())


def handle(job: dict[str, Any]) -> dict[str, Any]:
    limits = job["limits"]
    report_r, report_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(report_r)
        try:
            _job_init(job, report_w, limits)
        finally:
            os._exit(0)
    os.close(report_w)
    chunks = []
    deadline = time.monotonic() + limits["timeout"] + 5
    while True:
        ready, _, _ = select.select([report_r], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:  # the job init itself hangs: end it (and, as root, its namespace)
            os.kill(pid, signal.SIGKILL)
            break
        chunk = os.read(report_r, 1 << 20)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(report_r)
    os.waitpid(pid, 0)
    try:
        return dict(json.loads(b"".join(chunks)))
    except ValueError:
        return {
            "events": [],
            "timed_out": False,
            "signal": None,
            "exit_code": None,
            "crashed": "the sandbox's job process died without a report",
        }


_warmed = False


def _warm_hypothesis() -> None:
    """Import hypothesis, and exercise it (generate, fail, shrink) once, in the server: a
    sample running as nobody cannot import the modules it would load lazily."""
    global _warmed
    if _warmed:
        return
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
    import hypothesis

    for module in pkgutil.walk_packages(hypothesis.__path__, "hypothesis."):
        if not module.name.startswith("hypothesis.extra"):
            with contextlib.suppress(Exception):
                importlib.import_module(module.name)
    if "numpy" in sys.modules:  # then hypothesis seeds numpy's generator on every run
        importlib.import_module("numpy.random")
    _warmed = True


def main() -> None:
    for module in PRELOAD:
        __import__(module)
    network = _unshare(CLONE_NEWNET)
    print(json.dumps({"ready": True, "root": ROOT, "network_isolated": network}), flush=True)
    for line in sys.stdin:
        job = json.loads(line)
        if job.get("properties"):
            _warm_hypothesis()
        print(json.dumps(handle(job), default=repr), flush=True)


if __name__ == "__main__":
    main()
