"""Where sandboxes run: the one seam between what runs code or repositories (the code
runner, the agent's tools, the repository verdict) and how a sandbox is made.

A ``SandboxProvider`` starts the two kinds of sandbox: a code sandbox (a warm server that
runs samples one after another, in the order sent, each within its ``Limits``) and a
repository sandbox (commands, the client tools and the verdict's reads over a private copy
of a snapshot, within its memory and each command's timeout). It copies a snapshot in,
and declares how many sandboxes may run at once and how many it may make a second.
``NamespaceSandboxes`` is the one there is: namespaces, seccomp and a cgroup on this
machine (``isolation.py``). A provider elsewhere (a Kubernetes sandbox, Modal, E2B) is one
module implementing this protocol: it runs ``server.py`` and ``workspace_server.py``
there, which speak the same JSON lines.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from pytest_prompteval.sandbox.client import Limits, SampleReport, Sandbox
from pytest_prompteval.sandbox.environments import Environment
from pytest_prompteval.sandbox.restore import MAX_ENTRIES
from pytest_prompteval.sandbox.workspace import Copy, Snapshot, Workspace


class CodeSandbox(Protocol):
    """One warm server running code samples, one at a time, answered in the order sent;
    ``send`` and ``receive`` are for the one thread that owns it."""

    def start(self, hypothesis: bool = False) -> None:
        """Start it before its first sample (``hypothesis``: with hypothesis loaded)."""

    def ready_for(self, hypothesis: bool) -> bool:
        """Whether a sample can be sent behind those outstanding."""

    def send(self, job: dict[str, Any], limits: Limits, hypothesis: bool = False) -> None:
        """Queue a sample behind those sent; it runs within ``limits``."""

    @property
    def outstanding(self) -> int:
        """Samples sent and not yet received (0 once a lost server took them with it)."""

    def receive(self) -> SampleReport:
        """The oldest outstanding sample's report."""

    def close(self) -> None:
        """End it and everything it started."""


class RepoSandbox(Protocol):
    """A sandbox over a repository's copy, shown to its commands as ``/repo``. Jobs run one
    at a time, each within its timeout and all within the memory it was started with."""

    #: the copy it works on, as the host reads it (an install's products, collected ids):
    #: what its commands changed is there when their answer comes
    copy: Path

    def run(self, script: str, timeout: float) -> dict[str, Any]:
        """A shell script: its ``status`` (None: timed out) and ``output``."""

    def bash(self, command: str, timeout: float) -> dict[str, Any]:
        """The bash tool's command, in the shell it keeps between commands."""

    def restart(self, timeout: float) -> dict[str, Any]:
        """The bash tool's restart: a fresh shell."""

    def edit(
        self, command: Mapping[str, Any], timeout: float, max_characters: int | None = None
    ) -> dict[str, Any]:
        """The text editor tool's command."""

    def diff(self, timeout: float = 60.0, exclude: Collection[str] = ()) -> str:
        """The diff of its base snapshot to the copy, ``exclude`` left out."""

    def read(self, path: str, limit: int, timeout: float = 60.0) -> dict[str, Any]:
        """At most ``limit`` bytes of a file of its /tmp (copied out)."""

    def check_files(
        self, checks: Sequence[Mapping[str, Any]], timeout: float = 60.0
    ) -> list[dict[str, Any]]:
        """The file-state checks on the copy as it is."""

    def restore(
        self,
        named: Sequence[str],
        folders: Sequence[str],
        allowed: Sequence[str],
        timeout: float = 60.0,
        limit: int = MAX_ENTRIES,
    ) -> list[str]:
        """The test files and infrastructure put back from the base."""

    def close(self) -> None:
        """End it and every process it started; the copy stays."""

    def __enter__(self) -> RepoSandbox: ...

    def __exit__(self, *_: object) -> None: ...


class SandboxProvider(Protocol):
    """Makes sandboxes: how many at once, how fast, and each kind."""

    @property
    def concurrency(self) -> int:
        """The most code sandboxes it runs at once (the code runner's pool has as many)."""

    @property
    def creation_rate(self) -> float | None:
        """The most sandboxes it makes a second (None: as fast as they start)."""

    def code_sandbox(self, hidden: Sequence[str | os.PathLike[str]] = ()) -> CodeSandbox:
        """A code sandbox, started by its first sample (or ``start``); ``hidden``: folders
        no sample may see."""

    def copy_in(self, snapshot: Snapshot) -> Copy:
        """A private copy of ``snapshot`` for one item (the snapshot is only read)."""

    def repo_sandbox(
        self,
        copy: Path,
        base: Path | None = None,
        hidden: Sequence[str | os.PathLike[str]] = (),
        memory_mb: int | None = None,
        environment: Environment | None = None,
    ) -> RepoSandbox:
        """A repository sandbox over ``copy``, started: ``base`` shown read-only for the
        diff, ``hidden`` never shown, ``environment`` what its commands run with. It may be
        started while another sandbox still works in ``copy`` (the verdict's, during the
        agent's turns): its first job sees the copy as that one left it."""


class NamespaceSandboxes:
    """Sandboxes on this machine: Linux namespaces, seccomp and a cgroup (``unsafe``: none,
    when the user accepts running generated code without isolation)."""

    def __init__(self, unsafe: bool = False, concurrency: int | None = None) -> None:
        self.unsafe = unsafe
        self.concurrency = max(1, concurrency or default_concurrency())
        #: a fork on this machine needs no pacing
        self.creation_rate: float | None = None

    def code_sandbox(self, hidden: Sequence[str | os.PathLike[str]] = ()) -> CodeSandbox:
        return Sandbox(self.unsafe, hidden)

    def copy_in(self, snapshot: Snapshot) -> Copy:
        return Copy(snapshot)

    def repo_sandbox(
        self,
        copy: Path,
        base: Path | None = None,
        hidden: Sequence[str | os.PathLike[str]] = (),
        memory_mb: int | None = None,
        environment: Environment | None = None,
    ) -> RepoSandbox:
        return Workspace(copy, base, hidden, memory_mb, environment=environment)


def default_concurrency() -> int:
    """Two servers per CPU: a sample's processes wait on one another (a pipe round trip per
    call), so one server per CPU left the CPUs idle part of the time."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return 2 * cpus


class Pacing:
    """Spaces the making of sandboxes to a provider's ``creation_rate``: each ``wait``
    returns at least 1/rate seconds after the one before (at once with no rate)."""

    def __init__(
        self,
        rate: float | None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.gap = 1.0 / rate if rate else 0.0
        self.clock, self.sleep = clock, sleep
        self._next: float | None = None
        self._lock = threading.Lock()

    def wait(self) -> None:
        if not self.gap:
            return
        with self._lock:  # each caller takes the next slot, then waits for it alone
            now = self.clock()
            slot = now if self._next is None else max(now, self._next)
            self._next = slot + self.gap
        if slot > now:
            self.sleep(slot - now)


class Early:
    """A repository sandbox made on a thread of its own while the caller goes on (the
    verdict's, during the agent's turns, so that its start costs no time of the item's):
    ``take`` waits for it and raises what making it raised; ``discard`` closes one never
    taken."""

    def __init__(self, make: Callable[[], RepoSandbox]) -> None:
        self._made: RepoSandbox | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._make, args=(make,), daemon=True)
        self._thread.start()

    def _make(self, make: Callable[[], RepoSandbox]) -> None:
        try:
            self._made = make()
        except BaseException as exc:  # raised where it is taken, as if made there
            self._error = exc

    def take(self) -> RepoSandbox:
        self._thread.join()
        if self._error is not None:
            raise self._error
        made, self._made = self._made, None
        assert made is not None
        return made

    def discard(self) -> None:
        self._thread.join()
        if self._made is not None:
            self._made.close()
            self._made = None
