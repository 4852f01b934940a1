"""The zygote: a process the sandbox server forks once, before it reads any job, and from
which every candidate's process is forked.

A process forked from the judge would carry the judge's memory: the job, with the tests'
source and expected values, and (in freed memory) earlier samples' code. A candidate could
read them and answer the inputs it finds. The zygote's memory holds none of it: it gets,
per sample, only the limits, a working directory and the ends of the candidate's pipes (as
file descriptors over a Unix socket); the candidate reads its own code from one of them.
The zygote reaps the candidate and tells the judge how it ended, and the server that it
is gone. With namespaces, each
candidate is PID 1 of a PID namespace of its own: it cannot signal the zygote, the judge or
the server, and all it started ends with it.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import resource
import socket
import sys
from typing import Any

from pytest_prompteval.sandbox import harness
from pytest_prompteval.sandbox.isolation import (
    Isolation,
    drop_privileges,
    fork_own_pids,
    set_dumpable,
)
from pytest_prompteval.sandbox.remote import Channel

#: The largest candidate code read from its pipe.
MAX_CODE = 8 << 20
PAGE = os.sysconf("SC_PAGE_SIZE")


def _vm_size() -> int:
    """This process's address space in bytes: statm's first field, read with a few plain
    calls (a candidate pays for every page its reading touches, each a copy on write)."""
    fd = os.open("/proc/self/statm", os.O_RDONLY)
    try:
        return int(os.read(fd, 128).split()[0]) * PAGE
    finally:
        os.close(fd)


def _processes_of(uid: int) -> int:
    count = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                count += os.stat(f"/proc/{entry}").st_uid == uid
    return count


def bound(limits: dict[str, Any], isolation: Isolation, root: bool, reusable: bool = False) -> None:
    """What bounds a sample's process, judge or candidate: limits, then privileges. The
    memory is the sample's, however many processes it forks: each of its at most
    ``processes`` gets an equal share (beyond what it starts with, shared with the server).
    ``reusable``: the judge, which serves sample after sample: its CPU time and memory are
    set again for each (``rebound``), below ceilings it cannot raise."""
    share = limits["memory_mb"] * 1024 * 1024 // limits["processes"]
    memory, cpu = _vm_size() + share, math.ceil(limits["timeout"]) + 1
    processes = limits["processes"]
    if isolation.mode == "none" and not root:
        # no user of its own: the limit counts every process of the user running pytest
        processes += _processes_of(os.getuid())
        hard = resource.getrlimit(resource.RLIMIT_NPROC)[1]
        if hard != resource.RLIM_INFINITY:
            processes = min(processes, hard)
    for name, value, ceiling in (
        # backstop to the server's CPU watch, which bounds each sample
        ("RLIMIT_CPU", cpu, resource.RLIM_INFINITY if reusable else cpu),
        ("RLIMIT_AS", memory, memory + limits["memory_mb"] * 1024 * 1024 if reusable else memory),
        ("RLIMIT_FSIZE", limits["output_bytes"], limits["output_bytes"]),
        ("RLIMIT_NPROC", processes, processes),
        ("RLIMIT_NOFILE", 256, 256),
        ("RLIMIT_CORE", 0, 0),
    ):
        kind = getattr(resource, name)
        inherited = resource.getrlimit(kind)[1]  # a user namespace cannot raise it
        if inherited != resource.RLIM_INFINITY and reusable:
            ceiling = inherited if ceiling == resource.RLIM_INFINITY else min(ceiling, inherited)
        resource.setrlimit(kind, (value, ceiling))
    if isolation.mode != "none":
        drop_privileges(root, isolation.uid)
    sys.setrecursionlimit(3000)


def rebound(limits: dict[str, Any]) -> None:
    """A reused judge's limits for its next sample: that sample's CPU time on top of what
    it used, and a share of memory on top of what it holds (never above its ceilings)."""
    used = resource.getrusage(resource.RUSAGE_SELF)
    cpu = math.ceil(used.ru_utime + used.ru_stime + limits["timeout"]) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, resource.getrlimit(resource.RLIMIT_CPU)[1]))
    ceiling = resource.getrlimit(resource.RLIMIT_AS)[1]
    share = limits["memory_mb"] * 1024 * 1024 // limits["processes"]
    resource.setrlimit(resource.RLIMIT_AS, (min(ceiling, _vm_size() + share), ceiling))


def move_fds(fds: list[int]) -> list[int]:
    """``fds`` renumbered from 3 on, every other descriptor above 2 closed."""
    high = [os.dup(fd) for fd in fds]  # above every original: no clash while moving
    for fd in fds:
        os.close(fd)
    for target, fd in enumerate(high, start=3):
        os.dup2(fd, target)
    os.closerange(3 + len(fds), resource.getrlimit(resource.RLIMIT_NOFILE)[0])
    return list(range(3, 3 + len(fds)))


def _candidate(request: dict[str, Any], fds: list[int], isolation: Isolation, root: bool) -> None:
    """The forked candidate: its working directory, output and limits; then its code."""
    try:
        read, write, code, output = fds
        os.setsid()
        os.chdir(request["workdir"])
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(output, 1)
        os.dup2(output, 2)
        read, write, code = move_fds([read, write, code])
        bound(request["limits"], isolation, root)
        source = bytearray()
        while len(source) <= MAX_CODE:
            chunk = os.read(code, 1 << 16)
            if not chunk:
                break
            source += chunk
        os.close(code)
        # what is not UTF-8 stays (as lone surrogates) for the compiler to refuse
        text = source.decode(errors="surrogateescape")
        harness.candidate(text, Channel(read, write, peer="the judge"))
    finally:
        os._exit(0)


def _serve(sock: socket.socket, isolation: Isolation, root: bool) -> None:
    """The zygote's loop: one candidate per request, reaped, its end told to the judge."""
    set_dumpable(False)  # a candidate of the same user can neither ptrace nor read it
    while True:
        try:
            data, fds, _, _ = socket.recv_fds(sock, 1 << 16, 5)
        except OSError:
            return
        if not data or len(fds) != 5:
            return
        request = json.loads(data)
        *mine, status = fds
        pid = fork_own_pids() if isolation.own_pids else os.fork()
        if pid == 0:
            sock.close()
            os.close(status)
            _candidate(request, mine, isolation, root)
        for fd in mine:
            os.close(fd)
        with contextlib.suppress(OSError):
            os.write(status, f"{pid}\n".encode())
        _, ended = os.waitpid(pid, 0)
        with contextlib.suppress(OSError):
            os.write(status, f"{ended}\n".encode())
        os.close(status)
        with contextlib.suppress(OSError):
            sock.send(b".")  # the server waits for it to clean up after the sample


class Zygote:
    """The server's handle on its zygote."""

    def __init__(self, isolation: Isolation, root: bool):
        self._sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.pid = os.fork()
        if self.pid == 0:
            try:
                self._sock.close()
                # the server's jobs arrive on 0: never read here (and 0 stays taken, so
                # that no descriptor received later lands there)
                os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
                _serve(theirs, isolation, root)
            finally:
                os._exit(0)
        theirs.close()

    def spawn(self, workdir: str, limits: dict[str, Any], fds: list[int]) -> None:
        """Fork a candidate with ``fds``: its channel's read and write ends, the code's read
        end, its output file and the judge's status pipe (write end)."""
        request = json.dumps({"workdir": workdir, "limits": limits}).encode()
        socket.send_fds(self._sock, [request], fds)

    def fileno(self) -> int:
        """Readable when the zygote has reaped a candidate (``reaped`` takes the word)."""
        return self._sock.fileno()

    def reaped(self) -> None:
        with contextlib.suppress(BlockingIOError):
            self._sock.recv(1 << 10, socket.MSG_DONTWAIT)

    def alive(self) -> bool:
        try:
            done, _ = os.waitpid(self.pid, os.WNOHANG)
        except ChildProcessError:
            return False
        return done == 0
