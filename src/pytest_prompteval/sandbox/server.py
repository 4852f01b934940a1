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
import site
import stat
import sys
import sysconfig
import time
from collections.abc import Callable, Iterator
from typing import Any

from pytest_prompteval.sandbox import harness
from pytest_prompteval.sandbox.harness import SIDE_EFFECTS, cpu_seconds
from pytest_prompteval.sandbox.isolation import (
    NOBODY,
    SYSTEM,
    WRITABLE,
    Isolation,
    View,
    drop_privileges,
    isolate,
    set_dumpable,
    within,
)
from pytest_prompteval.sandbox.zygote import Zygote, bound, move_fds

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


def _sample(
    job: dict[str, Any],
    events_fd: int,
    workdir: str,
    output: int,
    pipes: list[int],
    isolation: Isolation,
) -> None:
    """The forked judge: limits, privileges dropped, then the harness. Never returns."""
    try:
        os.setsid()
        os.chdir(workdir)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(output, 1)
        os.dup2(output, 2)
        events_fd, *moved = move_fds([events_fd, *pipes])
        bound(job["limits"], isolation, ROOT)
        set_dumpable(False)  # after the uid change: the candidate cannot reach the judge
        with os.fdopen(events_fd, "w") as events:
            harness.run(job, events, harness.Pipes(*moved))
    finally:
        os._exit(0)


def _sample_processes(isolation: Isolation, zygote: Zygote) -> list[int]:
    """The sample's processes (judge, candidate, what they started), never the zygote: in
    our own PID namespace every process but us; otherwise our tree."""
    if isolation.own_pids:
        return [
            int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) not in (1, zygote.pid)
        ]
    tree, found = _children(), []
    pending = [c for c in tree.get(os.getpid(), []) if c != zygote.pid]
    pending += tree.get(zygote.pid, [])
    while pending:
        process = pending.pop()
        found.append(process)
        pending.extend(tree.get(process, []))
    return found


def _sample_cpu(isolation: Isolation, zygote: Zygote) -> float:
    """CPU seconds of the sample's judge, its candidate and whatever they started."""
    return sum(cpu_seconds(p) for p in _sample_processes(isolation, zygote))


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


def _finished(buffer: bytearray) -> bool:
    """The judge's last event has arrived: the sample is over, whether or not its
    processes have finished exiting."""
    last = bytes(buffer).rstrip(b"\n").rpartition(b"\n")[2]
    if b'"done"' not in last:
        return False
    try:
        return json.loads(last).get("done") is True
    except (ValueError, AttributeError):
        return False


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


def run_job(job: dict[str, Any], isolation: Isolation, zygote: Zygote) -> dict[str, Any]:
    """Start the candidate (from the zygote) and fork the judge, watch their CPU time,
    collect the judge's events; when it returns, none of the sample's processes runs any
    more (``clean_up`` reaps them and empties the temp dirs)."""
    cpu_limit = float(job["limits"]["timeout"])
    workdir, output = _workdir(isolation)
    down_r, down_w = os.pipe()  # judge -> candidate
    up_r, up_w = os.pipe()  # candidate -> judge
    code_r, code_w = os.pipe()
    status_r, status_w = os.pipe()
    started = time.monotonic()
    theirs = [down_r, up_w, code_r, output, status_w]
    try:
        zygote.spawn(workdir, job["limits"], theirs)
    except OSError:
        sys.exit(1)  # the zygote is gone (a candidate killed it): pytest starts a new server
    for fd in (down_r, up_w, code_r, status_w):
        os.close(fd)
    events_r, events_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(events_r)
        _sample(job, events_w, workdir, output, [up_r, down_w, code_w, status_r], isolation)
    for fd in (events_w, output, up_r, down_w, code_w, status_r):
        os.close(fd)
    timed_out = False
    # The verdict is the CPU time; the wall clock only ends samples that sleep or block.
    # Deadlines, not timers: a sample may send the server (its PID 1) signals.
    kill_at = started + 3 * cpu_limit + 2

    def watch() -> None:
        """Past a limit: first SIGTERM, on which the judge writes the events it holds;
        SIGKILL when the grace is over."""
        nonlocal timed_out, kill_at
        now = time.monotonic()
        over = not timed_out and _sample_cpu(isolation, zygote) > cpu_limit
        if over or now >= kill_at:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL if timed_out else signal.SIGTERM)
            if not timed_out:
                timed_out, kill_at = True, now + GRACE_SECONDS

    buffer, status, next_watch = bytearray(), None, started + WATCH_SECONDS
    while True:
        if len(buffer) > 4 * 1024 * 1024:  # more events than any harness writes: stop it
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            break
        if _select([events_r], WATCH_SECONDS, isolation, zygote):
            chunk = os.read(events_r, 65536)
            if not chunk:
                break
            buffer += chunk
            if status is None and chunk.endswith(b"\n") and _finished(buffer):
                status = 0  # exiting takes the judge and the candidate a while: not ours
                break
        if status is None:
            if time.monotonic() >= next_watch:  # not after every event: reading /proc costs
                next_watch = time.monotonic() + WATCH_SECONDS
                watch()
            done, code = os.waitpid(pid, os.WNOHANG)
            if done:  # the sample ended but a descendant may hold the pipe: end them all
                status = code
                _kill_descendants(pid, isolation, zygote)
    os.close(events_r)
    pause = 0.0005
    while status is None:  # the pipe closed: the judge is ending, or hiding its end
        done, code = os.waitpid(pid, os.WNOHANG)
        if done:
            status = code
        else:
            watch()
            _select([], pause, isolation, zygote)
            pause = min(2 * pause, WATCH_SECONDS)
    _kill_descendants(pid, isolation, zygote)
    return {
        "events": parse_events(bytes(buffer)),
        "timed_out": timed_out,
        "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
        "exit_code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
        "seconds": time.monotonic() - started,
    }


def clean_up(isolation: Isolation, zygote: Zygote) -> None:
    """After the answer is sent, while pytest reads it: reap the killed processes (killing
    again whatever a fork racing the first kill left running) and empty what they wrote.
    The zygote reaps the candidate; a server whose zygote died ends (pytest starts anew)."""
    pause = 0.0005
    while True:
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        if not _sample_processes(isolation, zygote):
            break
        _kill_descendants(None, isolation, zygote)
        _select([], pause, isolation, zygote)
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


def _kill_descendants(pid: int | None, isolation: Isolation, zygote: Zygote) -> None:
    """Every process of the sample (``setsid`` or not), never the zygote. ``pid``: the
    judge, whose process group goes first without namespaces."""
    if pid is not None and not isolation.own_pids:
        with contextlib.suppress(OSError):
            os.killpg(pid, signal.SIGKILL)
    for _ in range(3):  # what a process forked while we listed is found the next time
        found = _sample_processes(isolation, zygote)
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


#: Folders of installed packages: what a sample may import beyond the standard library.
SITE_DIRS = ("site-packages", "dist-packages")


def _installed(entry: str, interpreter: list[str], hidden: list[str]) -> bool:
    """Whether an import-path entry is the interpreter's or installed packages, not a
    project's folder (pytest puts the rootdir there): one in a hidden folder only as a
    site-packages of an environment there (``.venv``)."""
    real = os.path.realpath(entry)
    if os.path.basename(real) in SITE_DIRS:
        return not any(within(h, real) for h in hidden)
    return not any(within(real, h) or within(h, real) for h in hidden) and any(
        within(real, top) for top in interpreter
    )


def view(hidden: list[str]) -> tuple[View, list[str]]:
    """What a sample sees, and the import path it keeps: the system, the interpreter and
    its packages; ``hidden`` (the project's folders, from the client) and every other
    entry of the import path covered where something shown holds them."""
    paths = sysconfig.get_paths()
    interpreter = [
        os.path.realpath(p)
        for p in (
            sys.prefix,
            sys.base_prefix,
            sys.exec_prefix,
            sys.base_exec_prefix,
            paths["stdlib"],
            paths["platstdlib"],
            *site.getsitepackages(),
        )
    ]
    hidden = [os.path.realpath(h) for h in hidden]
    kept = [p for p in sys.path if p and os.path.exists(p) and _installed(p, interpreter, hidden)]
    dropped = [p for p in sys.path if p and os.path.isdir(p) and p not in kept]
    shown = [p for p in (*SYSTEM, *interpreter, *kept) if os.path.exists(p)]
    return View(
        shown=tuple(shown),
        hidden=tuple(hidden + dropped),
        links=(*SYSTEM, *WRITABLE, *shown, sys.executable),
    ), kept


def watch_parent() -> int | None:
    """A pidfd on pytest, which every wait of the server watches, so that neither the
    server nor a sample outlives the pytest that asked for them (killed or not)."""
    parent = os.getppid()
    try:
        handle = os.pidfd_open(parent)
    except (AttributeError, OSError):  # before Linux 5.3: stdin's end still ends it idle
        return None
    if os.getppid() != parent:  # pytest ended before the pidfd was taken
        os._exit(1)
    return handle


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
