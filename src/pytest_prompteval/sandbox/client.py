"""The pytest side of the sandbox: starts the fork server, sends jobs, reads outcomes."""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import threading
from dataclasses import asdict, dataclass, field
from typing import IO, Any

from pytest_prompteval.core.errors import PromptevalError

#: Variables a sample may see; everything else (API keys above all) stays out.
SAFE_ENV = ("PATH", "LANG", "LC_ALL", "TZ")


@dataclass(frozen=True)
class Limits:
    timeout: float = 3.0
    memory_mb: int = 512
    output_bytes: int = 1 << 20
    processes: int = 64


@dataclass
class SampleRun:
    """What one sample did: the harness's events and how its process ended."""

    events: list[dict[str, Any]] = field(default_factory=list)
    timed_out: bool = False
    signal: int | None = None
    exit_code: int | None = None
    seconds: float = 0.0
    crashed: str | None = None

    def phase(self, name: str) -> dict[str, Any] | None:
        return next((e for e in self.events if e.get("phase") == name), None)

    @property
    def tests(self) -> dict[int, dict[str, Any]]:
        return {e["test"]: e for e in self.events if "test" in e}

    @property
    def property_check(self) -> dict[str, Any] | None:
        return next((e for e in self.events if e.get("property")), None)

    @property
    def done(self) -> dict[str, Any] | None:
        return next((e for e in self.events if e.get("done")), None)


class Sandbox:
    """One warm fork server; ``run`` is thread-safe (jobs run one at a time)."""

    def __init__(self) -> None:
        self._process: subprocess.Popen[str] | None = None
        self._home: str | None = None
        self._lock = threading.Lock()
        self._hypothesis = False
        self.info: dict[str, Any] = {}

    def _start(self, hypothesis: bool) -> subprocess.Popen[str]:
        self._home = tempfile.mkdtemp(prefix="prompteval-sandbox-")
        env = {k: os.environ[k] for k in SAFE_ENV if k in os.environ}
        env.update(HOME=self._home, PYTHONHASHSEED="0", PYTHONDONTWRITEBYTECODE="1")
        if hypothesis:  # property tests: the server imports and warms hypothesis up front
            env["PROMPTEVAL_SANDBOX_HYPOTHESIS"] = "1"
        self._hypothesis = hypothesis
        process = subprocess.Popen(
            [sys.executable, "-I", "-m", "pytest_prompteval.sandbox.server"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=self._home,
            env=env,
            text=True,
            start_new_session=True,
        )
        assert process.stdout is not None
        ready = self._readline(process.stdout, 60.0)
        if not ready:
            process.kill()
            raise PromptevalError("the code sandbox did not start")
        self.info = json.loads(ready)
        return process

    @staticmethod
    def _readline(stream: IO[str], timeout: float) -> str | None:
        ready, _, _ = select.select([stream], [], [], timeout)
        return stream.readline() if ready else None

    def run(self, job: dict[str, Any], limits: Limits) -> SampleRun:
        with self._lock:
            if job.get("properties") and not self._hypothesis:
                self._stop()  # restart with hypothesis loaded
            if self._process is None or self._process.poll() is not None:
                self._process = self._start(self._hypothesis or bool(job.get("properties")))
            process = self._process
            assert process.stdin is not None and process.stdout is not None
            process.stdin.write(json.dumps({**job, "limits": asdict(limits)}) + "\n")
            process.stdin.flush()
            line = self._readline(process.stdout, limits.timeout + 15)
            if not line:
                self._stop()
                return SampleRun(crashed="the code sandbox stopped answering; restarted")
        data = json.loads(line)
        return SampleRun(
            events=data.get("events", []),
            timed_out=data.get("timed_out", False),
            signal=data.get("signal"),
            exit_code=data.get("exit_code"),
            seconds=data.get("seconds", 0.0),
            crashed=data.get("crashed"),
        )

    def close(self) -> None:
        with self._lock:
            self._stop()

    def _stop(self) -> None:
        if self._process is not None:
            self._process.kill()
            self._process.wait()
            for stream in (self._process.stdin, self._process.stdout):
                if stream is not None:
                    stream.close()
            self._process = None
        if self._home is not None:
            shutil.rmtree(self._home, ignore_errors=True)
            self._home = None
