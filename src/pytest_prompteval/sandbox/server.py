"""The sandbox's fork server, started by the client with the parent's import path.

It starts once per worker of the pool, imports what generated code usually needs (and, for
property tests, hypothesis), isolates itself (``isolation.py``: its own user, PID, network,
IPC and mount namespaces, a read-only root of its own that shows the system, the interpreter
and its packages but no project folder (``view``), private tmpfs where writes are usual, a
fresh /proc), checks that a sample can read every standard-library module, then reads one
JSON job per line on stdin and answers one JSON line on stdout. Before the first job it
forks the zygote (``zygote.py``), from which each candidate's process is forked. Each job is
then one fork of the server, the judge (``harness.run``, privileges dropped), and one
candidate from the zygote, joined to the judge by pipes.

What else bounds a sample: a sanitised environment (set by the client: no API keys), no
stdin, a fresh working directory, stdout and stderr into a file whose size is capped
(RLIMIT_FSIZE); RLIMIT_NPROC and RLIMIT_AS (memory: the sample's, split between its
processes), RLIMIT_NOFILE, no core files; its CPU
time (judge, candidate and their children), read from /proc while it runs (so that a busy
machine does not change the verdict), and a wall-clock backstop for samples that sleep.
After each sample, the server, PID 1 of its namespace, kills every other process there but
the zygote, ``setsid`` or not, before it answers, and reaps them after. Every wait also
watches pytest (a pidfd): when it ends, killed or not, the server ends and its sample too.

Without any isolation (only with the user's opt-in) the server is a child subreaper, so
every orphan of a sample is re-parented to it and killed with the sample's process tree.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import importlib.machinery
import itertools
import json
import os
import select
import shutil
import signal
import socket
import stat
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

from pytest_prompteval.sandbox import harness
from pytest_prompteval.sandbox.harness import SIDE_EFFECTS, cpu_seconds
from pytest_prompteval.sandbox.isolation import (
    NOBODY,
    WRITABLE,
    Isolation,
    drop_privileges,
    isolate,
    set_dumpable,
)
from pytest_prompteval.sandbox.startup import view, watch_parent
from pytest_prompteval.sandbox.zygote import Zygote, bound, move_fds, rebound

PR_SET_CHILD_SUBREAPER = 36
#: Imported before isolation, so every sample has them at no cost.
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
#: How often a running sample's CPU time is read.
WATCH_SECONDS = 0.02
#: How long a judge told its time is up may take to write its events.
GRACE_SECONDS = 0.5


#: Samples one judge serves before the server replaces it (what its memory gathers).
JUDGE_SAMPLES = 100


def _receive(sock: socket.socket) -> tuple[dict[str, Any], list[int]] | None:
    """The judge's next sample from the server: its job and the ends of its pipes; None
    when the server is gone."""
    head, fds, _, _ = socket.recv_fds(sock, 8, 5)
    if len(head) != 8 or len(fds) != 5:
        for fd in fds:
            os.close(fd)
        return None
    size, data = int.from_bytes(head, "big"), bytearray()
    while len(data) < size:
        chunk = sock.recv(min(1 << 20, size - len(data)))
        if not chunk:
            return None
        data += chunk
    return json.loads(data), fds


def _serve_samples(
    sock: socket.socket, events_fd: int, limits: dict[str, Any], isolation: Isolation
) -> None:
    """The forked judge: limits, privileges dropped, then one sample after another
    (``harness.run``), each in its working directory and with its output file, until the
    server closes the socket. Never returns."""
    try:
        os.setsid()
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):  # pytest's pipes are the server's: never the judge's
            os.dup2(null, fd)
        sock_fd, events_fd = move_fds([sock.detach(), events_fd])
        bound(limits, isolation, ROOT, reusable=True)
        set_dumpable(False)  # after the uid change: the candidate cannot reach the judge
        server = socket.socket(fileno=sock_fd)
        with os.fdopen(events_fd, "w") as events:
            while (received := _receive(server)) is not None:
                job, fds = received
                # the harness closes the code's pipe itself: never close a number reused since
                pipes = {fd: os.fstat(fd).st_ino for fd in fds}
                *ends, output = fds
                os.chdir(job["workdir"])
                os.dup2(output, 1)
                os.dup2(output, 2)
                rebound(job["limits"])
                try:
                    harness.run(job, events, harness.Pipes(*ends))
                finally:
                    events.flush()
                    for stream in (sys.stdout, sys.stderr):
                        with contextlib.suppress(Exception):
                            stream.flush()
                    os.dup2(0, 1)  # /dev/null until the next sample's output
                    os.dup2(0, 2)
                    for fd, inode in pipes.items():
                        with contextlib.suppress(OSError):
                            if os.fstat(fd).st_ino == inode:
                                os.close(fd)
    finally:
        os._exit(0)


def _address_space(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm", "rb") as statm:
            return int(statm.read().split()[0]) * PAGE
    except (OSError, ValueError, IndexError):
        return 0


PAGE = os.sysconf("SC_PAGE_SIZE")


def _kind(limits: dict[str, Any]) -> tuple[Any, ...]:
    """What samples sharing a judge must have the same: all but the CPU time."""
    return tuple(sorted((k, v) for k, v in limits.items() if k != "timeout"))


class JudgeProcess:
    """The server's handle on its judge: one process that judges sample after sample (a
    fork of the server per sample cost as much as the sample), each against a candidate
    process of its own. The tests are the project's, and the candidate never reaches the
    judge (its own PID namespace; the judge is not dumpable): a sample's verdict cannot
    depend on another's. Replaced when a sample ends it (a crash, a timeout: its SIGTERM
    must never reach the next sample), after ``JUDGE_SAMPLES``, for other limits, or when
    it kept memory a sample used."""

    def __init__(self, limits: dict[str, Any], isolation: Isolation):
        self.sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        events_r, events_w = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:
            self.sock.close()
            os.close(events_r)
            _serve_samples(theirs, events_w, limits, isolation)
        theirs.close()
        os.close(events_w)
        self.events = events_r
        self.kind = _kind(limits)
        self.served = 0
        self.memory: int | None = None  # its address space when idle before its first sample

    def fits(self, limits: dict[str, Any]) -> bool:
        return self.served < JUDGE_SAMPLES and _kind(limits) == self.kind

    def grown(self, limits: dict[str, Any]) -> bool:
        """Whether it holds more than half a sample's share of memory beyond what it started
        with (what a sample's tests kept, or the allocator did not give back): the next
        sample would find less memory than the first."""
        if self.memory is None:
            return False
        share = int(limits["memory_mb"]) * 1024 * 1024 // int(limits["processes"])
        return _address_space(self.pid) - self.memory > share // 2

    def send(self, job: dict[str, Any], fds: list[int]) -> bool:
        """Hand the judge a sample; False when it is gone."""
        data = json.dumps(job).encode()
        try:
            socket.send_fds(self.sock, [len(data).to_bytes(8, "big")], fds)
            self.sock.sendall(data)
        except OSError:
            return False
        self.served += 1
        return True

    def end(self, reaped: bool = False) -> None:
        """Kill it and reap it (unless that is done)."""
        if not reaped:
            with contextlib.suppress(OSError):
                os.kill(self.pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(self.pid, 0)
        self.sock.close()
        os.close(self.events)


#: The judge of the next sample (None: started for it), and the limits it was made for.
_judge: JudgeProcess | None = None
_judge_limits: dict[str, Any] | None = None


def _judge_for(limits: dict[str, Any], isolation: Isolation) -> JudgeProcess:
    global _judge, _judge_limits
    if _judge is not None and not _judge.fits(limits):
        _judge.end()
        _judge = None
    if _judge is None:
        _judge, _judge_limits = JudgeProcess(limits, isolation), limits
    return _judge


def _sample_processes(isolation: Isolation, zygote: Zygote, judge: int = 0) -> list[int]:
    """The sample's processes (candidate, what it and the tests started; ``judge`` too
    unless given, when it stays for the next sample), never the zygote: in our own PID
    namespace every process but us; otherwise our tree."""
    spared = (1, zygote.pid, judge)
    if isolation.own_pids:
        return [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) not in spared]
    tree, found = _children(), []
    pending = [c for c in tree.get(os.getpid(), []) if c not in spared]
    pending += tree.get(zygote.pid, []) + tree.get(judge, [])
    while pending:
        process = pending.pop()
        found.append(process)
        pending.extend(tree.get(process, []))
    return found


def _sample_cpu(isolation: Isolation, zygote: Zygote, judge: int, since: float) -> float:
    """CPU seconds of the sample: its candidate and whatever it and the tests started, and
    the judge's beyond ``since`` (what it had used when the sample began)."""
    others = sum(cpu_seconds(p) for p in _sample_processes(isolation, zygote, judge))
    return others + cpu_seconds(judge) - since


def _clear_tmp() -> None:
    """Empty the private /tmp, /var/tmp, /dev/shm and /run/lock between jobs: only what is
    on their tmpfs, never into the paths bound back read-only (a project or a virtualenv
    under /tmp: thousands of files that cannot be deleted, tried again after every job).
    Iterative, so a sample's deep tree cannot exhaust the recursion limit."""
    for top in WRITABLE:
        try:
            device = os.stat(top).st_dev
        except OSError:
            continue
        pending, directories = [top], []
        while pending:
            directory = pending.pop()
            with contextlib.suppress(OSError), os.scandir(directory) as entries:
                for entry in entries:
                    try:
                        info = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    if info.st_dev != device:
                        continue  # a mount point: bound back, not the sample's
                    if stat.S_ISDIR(info.st_mode):
                        pending.append(entry.path)
                        directories.append(entry.path)
                    else:
                        with contextlib.suppress(OSError):
                            os.unlink(entry.path)
        for directory in reversed(directories):
            with contextlib.suppress(OSError):
                os.rmdir(directory)  # the way to a bound-back path stays, being in use


def parse_events(data: bytes, limit: int = 10_000) -> list[dict[str, Any]]:
    """The sample's events: one JSON object a line; anything else is ignored."""
    events = []
    for line in data.decode(errors="replace").splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            events.append(event)
            if len(events) >= limit:
                break
    return events


def _finished(buffer: bytearray) -> dict[str, Any] | None:
    """The judge's last event, once it has arrived: the sample is over, whether or not its
    processes have finished exiting."""
    last = bytes(buffer).rstrip(b"\n").rpartition(b"\n")[2]
    if b'"done"' not in last:
        return None
    try:
        event = json.loads(last)
    except ValueError:
        return None
    return event if isinstance(event, dict) and event.get("done") is True else None


_JOBS = itertools.count(1)


def _workdir(isolation: Isolation) -> tuple[str, int]:
    """A fresh working directory for the sample, and its output file there."""
    base = "/tmp" if isolation.fs_private else os.getcwd()
    workdir = os.path.join(base, f"job-{next(_JOBS)}")
    os.makedirs(workdir, exist_ok=True)
    output = os.open(os.path.join(workdir, "output.txt"), os.O_WRONLY | os.O_CREAT, 0o600)
    if ROOT:
        os.chown(workdir, isolation.uid, NOBODY)
        os.fchown(output, isolation.uid, NOBODY)
    return workdir, output


class _Sample:
    """A sample under way: the judge judging it, the judge's CPU time when it began, and its
    limits. The verdict is the CPU time; the wall clock only ends samples that sleep or
    block. Deadlines, not timers: a sample may send the server (its PID 1) signals."""

    def __init__(
        self,
        judge: JudgeProcess,
        limits: dict[str, Any],
        isolation: Isolation,
        zygote: Zygote,
        started: float,
        since: float,
    ):
        self.judge, self.limits = judge, limits
        self.isolation, self.zygote = isolation, zygote
        self.started, self.since = started, since
        self.cpu_limit = float(limits["timeout"])
        self.kill_at = started + 3 * self.cpu_limit + 2
        self.timed_out = False

    def watch(self) -> None:
        """Past a limit: first SIGTERM, on which the judge writes the events it holds;
        SIGKILL when the grace is over."""
        now = time.monotonic()
        over = not self.timed_out and (
            _sample_cpu(self.isolation, self.zygote, self.judge.pid, self.since) > self.cpu_limit
        )
        if over or now >= self.kill_at:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.judge.pid, signal.SIGKILL if self.timed_out else signal.SIGTERM)
            if not self.timed_out:
                self.timed_out, self.kill_at = True, now + GRACE_SECONDS


def run_job(job: dict[str, Any], isolation: Isolation, zygote: Zygote) -> dict[str, Any]:
    """Start the candidate (from the zygote) and hand the sample to the judge, watch their
    CPU time, collect the judge's events; when it returns, none of the sample's processes
    runs any more (``clean_up`` reaps them and empties the temp dirs)."""
    sample = _start(job, isolation, zygote)
    buffer, status, finished = _collect(sample)
    if status is None:  # the pipe closed: the judge is ending, or hiding its end
        status = _judge_status(sample)
    _end_sample(sample, finished)
    return {
        "events": parse_events(bytes(buffer)),
        "timed_out": sample.timed_out,
        "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
        "exit_code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
        "seconds": time.monotonic() - sample.started,
    }


def _start(job: dict[str, Any], isolation: Isolation, zygote: Zygote) -> _Sample:
    """Hand the sample to the judge (a new one if the kept one is gone) and fork its
    candidate from the zygote, the two joined by pipes."""
    global _judge
    limits = job["limits"]
    workdir, output = _workdir(isolation)
    down_r, down_w = os.pipe()  # judge -> candidate
    up_r, up_w = os.pipe()  # candidate -> judge
    code_r, code_w = os.pipe()
    status_r, status_w = os.pipe()
    started = time.monotonic()
    judge = _judge_for(limits, isolation)
    if judge.memory is None:
        judge.memory = _address_space(judge.pid)
    since = cpu_seconds(judge.pid)
    if not judge.send({**job, "workdir": workdir}, [up_r, down_w, code_w, status_r, output]):
        judge.end()  # it ended between samples (a candidate without namespaces can kill it)
        _judge = None
        judge = _judge_for(limits, isolation)
        since = cpu_seconds(judge.pid)
        judge.send({**job, "workdir": workdir}, [up_r, down_w, code_w, status_r, output])
    try:
        zygote.spawn(workdir, limits, [down_r, up_w, code_r, output, status_w])
    except OSError:
        sys.exit(1)  # the zygote is gone (a candidate killed it): pytest starts a new server
    for fd in (down_r, up_w, code_r, status_w, output, up_r, down_w, code_w, status_r):
        os.close(fd)
    return _Sample(judge, limits, isolation, zygote, started, since)


def _collect(sample: _Sample) -> tuple[bytearray, int | None, dict[str, Any] | None]:
    """The judge's events until its last (the judge then waits for its next sample: status
    0), its end (its status) or the pipe's close (None), watching the sample's limits."""
    judge, isolation, zygote = sample.judge, sample.isolation, sample.zygote
    buffer, status, finished = bytearray(), None, None
    next_watch = sample.started + WATCH_SECONDS
    while True:
        if len(buffer) > 4 * 1024 * 1024:  # more events than any harness writes: stop it
            with contextlib.suppress(ProcessLookupError):
                os.kill(judge.pid, signal.SIGKILL)
            return buffer, status, finished
        if _select([judge.events], WATCH_SECONDS, isolation, zygote):
            chunk = os.read(judge.events, 65536)
            if not chunk:
                return buffer, status, finished
            buffer += chunk
            if status is None and chunk.endswith(b"\n"):
                finished = _finished(buffer)
                if finished is not None:
                    return buffer, 0, finished
        if status is None:
            if time.monotonic() >= next_watch:  # not after every event: reading /proc costs
                next_watch = time.monotonic() + WATCH_SECONDS
                sample.watch()
            done, code = os.waitpid(judge.pid, os.WNOHANG)
            if done:  # the judge ended but a descendant may hold the pipe: end them all
                status = code
                _kill_descendants(judge.pid, isolation, zygote)


def _judge_status(sample: _Sample) -> int:
    """The ending judge's wait status, still watching the limits while it takes its time."""
    pause = 0.0005
    while True:
        done, code = os.waitpid(sample.judge.pid, os.WNOHANG)
        if done:
            return code
        sample.watch()
        _select([], pause, sample.isolation, sample.zygote)
        pause = min(2 * pause, WATCH_SECONDS)


def _end_sample(sample: _Sample, finished: dict[str, Any] | None) -> None:
    """Kill the sample's processes. The judge stays for the next sample unless it ended,
    was told its time was up (a SIGTERM must not reach the next sample's judging), asked to
    retire, or kept memory; then it is replaced, ready for the next sample as this one
    found one."""
    global _judge
    judge, isolation, zygote = sample.judge, sample.isolation, sample.zygote
    if (
        finished is not None
        and not sample.timed_out
        and not finished.get("retire")
        and not judge.grown(sample.limits)
    ):
        _kill_descendants(None, isolation, zygote, spare=judge.pid)
    else:
        judge.end(reaped=finished is None)
        _judge = None
        _kill_descendants(judge.pid, isolation, zygote)
        _judge_for(sample.limits, isolation)


def clean_up(isolation: Isolation, zygote: Zygote) -> None:
    """After the answer is sent, while pytest reads it: reap the killed processes (killing
    again whatever a fork racing the first kill left running) and empty what they wrote.
    The zygote reaps the candidate; a server whose zygote died ends (pytest starts anew).
    A judge that ended is replaced now, ready for the next sample."""
    global _judge
    spare = _judge.pid if _judge is not None else 0
    pause = 0.0005
    while True:
        with contextlib.suppress(ChildProcessError):
            while True:
                reaped, _ = os.waitpid(-1, os.WNOHANG)
                if not reaped:
                    break
                if _judge is not None and reaped == spare:  # killed by a candidate
                    _judge.end(reaped=True)  # (only without namespaces)
                    _judge, spare = None, 0
        if not _sample_processes(isolation, zygote, spare):
            break
        _kill_descendants(None, isolation, zygote, spare=spare)
        if _select([zygote.fileno()], pause, isolation, zygote):  # the candidate is reaped
            zygote.reaped()
        pause = min(2 * pause, WATCH_SECONDS)
    if not zygote.alive():
        sys.exit(1)
    if isolation.fs_private:
        _clear_tmp()
    else:
        with os.scandir() as entries:
            for entry in entries:
                if entry.name.startswith("job-"):
                    shutil.rmtree(entry.path, ignore_errors=True)
    if _judge is None and _judge_limits is not None:
        _judge_for(_judge_limits, isolation)


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                state, parent = stat.read().rsplit(b")", 1)[1].split()[:2]
        except (OSError, ValueError, IndexError):
            continue
        if state == b"Z":  # killed, waiting to be reaped: nothing left to kill
            continue
        tree.setdefault(int(parent), []).append(int(entry))
    return tree


def _kill_descendants(
    pid: int | None, isolation: Isolation, zygote: Zygote, spare: int = 0
) -> None:
    """Every process of the sample (``setsid`` or not), never the zygote, nor ``spare``
    (the judge, kept for the next sample). ``pid``: the judge, ended, whose process group
    goes first without namespaces."""
    if pid is not None and not isolation.own_pids:
        with contextlib.suppress(OSError):
            os.killpg(pid, signal.SIGKILL)
    for _ in range(3):  # what a process forked while we listed is found the next time
        found = _sample_processes(isolation, zygote, spare)
        if not found:
            break
        for process in found:
            with contextlib.suppress(OSError):
                os.kill(process, signal.SIGKILL)


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


def _warm_hypothesis(cache: str | None) -> None:
    """Import hypothesis and what it loads lazily, and its character map, which it builds
    once per machine in ``cache`` (a sample cannot write there)."""
    from hypothesis.configuration import set_hypothesis_home_dir

    if cache:
        with contextlib.suppress(OSError):
            os.makedirs(cache, exist_ok=True)
            set_hypothesis_home_dir(cache)
    import hypothesis.strategies  # noqa: F401 - what every property test imports
    from hypothesis.internal.charmap import charmap

    charmap()
    for name in LAZY_HYPOTHESIS:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    if "numpy" in sys.modules:  # then hypothesis seeds numpy's generator on every run
        importlib.import_module("numpy.random")


def stdlib_origins() -> dict[str, str]:
    """Each standard-library module this interpreter can find, and its file. Found on the
    path alone: a meta-path hook (setuptools' for ``distutils``) would import its package."""
    found = {}
    for name in sorted(sys.stdlib_module_names - SIDE_EFFECTS):
        try:
            spec = importlib.machinery.PathFinder.find_spec(name)
        except (ImportError, ValueError):
            continue
        if spec is not None and spec.origin and os.path.isabs(spec.origin):
            found[name] = spec.origin
    return found


def self_check(origins: dict[str, str], isolation: Isolation) -> str | None:
    """In a fork with a sample's privileges: the first standard-library module it could
    not read, with the fix; None when all are readable."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        problem = ""
        try:
            if isolation.mode != "none":
                drop_privileges(ROOT, isolation.uid)
            for name, origin in origins.items():
                try:
                    os.close(os.open(origin, os.O_RDONLY))
                except OSError as exc:
                    problem = f"{name} ({origin}: {exc.strerror})"
                    break
        finally:
            os.write(write, problem.encode())
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as answer:
        problem = answer.read().decode()
    os.waitpid(pid, 0)
    if not problem:
        return None
    return (
        f"a sample cannot import the standard-library module {problem}; make the Python "
        f"installation readable by others (chmod -R o+rX {sys.base_prefix}), or run "
        "pytest as a user who owns it"
    )


def readiness(
    isolation: Isolation, unsafe: bool, check: Callable[[], str | None]
) -> dict[str, Any]:
    """The server's first line: whether it takes jobs. Incomplete isolation refuses them
    unless the user opted in; a failed self-check always does."""
    ready: dict[str, Any] = {"ready": True, "root": ROOT, **isolation.to_json()}
    if not isolation.complete and not unsafe:
        ready["ready"] = False
    else:
        problem = check()
        if problem:
            ready.update(ready=False, error=problem)
    return ready


#: pytest's pidfd (None: not watched).
_parent: int | None = None


def _select(fds: list[int], timeout: float | None, isolation: Isolation, zygote: Zygote) -> bool:
    """select() for reading on ``fds``: whether one is ready. Once pytest has ended, the
    server ends, and the sample with it: with namespaces the kernel ends every process of
    the namespace with its PID 1; without, the server kills them first."""
    watched = fds if _parent is None else [*fds, _parent]
    ready = select.select(watched, [], [], timeout)[0]
    if _parent is not None and _parent in ready:
        if not isolation.own_pids:
            _kill_descendants(None, isolation, zygote)
            with contextlib.suppress(OSError):
                os.kill(zygote.pid, signal.SIGKILL)
        os._exit(1)
    return bool(ready)


def _jobs(isolation: Isolation, zygote: Zygote) -> Iterator[dict[str, Any]]:
    """The jobs on stdin, one JSON line each, until pytest closes it or ends."""
    buffer = bytearray()
    while True:
        while b"\n" in buffer:
            line, _, buffer = buffer.partition(b"\n")
            yield json.loads(line)
        _select([0], None, isolation, zygote)
        chunk = os.read(0, 1 << 16)
        if not chunk:
            return
        buffer += chunk


def main() -> None:
    global _parent
    _parent = watch_parent()
    for module in PRELOAD:
        __import__(module)
    # Before the private /tmp hides anything installed there (a venv under /tmp, say).
    if os.environ.get("PROMPTEVAL_SANDBOX_HYPOTHESIS"):
        _warm_hypothesis(os.environ.get("PROMPTEVAL_SANDBOX_CACHE"))
    origins = stdlib_origins()
    shown, kept = view(json.loads(os.environ.get("PROMPTEVAL_SANDBOX_HIDDEN", "[]")))
    isolation = isolate(ROOT, shown)
    if isolation.mode == "none":
        _libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    else:
        sys.path[:] = kept  # no project folder, nor a path that is not there any more
    # PID 1 of a namespace gets only the signals it handles: Python handles SIGINT
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    set_dumpable(False)  # a sample of the same user can neither ptrace nor read us
    ready = readiness(
        isolation,
        bool(os.environ.get("PROMPTEVAL_SANDBOX_UNSAFE")),
        lambda: self_check(origins, isolation),
    )
    print(json.dumps(ready), flush=True)
    if not ready["ready"]:
        return
    if isolation.fs_private:
        os.chdir("/tmp")
    zygote = Zygote(isolation, ROOT)  # before any job: its memory never holds one
    for job in _jobs(isolation, zygote):
        print(json.dumps(run_job(job, isolation, zygote), default=repr), flush=True)
        clean_up(isolation, zygote)
