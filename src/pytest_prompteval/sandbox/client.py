"""The pytest side of the sandbox: starts the fork server, sends jobs, reads outcomes."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import IO, Any

from pytest_prompteval.core.errors import PromptevalError
from pytest_prompteval.core.paths import user_cache_dir
from pytest_prompteval.sandbox.isolation import set_dumpable

#: Variables a sample may see; everything else (API keys above all) stays out.
SAFE_ENV = ("PATH", "LANG", "LC_ALL", "TZ")


def _run_seed() -> int:
    """The judges' random seed: one for the run, on every server and xdist worker (their
    run's id), and unknown to the candidates, which never see a job or this process."""
    shared = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    digest = hashlib.sha256(shared.encode() if shared else os.urandom(32)).digest()
    return int.from_bytes(digest[:8], "big")


SEED = _run_seed()


@dataclass(frozen=True)
class Limits:
    timeout: float = 3.0
    memory_mb: int = 512  # the sample's, shared by its processes
    output_bytes: int = 1 << 20
    processes: int = 8  # counting the judge and the candidate


@dataclass
class SampleReport:
    """What one sample did: the harness's events and how its process ended."""

    events: list[dict[str, Any]] = field(default_factory=list)
    timed_out: bool = False
    signal: int | None = None
    exit_code: int | None = None
    seconds: float = 0.0
    crashed: str | None = None

    @property
    def cpu(self) -> float | None:
        """CPU seconds the tests took, from the harness's last event."""
        done = self.done
        return float(done["cpu"]) if done and isinstance(done.get("cpu"), int | float) else None

    def phase(self, name: str) -> dict[str, Any] | None:
        return next((e for e in self.events if e.get("phase") == name), None)

    @property
    def tests(self) -> dict[int, dict[str, Any]]:
        """Test events by index; the first for an index counts."""
        found: dict[int, dict[str, Any]] = {}
        for event in self.events:
            index = event.get("test")
            if isinstance(index, int) and not isinstance(index, bool):
                found.setdefault(index, event)
        return found

    @property
    def property_check(self) -> dict[str, Any] | None:
        return next((e for e in self.events if e.get("property")), None)

    @property
    def done(self) -> dict[str, Any] | None:
        return next((e for e in self.events if e.get("done")), None)


UNSAFE_HINT = (
    "run as root, or where unprivileged user namespaces are allowed, or accept running "
    "generated code without isolation: --prompteval-unsafe-sandbox on the command line "
    "(refused from ini files)"
)


class SandboxUnavailable(PromptevalError):
    """The sandbox cannot run samples safely here; the message says why and what to do."""


#: The longest answer a server may send: far above any a sandbox sends (a repository's
#: diff, its largest, is about 6 MiB of JSON), far below what would strain pytest.
MAX_LINE = 64 << 20


class LineTooLong(PromptevalError):
    """A server sent a line longer than its reader takes; what it sent is dropped."""


class LineReader:
    """A server's answers, a line each, read from the descriptor into our own buffer, which
    may already hold the next line (a buffered ``readline`` would hide it from ``select``).
    A line is at most ``limit`` bytes: past it, ``next`` raises ``LineTooLong`` (the
    server is then out of step: its caller ends it) rather than hold what the server sends.
    """

    def __init__(self, limit: int = MAX_LINE) -> None:
        self.limit = limit
        self._buffer = bytearray()

    def next(self, stream: IO[Any], timeout: float) -> str | None:
        """The next line, None when none comes in ``timeout`` or the server ended."""
        deadline = time.monotonic() + timeout
        end = self._buffer.find(b"\n")
        while end < 0:
            if len(self._buffer) > self.limit:
                break
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([stream], [], [], left)[0]:
                return None
            chunk = os.read(stream.fileno(), min(1 << 20, self.limit + 1 - len(self._buffer)))
            if not chunk:
                return None
            end = chunk.find(b"\n")
            if end >= 0:
                end += len(self._buffer)  # only the new bytes are searched
            self._buffer += chunk
        if end < 0 or end > self.limit:
            self._buffer.clear()
            raise LineTooLong(f"the sandbox sent an answer of more than {self.limit:,} bytes")
        line = bytes(self._buffer[:end])
        del self._buffer[: end + 1]
        return line.decode(errors="replace")

    def clear(self) -> None:
        self._buffer.clear()


def cache_dir() -> str:
    """Per-machine cache (hypothesis' character map), shared by workers and shards."""
    return str(user_cache_dir() / "sandbox")


#: The server imports from the parent's path (which -I would otherwise drop: PYTHONPATH),
#: and only its own modules, not the plugin's packages: a small process forks faster.
BOOT = """
import json, sys, types
sys.path[:] = json.loads(sys.argv[1])
for name, path in json.loads(sys.argv[2]).items():
    sys.modules[name] = module = types.ModuleType(name)
    module.__path__ = [path]
from {server} import main
main()
"""
PACKAGES = {
    "pytest_prompteval": os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
    "pytest_prompteval.sandbox": os.path.dirname(os.path.abspath(__file__)),
}


def server_command(server: str) -> list[str]:
    """The command that starts a sandbox server: the module ``server``'s ``main``."""
    return [
        sys.executable,
        "-I",
        "-c",
        BOOT.format(server=server),
        json.dumps(server_sys_path()),
        json.dumps(PACKAGES),
    ]


def server_sys_path() -> list[str]:
    """The import path a sandbox server starts with (``python -I`` ignores the environment):
    ours, its folders that exist."""
    return [p for p in sys.path if os.path.isabs(p) and os.path.exists(p)]


_dumpable = threading.Lock()
_running = 0


def hold_non_dumpable(delta: int) -> None:
    """pytest stays non-dumpable while any sandbox server runs: a sample of the same user
    can then neither read its /proc/<pid>/environ nor ptrace it."""
    global _running
    with _dumpable:
        _running += delta
        set_dumpable(_running == 0)


class Sandbox:
    """One warm fork server; ``run`` is thread-safe (jobs run one at a time), ``send`` and
    ``receive`` are for the one thread that owns it."""

    def __init__(self, unsafe: bool = False, hidden: Sequence[str | os.PathLike[str]] = ()):
        self.unsafe = unsafe
        #: Folders a sample must not see even where they lie in one it sees (a project
        #: under /usr): the project's, its cases', recordings' and results'; and our cwd.
        self.hidden = [os.getcwd(), *(os.fspath(path) for path in hidden)]
        self._process: subprocess.Popen[str] | None = None
        self._home: str | None = None
        self._lock = threading.Lock()
        self._hypothesis = False
        self._sent: deque[Limits] = deque()  # what each outstanding job may take
        self._lines = LineReader()
        self.info: dict[str, Any] = {}

    def _start(self, hypothesis: bool) -> subprocess.Popen[str]:
        self._home = tempfile.mkdtemp(prefix="prompteval-sandbox-")
        env = {k: os.environ[k] for k in SAFE_ENV if k in os.environ}
        env.update(HOME=self._home, PYTHONHASHSEED="0", PYTHONDONTWRITEBYTECODE="1")
        env["PROMPTEVAL_SANDBOX_HIDDEN"] = json.dumps(self.hidden)
        if hypothesis:  # property tests: the server imports and warms hypothesis up front
            env.update(PROMPTEVAL_SANDBOX_HYPOTHESIS="1", PROMPTEVAL_SANDBOX_CACHE=cache_dir())
        if self.unsafe:
            env["PROMPTEVAL_SANDBOX_UNSAFE"] = "1"
        self._hypothesis = hypothesis
        stderr = open(os.path.join(self._home, "server.err"), "w+")  # noqa: SIM115
        process = subprocess.Popen(
            server_command("pytest_prompteval.sandbox.server"),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            cwd=self._home,
            env=env,
            text=True,
            start_new_session=True,
        )
        hold_non_dumpable(+1)
        assert process.stdout is not None
        ready = self._lines.next(process.stdout, 60.0)
        try:
            self.info = json.loads(ready or "")
        except ValueError:
            self.info = {}
        with stderr:
            if not self.info.get("ready"):
                self._end(process)
                stderr.seek(0)
                raise SandboxUnavailable(self._why_not(stderr.read()))
        return process

    def _why_not(self, stderr: str) -> str:
        if self.info.get("error"):
            return f"the code sandbox cannot run samples: {self.info['error']}"
        if self.info.get("missing"):
            missing = "; ".join(self.info["missing"])
            return f"the code sandbox cannot isolate samples here: {missing}. {UNSAFE_HINT}"
        tail = " | ".join(stderr.strip().splitlines()[-5:]) or "no output"
        return f"the code sandbox did not start: {tail}"

    def run(self, job: dict[str, Any], limits: Limits, hypothesis: bool = False) -> SampleReport:
        """Run one job; ``hypothesis``: start the server with hypothesis loaded."""
        with self._lock:
            self.send(job, limits, hypothesis)
            return self.receive()

    def ready_for(self, hypothesis: bool) -> bool:
        """Whether a job can be sent behind those outstanding (a job that needs hypothesis
        on a server started without it waits until the server is idle, then restarts it)."""
        return not hypothesis or self._hypothesis

    def start(self, hypothesis: bool = False) -> None:
        """Start the server before its first job."""
        if self._process is None:
            self._process = self._start(hypothesis)

    def send(self, job: dict[str, Any], limits: Limits, hypothesis: bool = False) -> None:
        """Queue a job on the server behind those sent before: it reads the next one as
        soon as it answers the last, without waiting for us. ``receive`` answers in order;
        only the pool's worker, which owns this server, interleaves the two."""
        if not self._sent:
            if hypothesis and not self._hypothesis:
                self._stop()  # restart with hypothesis loaded
            if self._process is None or self._process.poll() is not None:
                self._stop()
                self._process = self._start(self._hypothesis or hypothesis)
        process = self._process
        assert process is not None and process.stdin is not None
        self._sent.append(limits)
        # a server that died is found by ``receive``, which restarts it
        with contextlib.suppress(OSError):
            line = json.dumps({**job, "limits": asdict(limits), "seed": SEED})
            process.stdin.write(line + "\n")
            process.stdin.flush()

    @property
    def outstanding(self) -> int:
        return len(self._sent)

    def receive(self) -> SampleReport:
        """The answer to the oldest job sent. A server that stops answering is ended: that
        job crashed, and those sent behind it are lost with it (``outstanding`` is 0): the
        caller sends them again, to a new server."""
        process = self._process
        assert process is not None and process.stdout is not None
        try:
            line = self._lines.next(process.stdout, 3 * self._sent[0].timeout + 15)
        except LineTooLong:
            line = None  # out of step: the server is replaced
        self._sent.popleft()
        try:
            data = json.loads(line or "")
        except ValueError:
            data = None
        if not isinstance(data, dict):
            self._stop()
            return SampleReport(crashed="the code sandbox stopped answering; restarted")
        return SampleReport(
            events=[e for e in data.get("events", []) if isinstance(e, dict)],
            timed_out=bool(data.get("timed_out", False)),
            signal=data.get("signal"),
            exit_code=data.get("exit_code"),
            seconds=float(data.get("seconds", 0.0)),
        )

    def close(self) -> None:
        with self._lock:
            self._stop()

    def _end(self, process: subprocess.Popen[str]) -> None:
        process.kill()
        process.wait()
        for stream in (process.stdin, process.stdout):
            if stream is not None:
                # a job still buffered for the dead server cannot be flushed; the pipe
                # closes all the same
                with contextlib.suppress(BrokenPipeError):
                    stream.close()
        hold_non_dumpable(-1)

    def _stop(self) -> None:
        self._sent.clear()
        self._lines.clear()
        if self._process is not None:
            self._end(self._process)
            self._process = None
        if self._home is not None:
            shutil.rmtree(self._home, ignore_errors=True)
            self._home = None
