"""The sandbox of a repository task: a copy of the repository at ``/repo``, a shell and the
text editor, behind the same isolation as code samples.

Started by ``workspace.Workspace`` with nothing of pytest's environment but ``PATH`` and
the locale, it isolates itself (``isolation.isolate``: own user, PID, network, IPC and mount
namespaces, a root of its own where only the system, the interpreter and the copy are
shown; the copy is the only writable folder besides the private tmpfs), then answers one
JSON job per line:

- ``bash`` runs a command in the persistent shell (``cd`` and variables carry over);
- ``restart`` starts a new shell;
- ``edit`` runs one text-editor command (``editor.py``) in a process of its own;
- ``run`` runs a script in a fresh shell (the verdict's patches and tests);
- ``diff`` is the unified diff of ``/base`` (the snapshot, read-only) against ``/repo``,
  bounded (``treediff``);
- ``files`` checks a repository task's file-state assertions on /repo (``filestate``);
- ``restore`` puts the verdict's test files and test infrastructure back (``restore.py``);
- ``read`` gives back a file of the sandbox's /tmp, bounded (the verdict's test report).

Every process that touches the copy runs without privileges (``nobody`` as root, no
capabilities in a user namespace) and with rlimits, its memory the sandbox's, shared by all
(``memory.Bound``); a command past its timeout is killed
with everything it started, and its result says so. The server watches pytest (a pidfd)
and ends with it; every process of the sandbox ends with the server, PID 1 of its namespace.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import json
import os
import resource
import select
import shlex
import signal
import sys
from collections.abc import Callable, Iterator

from pytest_prompteval.sandbox import editor
from pytest_prompteval.sandbox.isolation import (
    NOBODY,
    SITE_VARIABLE,
    View,
    drop_privileges,
    isolate,
    set_dumpable,
)
from pytest_prompteval.sandbox.memory import Bound, hold
from pytest_prompteval.sandbox.startup import view, watch_parent

#: This server starts twice per item: it imports only what its jobs need (tested), and
#: ``typing`` for the checker alone.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    #: A job's answer from the job and its timeout.
    Job = Callable[[dict[str, Any], float], Any]

ROOT = os.geteuid() == 0
#: What a command's result holds of its output (the rest is dropped and counted).
MAX_OUTPUT = 100_000
#: Past this much output a command is ended: ``yes`` must not run until its timeout.
OUTPUT_STOP = 8 * MAX_OUTPUT
#: How long a shell may take to come back after its command was killed before it is
#: replaced (a builtin loop leaves no child to kill).
GRACE = 2.0
#: Each command's limits beside its memory, processes and files (``memory.Bound``).
LIMITS = (
    (resource.RLIMIT_FSIZE, 64 << 20),
    (resource.RLIMIT_CORE, 0),
)


#: The repository's environment (sandbox/environments.py): its ``bin`` first on PATH.
_environment: str | None = None
#: Whether pytest loads the plugins installed beside it: a case's environment's are the
#: repository's own; a test command that reaches the plugin's packages must not load them.
_plugins = False


def environment() -> dict[str, str]:
    """All a command sees: no key, no token, nothing of pytest's environment."""
    if _environment is not None:
        found = {
            "PATH": f"{_environment}/bin:/usr/local/bin:/usr/bin:/bin",
            "VIRTUAL_ENV": _environment,
            # the read-only environment's python also reads this folder: what ``pip
            # install`` (an install step, the agent) installs goes there
            SITE_VARIABLE: "/tmp/site-packages",
            "PIP_TARGET": "/tmp/site-packages",
        }
    else:
        found = {"PATH": f"{os.path.dirname(sys.executable)}:/usr/local/bin:/usr/bin:/bin"}
    if not _plugins:
        found["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    return {
        **found,
        "HOME": "/tmp",
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "PYTHONDONTWRITEBYTECODE": "1",
    }


#: The user commands run as under root: this server's own (``Isolation.uid``), never a uid
#: other sandboxes share, whose processes would count against RLIMIT_NPROC here.
_uid = NOBODY
_bound = Bound()
#: Above every descriptor the server may hold (its own limit, before a child lowers it).
_MAX_FD = max(resource.getrlimit(resource.RLIMIT_NOFILE)[1], 1 << 16)


def _unprivileged() -> None:
    """In a child, before it touches the copy."""
    os.setsid()
    _bound.enter()
    for limit, value in (*LIMITS, *_bound.limits()):
        resource.setrlimit(limit, (value, value))
    drop_privileges(ROOT, _uid)
    os.chdir(editor.REPO)


def _only(keep: tuple[int, ...] = ()) -> None:
    """Close every descriptor above stderr but ``keep``: nothing of the server's (its job
    and answer pipes, the shell's, the cgroup's folders once joined) stays in a child."""
    start = 3
    for fd in sorted(keep):
        os.closerange(start, fd)
        start = fd + 1
    os.closerange(start, _MAX_FD)


def _spawn(argv: list[str], stdin: int, stdout: int) -> int:
    pid = os.fork()
    if pid == 0:
        try:
            os.dup2(stdin, 0)
            os.dup2(stdout, 1)
            os.dup2(stdout, 2)
            _unprivileged()
            _only()
            os.execve(argv[0], argv, environment())
        finally:
            os._exit(127)
    return pid


def _descendants(top: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as file:
                    parent = int(file.read().rpartition(")")[2].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(parent, []).append(int(name))
    found, todo = [], [top]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _kill(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def _reap() -> None:
    """PID 1 inherits every orphan: collect them."""
    try:
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass
    except ChildProcessError:
        pass


class Output:
    """What a command wrote, bounded."""

    def __init__(self) -> None:
        self.kept = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        self.kept += chunk[: max(0, MAX_OUTPUT - len(self.kept))]

    def text(self) -> str:
        shown = self.kept.decode(errors="replace")
        if self.total > len(self.kept):
            shown += (
                f"\n[output truncated: {self.total:,} bytes, the first {len(self.kept):,} shown]"
            )
        return shown


def _wait(fd: int, deadline: float) -> bool:
    watched = [fd] if _parent is None else [fd, _parent]
    ready = select.select(watched, [], [], max(0.0, deadline - _now()))[0]
    if _parent is not None and _parent in ready:
        os._exit(1)  # pytest ended: so do we, and the namespace with us
    return fd in ready


def _now() -> float:
    return os.times().elapsed


class Shell:
    """One bash, kept across commands; each command ends with a line only we can know."""

    def __init__(self) -> None:
        self.pid = 0
        self.fd = -1
        self.pending = bytearray()
        self.start()

    def start(self) -> None:
        to_shell, feed = os.pipe()
        out, into = os.pipe()
        self.pid = _spawn(["/bin/bash", "--noprofile", "--norc"], to_shell, into)
        for fd in (to_shell, into):
            os.close(fd)
        self.feed, self.fd = feed, out
        self.pending.clear()

    def stop(self) -> None:
        _kill([*_descendants(self.pid), self.pid])
        for fd in (self.feed, self.fd):
            os.close(fd)
        _reap()

    def run(self, command: str, timeout: float) -> dict[str, Any]:
        marker = os.urandom(16).hex().encode()
        end = f"printf '\\n%s %s\\n' {marker.decode()} $?"
        script = f"eval {shlex.quote(command)} </dev/null 2>&1\n{end}\n"
        output = Output()
        try:
            os.write(self.feed, script.encode())
        except BrokenPipeError:
            return self._restarted(output, "the shell had exited")
        deadline = _now() + timeout
        status: int | None = None
        ended: str | None = None
        while status is None:
            if not _wait(self.fd, deadline):
                ended = f"timed out after {timeout:g} s: the command was killed"
            else:
                chunk = os.read(self.fd, 1 << 16)
                if not chunk:
                    return self._restarted(output, "the shell exited")
                self.pending += chunk
                status = self._status(marker, output)
                if status is None and output.total + len(self.pending) > OUTPUT_STOP:
                    ended = f"wrote more than {OUTPUT_STOP:,} bytes: the command was killed"
            if ended is not None and status is None:
                _kill(_descendants(self.pid))
                status = self._finish(marker, output)
                if status is None:
                    return self._restarted(output, ended)
                break
        if ended is None:
            _reap()
        text = output.text() + (f"\n[{ended}; the shell goes on]" if ended else "")
        return {"output": text, "status": status, "timed_out": ended is not None}

    def _status(self, marker: bytes, output: Output) -> int | None:
        """The command's exit status once its end line came; output before it is kept."""
        head, found, tail = self.pending.partition(b"\n" + marker + b" ")
        if not found or b"\n" not in tail:
            keep = len(marker) + 16  # what may be the start of the end line
            if len(self.pending) > keep:
                output.add(bytes(self.pending[:-keep]))
                del self.pending[:-keep]
            return None
        output.add(bytes(head))
        number, _, rest = tail.partition(b"\n")
        self.pending = bytearray(rest)
        return int(number) if number.strip().isdigit() else -1

    def _finish(self, marker: bytes, output: Output) -> int | None:
        deadline = _now() + GRACE
        while _wait(self.fd, deadline):
            chunk = os.read(self.fd, 1 << 16)
            if not chunk:
                return None
            self.pending += chunk
            status = self._status(marker, output)
            if status is not None:
                _reap()
                return status
        return None

    def _restarted(self, output: Output, why: str) -> dict[str, Any]:
        output.add(bytes(self.pending))
        self.stop()
        self.start()
        text = f"{output.text()}\n[{why}; a new shell was started: cd and variables are reset]"
        return {"output": text, "status": None, "timed_out": "timed out" in why}


def in_child(work: Callable[[], Any], timeout: float) -> Any:
    """``work()`` in an unprivileged child; its JSON result, or an error dict."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            _unprivileged()
            # its stdin and stdout were the server's job and answer pipes: what the child
            # opened by mistake (a link swapped in) could forge answers through them
            null = os.open("/dev/null", os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            _only((write,))
            data = json.dumps(work()).encode()
        except BaseException as exc:  # the child reports, never raises
            data = json.dumps({"error": f"{type(exc).__name__}: {exc}"}).encode()
        os.write(write, data)
        os._exit(0)
    os.close(write)
    buffer = bytearray()
    deadline = _now() + timeout
    ended = False
    while _wait(read, deadline):
        chunk = os.read(read, 1 << 16)
        if not chunk:
            ended = True
            break
        buffer += chunk
        if len(buffer) > 4 * OUTPUT_STOP:
            break
    os.close(read)
    _kill([*_descendants(pid), pid])
    _reap()
    try:
        return json.loads(buffer)
    except ValueError:
        if ended:  # killed (out of memory) before it could answer
            return {"error": "its process ended without an answer (out of memory?)"}
        return {"error": f"no answer within {timeout:g} s"}


def edit(command: dict[str, Any], max_characters: int | None = None) -> dict[str, Any]:
    try:
        return {"text": editor.run(command, max_characters=max_characters), "is_error": False}
    except editor.EditError as exc:
        return {"text": str(exc), "is_error": True}


def read_file(path: str, limit: int) -> dict[str, Any]:
    """At most ``limit`` bytes of a file of /tmp, never through a link; its size."""
    if not path.startswith("/tmp/") or ".." in path.split("/"):
        return {"text": "", "size": 0, "error": f"not a file of /tmp: {path!r}"}
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        return {"text": "", "size": 0, "error": str(exc)}
    with open(fd, "rb") as file:
        size = os.fstat(fd).st_size
        return {"text": file.read(limit).decode(errors="replace"), "size": size}


def run_script(script: str, timeout: float) -> dict[str, Any]:
    """A script in a fresh shell: the verdict's own, away from the agent's shell. The
    script is a file of the sandbox's /tmp, not an argument: one argument holds at most
    128 KiB (a test patch, 2,500 test ids)."""
    path = f"/tmp/.script-{os.urandom(8).hex()}.sh"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with open(fd, "w") as file:
            file.write(script)
            os.fchmod(fd, 0o644)
    except OSError as exc:  # /tmp full of what an earlier command (the agent's build) left
        with contextlib.suppress(OSError):
            os.unlink(path)
        # the run's own set-up failed, as when its folder cannot be made (testrun.script)
        said = f"cannot write the script to /tmp: {exc.strerror}"
        return {"output": said, "status": 125, "timed_out": False}
    read, write = os.pipe()
    null = os.open("/dev/null", os.O_RDONLY)
    pid = _spawn(["/bin/bash", "--noprofile", "--norc", path], null, write)
    for fd in (null, write):
        os.close(fd)
    output = Output()
    deadline = _now() + timeout
    timed_out = False
    while True:
        if not _wait(read, deadline):
            timed_out = True
            break
        chunk = os.read(read, 1 << 16)
        if not chunk:
            break
        output.add(chunk)
        if output.total > OUTPUT_STOP * 8:
            break
    _kill([*_descendants(pid), pid])
    os.close(read)
    _, status = os.waitpid(pid, 0)
    _reap()
    os.unlink(path)
    code = None if timed_out else os.waitstatus_to_exitcode(status)
    return {"output": output.text(), "status": code, "timed_out": timed_out}


def _jobs() -> Iterator[dict[str, Any]]:
    buffer = bytearray()
    while True:
        while b"\n" in buffer:
            line, _, buffer = buffer.partition(b"\n")
            yield json.loads(line)
        _wait(0, _now() + 3600.0)
        chunk = os.read(0, 1 << 16)
        if not chunk:
            return
        buffer += chunk


_parent: int | None = None


def verdict_jobs() -> dict[str, Job]:
    """The jobs that read the snapshot at ``/base``: only the verdict's sandbox shows one,
    and only its server imports their modules, before isolation hides the plugin's folder
    (no import ever runs later: what a command wrote could be on the import path)."""
    from pytest_prompteval.sandbox import filestate, restore, treediff

    for name in restore.PARSERS:  # the restore's child imports them: loaded here, as the rest
        importlib.import_module(name)

    def diff(job: dict[str, Any], timeout: float) -> Any:
        # a fresh sandbox: nothing of the agent's runs while it reads the copy
        exclude = frozenset(map(str, job.get("exclude", ())))
        return {"diff": treediff.diff("/base", editor.REPO, exclude=exclude)}

    def files(job: dict[str, Any], timeout: float) -> Any:
        return in_child(functools.partial(filestate.check, job["checks"]), timeout)

    def restored(job: dict[str, Any], timeout: float) -> Any:
        paths = job["named"], job["folders"], job["allowed"]
        return in_child(functools.partial(restore.restore, *paths, int(job["limit"])), timeout)

    return {"diff": diff, "files": files, "restore": restored}


def main() -> None:
    global _parent, _uid, _bound, _environment, _plugins
    _parent = watch_parent()
    setup = json.loads(os.environ["PROMPTEVAL_WORKSPACE"])
    # while the host's tree is in reach: each command joins the cgroup through these
    held = hold(setup["cgroup"]) if setup.get("cgroup") else None
    _bound = Bound(int(setup["memory"]), held)
    shown, _ = view(setup["hidden"])
    placed = [(setup["repo"], editor.REPO, True)]
    jobs: dict[str, Job] = {}
    if setup.get("base"):
        placed.append((setup["base"], "/base", False))
        jobs = verdict_jobs()
    if setup.get("environment"):  # read-only at its own path: its scripts name it
        _environment = str(setup["environment"]["path"])
        _plugins = bool(setup["environment"]["plugins"])
        placed.append((_environment, _environment, False))
        extra = tuple(setup["environment"]["shown"])
        shown = View((*shown.shown, *extra), shown.hidden, (*shown.links, *extra))
    isolation = isolate(ROOT, View(shown.shown, shown.hidden, shown.links, tuple(placed)))
    _uid = isolation.uid  # the host gives it the copy once it says it is ready
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    set_dumpable(False)
    ready = {"ready": isolation.complete, "root": ROOT, **isolation.to_json()}
    ready["memory"] = "cgroup" if held is not None else "split"
    print(json.dumps(ready), flush=True)
    if not isolation.complete:
        return
    os.chdir("/tmp")
    shell: Shell | None = None
    for job in _jobs():
        op, timeout = job.get("op"), float(job.get("timeout", 60.0))
        answer: Any
        kills = _bound.kills()
        if op == "bash":
            shell = shell or Shell()
            answer = shell.run(str(job["command"]), timeout)
        elif op == "restart":
            if shell is not None:
                shell.stop()
            shell = Shell()
            answer = {"output": "tool has been restarted.", "status": 0, "timed_out": False}
        elif op == "edit":
            limit = job.get("max_characters")
            answer = in_child(functools.partial(edit, job["input"], limit), timeout)
        elif op in jobs:
            answer = jobs[str(op)](job, timeout)
        elif op == "run":
            answer = run_script(str(job["script"]), timeout)
        elif op == "read":
            work = functools.partial(read_file, str(job["path"]), int(job["limit"]))
            answer = in_child(work, timeout)
        else:
            answer = {"error": f"unknown job {op!r} (a verdict's job needs a snapshot)"}
        if "output" in answer:
            answer["output"] += _bound.note(kills, answer["output"])
        print(json.dumps(answer), flush=True)
