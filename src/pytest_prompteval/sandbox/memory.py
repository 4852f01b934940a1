"""A repository sandbox's memory bound (``Bound``): a cgroup of its own where pytest may make
one, else its memory split between a bounded number of processes.

pytest makes the cgroup below its own (``prompteval-<pid>-<random>``): cgroup v2 where
``/sys/fs/cgroup`` is unified (``memory.max``, ``memory.swap.max``, ``pids.max``), else the
v1 ``memory`` and ``pids`` hierarchies (``memory.limit_in_bytes``, ``pids.max``). The
sandbox's server holds its folders open and each command joins it before it drops its
privileges, so every command, and the tmpfs pages it writes, count against one total,
while the server stays out of the kernel's reach when the total is reached. Removed when
the sandbox has ended; one a killed pytest left behind is removed by the next that makes
one. Without write access (an unprivileged user, a container without delegation) ``make``
returns None and each command gets its share of address space, with the calls whose
memory no address space counts refused.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import time

from pytest_prompteval.sandbox.isolation import forbid_unbounded_memory

TYPE_CHECKING = False  # typing for the checker only: the repository sandbox's server imports this
if TYPE_CHECKING:
    from typing import Any

ROOT = "/sys/fs/cgroup"
PREFIX = "prompteval-"
#: A sandbox's memory unless its case says otherwise.
MEMORY_MB = 2048
#: Its processes in its cgroup (``pids.max``).
PROCESSES = 512
#: Its processes without one: each has its share of the memory as address space.
FALLBACK_PROCESSES = 8
#: A process's address space in the cgroup, which counts what it uses, not reserves.
ADDRESS_SPACE = 4 << 30
#: Open files a process may hold: without a cgroup, fewer (each socket may hold 200 KiB
#: of buffers that no address space counts: 113 MiB a process with 1,024).
FILES, FALLBACK_FILES = 1024, 256


def _own(hierarchy: str) -> str | None:
    """This process's cgroup in ``hierarchy`` ("" for v2's), from /proc/self/cgroup."""
    try:
        with open("/proc/self/cgroup") as file:
            for line in file:
                number, controllers, path = line.rstrip("\n").split(":", 2)
                if (hierarchy == "" and number == "0") or hierarchy in controllers.split(","):
                    return path
    except (OSError, ValueError):
        return None
    return None


#: Settings of swap, which a kernel without swap accounting (or swap) lacks.
_SWAP = ("memory.swap.max", "memory.memsw.limit_in_bytes", "memory.swappiness")


def _write(path: str, value: str) -> None:
    with open(path, "w") as file:
        file.write(value)


def _layout(name: str, memory: int, pids: int) -> list[tuple[str, dict[str, str]]] | None:
    """(folder to make, settings to write) for each hierarchy, or None where none fits."""
    if os.path.exists(f"{ROOT}/cgroup.controllers"):  # v2, unified
        own = _own("")
        if own is None:
            return None
        parent = os.path.normpath(f"{ROOT}/{own}")
        with contextlib.suppress(OSError):  # where the parent may hand them down
            _write(f"{parent}/cgroup.subtree_control", "+memory +pids")
        settings = {"memory.max": str(memory), "memory.swap.max": "0", "pids.max": str(pids)}
        return [(f"{parent}/{name}", settings)]
    memory_own, pids_own = _own("memory"), _own("pids")
    if memory_own is None or not os.path.isdir(f"{ROOT}/memory{memory_own}"):
        return None
    layout = [
        (
            os.path.normpath(f"{ROOT}/memory/{memory_own}/{name}"),
            {
                "memory.limit_in_bytes": str(memory),
                "memory.memsw.limit_in_bytes": str(memory),  # where swap is accounted
                "memory.swappiness": "0",  # where it is not, the pages stay in the bound
            },
        )
    ]
    if pids_own is not None and os.path.isdir(f"{ROOT}/pids{pids_own}"):
        layout.append((os.path.normpath(f"{ROOT}/pids/{pids_own}/{name}"), {"pids.max": str(pids)}))
    return layout


def _sweep(folder: str) -> None:
    """Remove what a killed pytest left beside ``folder``: empty, its pid gone."""
    parent = os.path.dirname(folder)
    with contextlib.suppress(OSError):
        for entry in os.listdir(parent):
            pid = entry[len(PREFIX) :].partition("-")[0]
            if entry.startswith(PREFIX) and pid.isdigit() and not _alive(int(pid)):
                with contextlib.suppress(OSError):
                    os.rmdir(f"{parent}/{entry}")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


class Cgroup:
    """One sandbox's cgroup: its folders (one per hierarchy; the first holds the memory
    controller) and its bound in bytes."""

    def __init__(self, folders: tuple[str, ...], memory: int) -> None:
        self.folders = folders
        self.memory = memory

    @classmethod
    def make(cls, memory: int, pids: int) -> Cgroup | None:
        """A new cgroup bounding ``memory`` bytes and ``pids`` processes; None where this
        process may not make one."""
        name = f"{PREFIX}{os.getpid()}-{os.urandom(4).hex()}"
        try:
            layout = _layout(name, memory, pids)
        except OSError:
            return None
        if layout is None:
            return None
        made: list[str] = []
        try:
            for folder, settings in layout:
                _sweep(folder)
                os.mkdir(folder, 0o755)
                made.append(folder)
                for setting, value in settings.items():
                    if setting in _SWAP and not os.path.exists(f"{folder}/{setting}"):
                        continue  # a kernel without swap accounting
                    _write(f"{folder}/{setting}", value)
        except OSError:
            for folder in reversed(made):
                with contextlib.suppress(OSError):
                    os.rmdir(folder)
            return None
        return cls(tuple(made), memory)

    def to_json(self) -> dict[str, Any]:
        return {"folders": list(self.folders), "memory": self.memory}

    def remove(self, attempts: int = 200) -> None:
        """Kill what is left in it and remove it: once its processes have exited (a dying
        namespace takes a moment), the folders go; one still busy is left to the sweep."""
        for folder in self.folders:
            if os.path.exists(f"{folder}/cgroup.kill"):
                with contextlib.suppress(OSError):
                    _write(f"{folder}/cgroup.kill", "1")
            else:
                for pid in _members(folder):
                    with contextlib.suppress(OSError):
                        os.kill(pid, signal.SIGKILL)
            for attempt in range(attempts):
                try:
                    os.rmdir(folder)
                    break
                except FileNotFoundError:
                    break
                except OSError:  # most are gone within a few ms: look again soon at first
                    time.sleep(min(0.01, 0.001 * 2**attempt))


def _members(folder: str) -> list[int]:
    try:
        with open(f"{folder}/cgroup.procs") as file:
            return [int(line) for line in file if line.strip().isdigit()]
    except OSError:
        return []


def hold(folders: list[str]) -> tuple[int, ...] | None:
    """In the sandbox's server, before its root is the sandbox's: descriptors of the
    cgroup's folders (the memory one first), or None where it cannot join them. The server
    stays out: the kernel, past the bound, then kills one of the commands, never it."""
    held: list[int] = []
    try:
        for folder in folders:
            held.append(os.open(folder, os.O_RDONLY | os.O_DIRECTORY))
            if not os.access(f"{folder}/cgroup.procs", os.W_OK):
                raise PermissionError(folder)
    except OSError:
        for fd in held:
            os.close(fd)
        return None
    return tuple(held) or None


def enter(folders: tuple[int, ...]) -> None:
    """In a command's process (a fresh fork: one thread), before it drops privileges: join
    the cgroup. In v1 through ``tasks``: this thread, so the whole process, without the
    lock on every process of the system that ``cgroup.procs`` takes for an RCU grace
    period (5 to 20 ms of a command's start, of a sandbox's first command at least)."""
    for folder in folders:
        try:
            _join(folder, "tasks")
        except OSError:  # v2 (no ``tasks``: a process joins whole), or not delegated
            _join(folder, "cgroup.procs")


def _join(folder: int, name: str) -> None:
    fd = os.open(name, os.O_WRONLY, dir_fd=folder)
    try:
        os.write(fd, b"0")
    finally:
        os.close(fd)


def oom_kills(folder: int) -> int:
    """How many processes the kernel has killed in the cgroup for want of memory."""
    for name in ("memory.events", "memory.oom_control"):
        try:
            fd = os.open(name, os.O_RDONLY, dir_fd=folder)
        except OSError:
            continue
        try:
            text = os.read(fd, 4096).decode()
        finally:
            os.close(fd)
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill" and value.strip().isdigit():
                return int(value)
    return 0


#: What a process that ran out of address space writes (no cgroup: nothing counts them).
_OUT_OF_MEMORY = ("MemoryError", "Cannot allocate memory", "bad_alloc", "out of memory")


class Bound:
    """The sandbox's memory, shared by all its processes: in its cgroup (``cgroup``, its
    folders' descriptors, the memory one first) up to ``PROCESSES``; without one, split
    between at most ``FALLBACK_PROCESSES``, each bounded to its share of address space (as
    a code sample's memory is split). Its private tmpfs folders count in the cgroup, and
    are bounded in size either way (``isolation``)."""

    def __init__(self, memory: int = MEMORY_MB << 20, cgroup: tuple[int, ...] | None = None):
        self.memory = memory
        self.cgroup = cgroup

    @property
    def processes(self) -> int:
        return PROCESSES if self.cgroup is not None else FALLBACK_PROCESSES

    def limits(self) -> tuple[tuple[int, int], ...]:
        if self.cgroup is not None:  # the cgroup counts memory: address space may reserve
            share, files = max(self.memory, ADDRESS_SPACE), FILES
        else:
            share, files = self.memory // self.processes, FALLBACK_FILES
        return (
            (resource.RLIMIT_AS, share),
            (resource.RLIMIT_NPROC, self.processes),
            (resource.RLIMIT_NOFILE, files),
        )

    def kills(self) -> int:
        return oom_kills(self.cgroup[0]) if self.cgroup is not None else 0

    def enter(self) -> None:
        """In a command's process, with privileges still: its bound beyond rlimits."""
        if self.cgroup is not None:
            enter(self.cgroup)
        else:
            forbid_unbounded_memory()

    def note(self, kills: int, output: str) -> str:
        """What a command's result adds when it ran out of memory (``kills``: the count
        before it ran)."""
        whole = f"the sandbox's {self.memory >> 20:,} MiB"
        if self.cgroup is not None:
            if self.kills() > kills:
                return f"\n[out of memory: {whole}, shared by its processes; one was killed]"
            return ""
        if any(sign in output for sign in _OUT_OF_MEMORY):
            share = self.memory // self.processes >> 20
            return (
                f"\n[out of memory? {whole} are split between at most {self.processes} "
                f"processes: {share:,} MiB of address space each]"
            )
        return ""
