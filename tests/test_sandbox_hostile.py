"""Hostile samples are contained, as root and as an unprivileged user.

The corpus runs in a separate process (``python this_file.py WORKDIR``) started with an API
key in its environment, the way pytest would be: as root, and as ``nobody`` (or, when the
tests themselves run unprivileged, as the current user). That process reports what each
sample did and what it left behind; the tests assert on the report.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

KEY = "sk-ant-hostile-corpus-0000"
NOBODY = 65534
#: A supplementary group of the unprivileged user that owns a socket (``docker`` for one).
GROUP = 4242
#: A SysV segment's size no other program picks, to find it in /proc/sysvipc/shm.
SHM_SIZE = 3_141_593
HIDDEN_CASE = "cases:\n- id: secret\n  tests: [{assert: 'f() == 4242'}]\n"
#: The sample forks children that each take all the memory they can; the sample's limit
#: holds for them all.
MEMORY_HOG = """
import os
def f():
    readers = []
    for _ in range(12):
        read, write = os.pipe()
        try:
            child = os.fork()
        except OSError:
            break
        if child == 0:
            held = []
            try:
                while True:
                    held.append(bytearray(1 << 20))
            except MemoryError:
                pass
            os.write(write, str(len(held)).encode())
            os.read(read, 1)  # held until the sample ends
            os._exit(0)
        os.close(write)
        readers.append(read)
    held = []
    try:
        while True:
            held.append(bytearray(1 << 20))
    except MemoryError:
        pass
    children = [int(os.read(r, 32) or 0) for r in readers]
    return [len(readers), len(held) + sum(children)]
"""


def hostile(
    parent: int, port: int, targets: list[str], project: str, sockets: list[str]
) -> dict[str, tuple[str, list[Any]]]:
    """name -> (code defining f, f's arguments)."""
    return {
        "fork_bomb": ("import os\ndef f():\n    while True:\n        os.fork()\n", []),
        "memory_bomb": (
            "def f():\n    blocks = []\n    while True:\n"
            "        blocks.append(bytearray(50_000_000))\n",
            [],
        ),
        "busy_loop": ("def f():\n    while True:\n        pass\n", []),
        "endless_output": ("def f():\n    while True:\n        print('x' * 10_000)\n", []),
        "api_key": (
            "import os\n"
            "def f(parent):\n"
            "    hits = [k for k in os.environ if 'KEY' in k or 'TOKEN' in k]\n"
            "    pids = ['self', str(parent)] + [p for p in os.listdir('/proc') if p.isdigit()]\n"
            "    for pid in pids:\n"
            "        try:\n"
            "            data = open(f'/proc/{pid}/environ', 'rb').read()\n"
            "        except OSError:\n"
            "            continue\n"
            "        if b'sk-ant-' in data:\n"
            "            hits.append(pid)\n"
            "    return hits\n",
            [parent],
        ),
        "writes_outside": (
            "def f(targets):\n"
            "    for path in targets:\n"
            "        try:\n"
            "            with open(path, 'a') as file:\n"
            "                file.write('import os  # planted\\n')\n"
            "        except OSError:\n"
            "            pass\n",
            [targets],
        ),
        "socket": (
            "import socket\n"
            "def f(port):\n"
            "    try:\n"
            "        socket.create_connection(('127.0.0.1', port), timeout=0.5)\n"
            "    except OSError as exc:\n"
            "        return 'refused'\n"
            "    return 'connected'\n",
            [port],
        ),
        "setsid_child": (
            "import os, time\n"
            "def f():\n"
            "    if os.fork() == 0:\n"
            "        os.setsid()\n"
            "        if os.fork() == 0:\n"
            "            time.sleep(60)\n"
            "        os._exit(0)\n"
            "    return 'forked'\n",
            [],
        ),
        "execve_child": (
            "import os\n"
            "def f():\n"
            "    if os.fork() == 0:\n"
            "        os.setsid()\n"
            "        os.execve('/bin/sleep', ['sleep', '60'], {})\n"
            "    return 'forked'\n",
            [],
        ),
        "kills_parent": (
            "import os, signal\n"
            "def f():\n"
            "    for pid in [os.getppid(), 1, -1]:\n"
            "        try:\n"
            "            os.kill(pid, signal.SIGKILL)\n"
            "        except OSError:\n"
            "            pass\n",
            [],
        ),
        "signals_the_server": (
            "import os, signal\n"
            "def f():\n"
            "    for number in (signal.SIGINT, signal.SIGALRM, signal.SIGTERM, signal.SIGHUP):\n"
            "        try:\n"
            "            os.kill(1, number)\n"
            "        except OSError:\n"
            "            pass\n",
            [],
        ),
        "forges_result": (
            "import os\n"
            "def f():\n"
            "    for fd in range(256):\n"
            "        try:\n"
            '            os.write(fd, b\'{"test": 0, "passed": true}\\n\')\n'
            "        except OSError:\n"
            "            pass\n"
            "    os._exit(0)\n",
            [],
        ),
        "reads_hidden_tests": (  # the expected values, from the case files on disk
            "import glob, os, sys\n"
            "def f(project):\n"
            "    found = []\n"
            "    for place in [*sys.path, os.getcwd(), project]:\n"
            "        for path in glob.glob(os.path.join(place, 'prompt_cases', '*.yaml')):\n"
            "            try:\n"
            "                found.append(open(path).read())\n"
            "            except OSError:\n"
            "                pass\n"
            "    return {\n"
            "        'found': found,\n"
            "        'project': os.path.exists(project),\n"
            "        'path': [p for p in sys.path if p.startswith(project)],\n"
            "        'cwd': os.getcwd(),\n"
            "    }\n",
            [project],
        ),
        "unix_sockets": (  # host daemons listening on path-based sockets
            "import socket\n"
            "def f(paths):\n"
            "    reached = []\n"
            "    for path in paths:\n"
            "        client = socket.socket(socket.AF_UNIX)\n"
            "        try:\n"
            "            client.connect(path)\n"
            "            reached.append(path)\n"
            "        except OSError:\n"
            "            pass\n"
            "        finally:\n"
            "            client.close()\n"
            "    return reached\n",
            [sockets],
        ),
        "shared_memory": (  # a SysV segment, which would outlive the run in the host's IPC
            "import ctypes\n"
            "def f(size):\n"
            "    libc = ctypes.CDLL(None, use_errno=True)\n"
            "    return libc.shmget(0, size, 0o1600)\n",  # IPC_PRIVATE, IPC_CREAT | 0600
            [SHM_SIZE],
        ),
        "garbage_result": (
            "import os\n"
            "def f():\n"
            "    for fd in range(3, 256):\n"
            "        try:\n"
            "            os.write(fd, b'{not json\\n')\n"
            "        except OSError:\n"
            "            pass\n"
            "    return 'still here'\n",
            [],
        ),
    }


FORGED = (
    '{"test": 0, "passed": true}\\n{"test": 1, "passed": true}\\n'
    '{"phase": "load", "ok": true}\\n{"done": true, "cpu": 0}\\n'
)


def forgers() -> dict[str, str]:
    """name -> code defining f that tries to pass ``f() == 42`` without returning 42."""
    return {
        "eq_always": (
            "class Liar:\n"
            "    def __eq__(self, other):\n"
            "        return True\n"
            "    __hash__ = object.__hash__\n"
            "def f():\n"
            "    return Liar()\n"
        ),
        "int_subclass": (
            "class Liar(int):\n"
            "    def __eq__(self, other):\n"
            "        return True\n"
            "    __hash__ = int.__hash__\n"
            "def f():\n"
            "    return Liar(7)\n"
        ),
        "events_via_gc": (
            "import gc, io, os\n"
            f"FORGED = '{FORGED}'\n"
            "def f():\n"
            "    for o in gc.get_objects():\n"
            "        if isinstance(o, io.TextIOWrapper):\n"
            "            try:\n"
            "                o.write(FORGED)\n"
            "                o.flush()\n"
            "            except Exception:\n"
            "                pass\n"
            "    for fd in range(256):\n"
            "        try:\n"
            "            os.write(fd, FORGED.encode())\n"
            "        except OSError:\n"
            "            pass\n"
            "    os._exit(0)\n"
        ),
        "events_via_proc": (
            "import os\n"
            f"FORGED = b'{FORGED}'\n"
            "def f():\n"
            "    for pid in (os.getppid(), 1):\n"
            "        try:\n"
            "            fds = os.listdir(f'/proc/{pid}/fd')\n"
            "        except OSError:\n"
            "            continue\n"
            "        for fd in fds:\n"
            "            try:\n"
            "                w = os.open(f'/proc/{pid}/fd/{fd}', os.O_WRONLY)\n"
            "                os.write(w, FORGED)\n"
            "                os.close(w)\n"
            "            except OSError:\n"
            "                pass\n"
            "    os._exit(0)\n"
        ),
        "reads_the_tests": (  # the expected value, from the tests' text in its memory
            "import ctypes, re\n"
            "def f():\n"
            "    with open('/proc/self/maps') as maps:\n"
            "        regions = [line.split() for line in maps]\n"
            "    for region in regions:\n"
            "        if not region[1].startswith('r') or region[-1].startswith('[v'):\n"
            "            continue\n"
            "        start, end = (int(x, 16) for x in region[0].split('-'))\n"
            "        if end - start > 256 << 20:\n"
            "            continue\n"
            "        data = ctypes.string_at(start, end - start)\n"
            "        found = re.search(rb'(?:f|candidate)[(][)] == ([0-9]+)', data)\n"
            "        if found:\n"
            "            return int(found.group(1))\n"
        ),
        "honest": "def f():\n    return 42\n",
    }


def _descendants(root: int) -> list[int]:
    """Processes under ``root``, from the parent links every user may read."""
    children: dict[int, list[int]] = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{entry}/stat").read_bytes()
        except OSError:
            continue
        children.setdefault(int(stat.rsplit(b")", 1)[1].split()[1]), []).append(int(entry))
    found, pending = [], [root]
    while pending:
        for child in children.get(pending.pop(), []):
            found.append(child)
            pending.append(child)
    return found


#: An idle server under the process pytest started, once it has run a sample: the
#: namespace's PID 1, its zygote and its judge (which waits for the next sample).
IDLE = 3


def _left_behind(server: int) -> int:
    """Processes a sample left under the server. Its processes are killed before the
    answer and reaped just after it: wait for that (a survivor keeps the count up)."""
    for _ in range(3000):  # a bound, not a timing: up to a minute on a loaded machine
        left = len(_descendants(server)) - IDLE
        if left <= 0:
            return left
        time.sleep(0.02)
    return left


def _shm_sizes() -> list[int]:
    with open("/proc/sysvipc/shm") as table:
        return [int(line.split()[3]) for line in list(table)[1:]]


def corpus(workdir: Path, project: Path, sockets: list[str]) -> dict[str, Any]:
    """Run every hostile sample in one sandbox; report what each did and left behind. The
    process runs in ``project``, which is on its import path, as under pytest."""
    from pytest_prompteval.sandbox.client import Limits, Sandbox
    from pytest_prompteval.scoring.code.measure import measure
    from pytest_prompteval.scoring.code.spec import CodeSpec, CodeTest

    os.chdir(project)
    sys.path.insert(0, str(project))
    conftest = workdir / "conftest.py"
    conftest.write_text("# the project's conftest\n")
    token = os.urandom(4).hex()
    targets = [str(conftest), str(workdir / f"new-{token}.py")] + [
        f"{d}/escape-{token}" for d in ("/tmp", "/var/tmp", "/dev/shm", "/run/lock", "")
    ]
    listener = socket.create_server(("127.0.0.1", 0))
    listener.setblocking(False)
    box = Sandbox()
    report: dict[str, Any] = {"samples": {}}
    try:
        idle = CodeSpec(entry_point="f", tests=(CodeTest("args", []),))
        box.run(idle.job("def f():\n    return None\n"), Limits(timeout=1.0))
        assert box._process is not None
        server = box._process.pid
        report["isolation"] = box.info
        assert _left_behind(server) == 0
        shm_before = _shm_sizes().count(SHM_SIZE)  # left by another run: not this one's
        port = listener.getsockname()[1]
        samples = hostile(os.getpid(), port, targets, str(project), sockets)
        for name, (code, args) in samples.items():
            spec = CodeSpec(entry_point="f", tests=(CodeTest("args", args, expected=42),))
            run = box.run(spec.job(code), Limits(timeout=1.0, memory_mb=256))
            metrics = measure(spec, code, run)
            event = run.tests.get(0, {})
            report["samples"][name] = {
                "error_class": metrics.error_class,
                "passed": metrics.functional,
                "output": event.get("output"),
                "message": event.get("message"),
                "left_behind": _left_behind(server),
                "server_alive": box._process is not None and box._process.pid == server,
            }
        verdicts = CodeSpec(
            entry_point="f",
            tests=(
                CodeTest("assert", "f() == 42"),
                CodeTest("check", "def check(candidate):\n    assert candidate() == 42\n"),
            ),
        )
        report["shm_left"] = _shm_sizes().count(SHM_SIZE) - shm_before
        hog = CodeSpec(entry_point="f", tests=(CodeTest("args", []),))
        run = box.run(hog.job(MEMORY_HOG), Limits(timeout=5.0, memory_mb=64))
        report["memory_hog"] = run.tests.get(0, {}).get("output")
        limits = Limits(timeout=1.0)
        report["forgers"] = {
            name: measure(verdicts, code, box.run(verdicts.job(code), limits)).functional
            for name, code in forgers().items()
        }
        after = box.run(idle.job("def f():\n    return None\n"), Limits(timeout=1.0))
        report["works_after"] = measure(idle, "", after).functional
    finally:
        box.close()
    try:
        listener.accept()
        report["connections"] = 1
    except BlockingIOError:
        report["connections"] = 0
    report["conftest"] = conftest.read_text()
    report["escaped"] = [t for t in targets[1:] if os.path.exists(t)]
    return report


def _runs_as(uid: int, python: str, path: list[str]) -> bool:
    try:
        probe = subprocess.run(
            [python, "-c", "import pytest_prompteval.sandbox, pytest"],
            user=uid,
            group=uid,
            extra_groups=[],
            env={"PATH": "/usr/bin:/bin", "PYTHONPATH": os.pathsep.join(path)},
            capture_output=True,
            check=False,
        )
    except PermissionError:  # the interpreter sits where this user may not go
        return False
    return probe.returncode == 0


def unprivileged_python() -> tuple[str, list[str]] | None:
    """An interpreter ``nobody`` can run that imports this project (the running one may sit
    under a root-only directory): this one, else the system's of the same version."""
    import pytest_prompteval

    path = [
        str(Path(pytest_prompteval.__file__).parents[1]),
        sysconfig.get_paths()["purelib"],
        str(Path(pytest.__file__).parents[1]),
    ]
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for python in (sys.executable, shutil.which(version, path="/usr/bin:/usr/local/bin")):
        if python and _runs_as(NOBODY, python, path):
            return python, path
    return None


def outside_tmp() -> str:
    """A folder outside /tmp this user may create in (the sandbox has its own /tmp)."""
    return "/" if os.geteuid() == 0 else str(Path.home())


def interpreter_for(env: dict[str, str], unprivileged: bool) -> tuple[str, int | None]:
    """The interpreter and user a script runs as (``nobody`` when ``unprivileged`` and we
    are root), with ``env``'s PYTHONPATH set so that it imports this project."""
    if unprivileged and os.geteuid() == 0:
        found = unprivileged_python()
        if found is None:
            pytest.skip("no Python interpreter that an unprivileged user can run")
        python, path = found
        env["PYTHONPATH"] = os.pathsep.join(path)
        return python, NOBODY
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if os.path.isabs(p))
    return sys.executable, None


@contextlib.contextmanager
def unreached_port() -> Iterator[str]:
    """A port listening on 127.0.0.1 that what runs in the block must not reach."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.setblocking(False)
    try:
        yield str(listener.getsockname()[1])
        with pytest.raises(BlockingIOError):
            listener.accept()
    finally:
        listener.close()


def run_script(
    command: list[str],
    env: dict[str, str],
    user: int | None,
    groups: list[int] | None = None,
    cwd: str | None = None,
) -> Any:
    """The JSON a script prints, run as ``user`` (with supplementary ``groups``, in
    ``cwd``); its exit code 3 skips the test."""
    done = subprocess.run(
        command,
        cwd=cwd,
        user=user,
        group=user,
        extra_groups=(groups or []) if user is not None else None,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if done.returncode == 3:
        pytest.skip(done.stdout.strip())
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _listen(path: Path, mode: int, group: int | None) -> socket.socket:
    """A daemon's socket at ``path``: listening, ``mode``, owned by ``group`` if given."""
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(path))
    listener.listen(8)
    listener.setblocking(False)
    os.chmod(path, mode)
    if group is not None:
        os.chown(path, -1, group)
    return listener


def run_corpus(workdir: Path, project: Path, unprivileged: bool) -> dict[str, Any]:
    """The corpus's report, with a project outside /tmp holding a case file, and daemons'
    sockets (world-writable, and group-owned for a group of the user running pytest) in
    /tmp and a /run-like folder."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "ANTHROPIC_API_KEY": KEY}
    python, user = interpreter_for(env, unprivileged)
    root = os.geteuid() == 0
    (project / "prompt_cases").mkdir()
    (project / "prompt_cases" / "hidden.yaml").write_text(HIDDEN_CASE)
    # the user's own group when not root (as root: a group nobody has, given to the user)
    group = GROUP if root else os.getgroups()[-1]
    places = [Path(tempfile.mkdtemp(prefix="prompteval-sockets-"))]
    run = "/run" if root else os.environ.get("XDG_RUNTIME_DIR")
    if run and os.access(run, os.W_OK):
        places.append(Path(tempfile.mkdtemp(prefix="prompteval-sockets-", dir=run)))
    listeners = []
    try:
        for place in places:
            place.chmod(0o755)
            listeners.append(_listen(place / "world.sock", 0o777, None))
            listeners.append(_listen(place / "group.sock", 0o770, group))
        sockets = [f"{place}/{name}.sock" for place in places for name in ("world", "group")]
        if user is not None:
            for path in (workdir, project):
                os.chown(path, user, user)
        command = [python, __file__, str(workdir), str(project), json.dumps(sockets)]
        report: dict[str, Any] = run_script(command, env, user, [GROUP])
        report["accepted"] = sum(_accepts(listener) for listener in listeners)
    finally:
        for listener in listeners:
            listener.close()
        for place in places:
            shutil.rmtree(place, ignore_errors=True)
    return report


def _accepts(listener: socket.socket) -> int:
    try:
        listener.accept()[0].close()
    except BlockingIOError:
        return 0
    return 1


AS_ROOT_AND_UNPRIVILEGED = pytest.mark.parametrize(
    "unprivileged",
    [
        pytest.param(False, id="root"),
        pytest.param(True, id="unprivileged"),
    ],
)


@AS_ROOT_AND_UNPRIVILEGED
def test_hostile_samples_are_contained(unprivileged: bool) -> None:
    if not unprivileged and os.geteuid() != 0:
        pytest.skip("the root mode needs root")
    # not under tmp_path: pytest's temporary root is private to its user
    workdir = Path(tempfile.mkdtemp(prefix="prompteval-hostile-"))
    # the project where a sample could read it, were it not hidden: outside /tmp
    project = Path(tempfile.mkdtemp(prefix="prompteval-project-", dir=outside_tmp()))
    project.chmod(0o755)
    try:
        report = run_corpus(workdir, project, unprivileged)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        shutil.rmtree(project, ignore_errors=True)
    isolation = report["isolation"]
    assert isolation["mode"] == ("user namespace" if unprivileged else "root"), isolation
    assert isolation["missing"] == []
    samples = report["samples"]
    assert samples["fork_bomb"]["error_class"] in ("resource_limit", "timeout")
    assert samples["memory_bomb"]["error_class"] == "resource_limit"
    assert samples["busy_loop"]["error_class"] == "timeout"
    assert samples["endless_output"]["error_class"] == "resource_limit"
    assert samples["api_key"]["output"] == []
    assert samples["socket"]["output"] == "refused" and report["connections"] == 0
    assert samples["setsid_child"]["output"] == samples["execve_child"]["output"] == "forked"
    # The project, its cases and the import path pytest gives it are out of sight.
    hidden = samples["reads_hidden_tests"]["output"]
    assert hidden["found"] == [] and hidden["path"] == [] and not hidden["project"], hidden
    assert not hidden["cwd"].startswith(str(project)), hidden
    # No daemon's socket is reached, world-writable or of the user's group.
    assert samples["unix_sockets"]["output"] == [] and report["accepted"] == 0, samples
    # The segment was made, in an IPC namespace that ended with the sample.
    assert samples["shared_memory"]["output"] >= 0 and not report["shm_left"]
    # However many processes it forks, the sample holds at most its 64 MiB in all.
    children, megabytes = report["memory_hog"]
    assert children >= 2 and 0 < megabytes <= 64, report["memory_hog"]
    assert report["conftest"] == "# the project's conftest\n"
    assert report["escaped"] == []
    assert not samples["forges_result"]["passed"]
    # Garbage on its own channel fails the candidate, and nothing else.
    assert (
        "the candidate's process broke the call protocol: a message that is not JSON"
        in (samples["garbage_result"]["message"])
    )
    assert all(s["left_behind"] == 0 for s in samples.values()), samples
    assert all(s["server_alive"] for s in samples.values()), samples
    assert report["works_after"]
    assert not any(s["passed"] for s in samples.values())
    # Assert and check verdicts are made in a process the candidate does not control.
    forged = report["forgers"]
    assert forged.pop("honest") is True
    assert forged == dict.fromkeys(forged, False) and len(forged) == len(forgers()) - 1, forged


def endless_sample() -> None:
    """Start a server with an endless sample on it, say the server's pid, and wait to be
    killed: pytest, killed while a sample runs."""
    import signal

    from pytest_prompteval.sandbox.client import Limits, Sandbox
    from pytest_prompteval.scoring.code.spec import CodeSpec, CodeTest

    box = Sandbox()
    box.start()
    spec = CodeSpec(entry_point="f", tests=(CodeTest("args", []),))
    box.send(spec.job("def f():\n    while True:\n        pass\n"), Limits(timeout=1e6))
    assert box._process is not None
    print(json.dumps({"server": box._process.pid}), flush=True)
    while True:
        signal.pause()


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return stat.rsplit(b")", 1)[1].split()[0] != b"Z"


def _eventually(condition: Any) -> bool:
    """Whether ``condition()`` comes true within a bounded number of looks."""
    for _ in range(6000):  # a bound, not a timing: up to a minute on a loaded machine
        if condition():
            return True
        time.sleep(0.01)
    return False


@AS_ROOT_AND_UNPRIVILEGED
def test_the_server_and_its_sample_end_with_pytest(unprivileged: bool) -> None:
    """pytest killed while an endless sample runs: the server and the sample end too."""
    if not unprivileged and os.geteuid() != 0:
        pytest.skip("the root mode needs root")
    env: dict[str, str] = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    python, user = interpreter_for(env, unprivileged)
    pytest_process = subprocess.Popen(
        [python, __file__, "--endless"],
        user=user,
        group=user,
        extra_groups=[] if user is not None else None,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert pytest_process.stdout is not None
        line = pytest_process.stdout.readline()
        if not line.startswith("{"):
            pytest_process.wait()
            if pytest_process.returncode == 3:
                pytest.skip(line.strip())
            raise AssertionError(
                line + (pytest_process.stderr.read() if pytest_process.stderr else "")
            )
        server = json.loads(line)["server"]
        # the judge and the candidate have started, beside PID 1 and the zygote
        assert _eventually(lambda: len(_descendants(server)) >= IDLE + 1)
        processes = [server, *_descendants(server)]
    finally:
        pytest_process.kill()
        pytest_process.wait()
        for stream in (pytest_process.stdout, pytest_process.stderr):
            if stream is not None:
                stream.close()
    assert _eventually(lambda: not any(map(_alive, processes))), [p for p in processes if _alive(p)]


if __name__ == "__main__":
    from pytest_prompteval.sandbox.client import SandboxUnavailable

    try:
        if sys.argv[1] == "--endless":
            endless_sample()
        print(json.dumps(corpus(Path(sys.argv[1]), Path(sys.argv[2]), json.loads(sys.argv[3]))))
    except SandboxUnavailable as exc:
        print(exc)
        sys.exit(3)
