"""Hostile completions are contained, classified, and never hold the run past the timeout
plus a second."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_prompteval.sandbox import Sandbox
from pytest_prompteval.sandbox.client import Limits
from pytest_prompteval.scoring.code import CodeSpec, measure

TIMEOUT = 1.0


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    os.environ["ANTHROPIC_API_KEY"] = "sk-ant-must-not-leak"  # the sandbox must not see it
    box = Sandbox()
    yield box
    box.close()
    del os.environ["ANTHROPIC_API_KEY"]


def settled(box: Sandbox) -> int:
    """How many processes the idle sandbox has (the server, and as root its namespace's
    PID 1): a sample must leave exactly these behind."""
    run(box, "def f():\n    return None\n")
    return len(descendants_of(box))


def descendants_of(box: Sandbox) -> list[int]:
    """Processes still carrying this sandbox's HOME (the server and whatever it started)."""
    needle = f"HOME={box._home}".encode()
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if needle in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
                found.append(int(pid))
        except OSError:
            continue
    return found


def run(box: Sandbox, code: str, test: str = "f() is None") -> tuple[str | None, str, float]:
    spec = CodeSpec(entry_point="f", tests=({"assert": test, "tag": "basic"},))
    started = time.monotonic()
    outcome = box.run(spec.job(code), Limits(timeout=TIMEOUT, memory_mb=256))
    elapsed = time.monotonic() - started
    metrics = measure(spec, code, outcome)
    assert elapsed < TIMEOUT + 1.0, f"held the run {elapsed:.2f} s"
    return metrics.error_class, metrics.first_failure or "", elapsed


HOSTILE = {
    "fork_bomb": (
        "import os\ndef f():\n    while True:\n        os.fork()\n",
        {"resource_limit", "timeout"},
    ),
    "memory_bomb": (
        "def f():\n    blocks = []\n    while True:\n"
        "        blocks.append(bytearray(50_000_000))\n",
        {"resource_limit"},
    ),
    "infinite_loop": ("def f():\n    while True:\n        pass\n", {"timeout"}),
    "endless_output": (
        "def f():\n    while True:\n        print('x' * 10_000)\n",
        {"resource_limit"},
    ),
    "ignores_sigterm": (
        "import signal\ndef f():\n    signal.signal(signal.SIGTERM, "
        "signal.SIG_IGN)\n    while True:\n        pass\n",
        {"timeout"},
    ),
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_completion_is_contained_and_classified(sandbox: Sandbox, name: str) -> None:
    code, classes = HOSTILE[name]
    idle = settled(sandbox)
    error_class, message, _ = run(sandbox, code)
    assert error_class in classes, message
    assert len(descendants_of(sandbox)) == idle


def test_api_key_is_not_in_the_environment(sandbox: Sandbox) -> None:
    code = "import os\ndef f():\n    return [k for k in os.environ if 'KEY' in k or 'TOKEN' in k]\n"
    error_class, message, _ = run(sandbox, code, "f() == []")
    assert error_class is None, message


needs_root = pytest.mark.skipif(
    os.geteuid() != 0, reason="filesystem and process isolation need root (see the README)"
)


@needs_root
def test_writes_outside_the_working_directory_do_not_land(sandbox: Sandbox, tmp_path: Path) -> None:
    token = uuid.uuid4().hex
    targets = [
        Path("/tmp") / f"escape-{token}",
        tmp_path / f"escape-{token}",
        Path("/var/tmp") / f"escape-{token}",
    ]
    code = (
        "def f():\n"
        f"    for path in {[str(t) for t in targets]!r}:\n"
        "        try:\n"
        "            open(path, 'w').write('escaped')\n"
        "        except OSError:\n"
        "            pass\n"
    )
    run(sandbox, code)
    assert [t for t in targets if t.exists()] == []


@needs_root
def test_killing_the_parent_does_not_hurt_the_run(sandbox: Sandbox) -> None:
    code = (
        "import os, signal\n"
        "def f():\n"
        "    for pid in [os.getppid(), 1] + [int(p) for p in os.listdir('/proc') if p.isdigit()]:\n"
        "        try:\n"
        "            os.kill(pid, signal.SIGKILL)\n"
        "        except OSError:\n"
        "            pass\n"
    )
    run(sandbox, code)
    assert sandbox._process is not None and sandbox._process.poll() is None
    error_class, message, _ = run(sandbox, "def f():\n    return None\n")
    assert error_class is None, message


def test_a_child_that_escapes_with_setsid_is_killed(sandbox: Sandbox) -> None:
    code = (
        "import os, time\n"
        "def f():\n"
        "    if os.fork() == 0:\n"
        "        os.setsid()\n"
        "        if os.fork() == 0:\n"
        "            time.sleep(60)\n"
        "        os._exit(0)\n"
    )
    idle = settled(sandbox)
    error_class, message, elapsed = run(sandbox, code)
    assert error_class is None, message
    assert elapsed < TIMEOUT
    assert len(descendants_of(sandbox)) == idle


def test_no_network(sandbox: Sandbox) -> None:
    code = (
        "import socket\n"
        "def f():\n"
        "    try:\n"
        "        socket.create_connection(('127.0.0.1', 22), timeout=0.5)\n"
        "    except OSError as exc:\n"
        "        return exc.errno\n"
    )
    if not sandbox.info:
        run(sandbox, "def f():\n    return None\n")
    if not sandbox.info.get("network_isolated"):
        pytest.skip("no network namespace here (not root)")
    error_class, message, _ = run(sandbox, code, "f() in (101, 111)")  # unreachable/refused
    assert error_class is None, message
