"""A repository task's private copy and the sandbox that works on it, seen from pytest.

``Snapshot`` is what a case names: a folder of the project, or a git repository at a ref,
read from its objects (``git ls-tree``/``cat-file`` through core/gitversions' pinned git:
no hook, filter, fsmonitor or transport of the repository's runs). ``Workspace`` copies it
into a private temporary folder (the snapshot is only ever read), starts
``workspace_server`` on it and removes the copy when closed. ``Executor`` is the seam to
the tool loop: ``executor(name, input) -> ToolOutcome``, for Anthropic's client tools
``text_editor_20250728`` and ``bash_20250124`` as a prompt version declares them.

The copy is a real copy: hard links would let ``echo >> file`` write through to the
snapshot, and overlayfs in a user namespace fails to copy up a file whose owner or group
the namespace cannot map (a checkout with a root-group file). As root the copy belongs to
the user commands run as: each sandbox's own (``Isolation.uid``), so that no other
sandbox's processes count against its process limit.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, Any, Protocol

from pytest_prompteval.core.content import ToolOutcome
from pytest_prompteval.core.errors import PromptevalError
from pytest_prompteval.core.gitversions import GitRefError, Repository
from pytest_prompteval.sandbox import memory
from pytest_prompteval.sandbox.client import (
    SAFE_ENV,
    LineReader,
    SandboxUnavailable,
    hold_non_dumpable,
    server_command,
)
from pytest_prompteval.sandbox.environments import Environment
from pytest_prompteval.sandbox.isolation import NOBODY
from pytest_prompteval.sandbox.restore import MAX_ENTRIES, CopyRefused
from pytest_prompteval.sandbox.trees import copy_folder, git_tree, give_tree, remove_tree

#: Anthropic's client tools this module runs, by their ``type``.
TEXT_EDITOR = "text_editor_20250728"
BASH = "bash_20250124"
TOOL_TYPES = (TEXT_EDITOR, BASH)
#: How long the server may take beyond a command's own timeout to answer.
SLACK = 30.0


@dataclass(frozen=True)
class Snapshot:
    """A repository as a case names it: ``folder`` (a project folder), or ``git`` (a
    repository's top folder) at ``ref``."""

    folder: Path | None = None
    git: Path | None = None
    ref: str = "HEAD"

    def describe(self) -> str:
        return str(self.folder) if self.folder is not None else f"{self.git}@{self.ref}"


def open_clone(source: Path) -> Repository:
    """The clone at ``source``, its git run pinned (no hook, filter or fsmonitor of its own)."""
    source = Path(os.path.abspath(source))  # git runs in the clone: a relative name would move
    git_dir = source / ".git"
    if not git_dir.is_dir() or git_dir.is_symlink():
        raise GitRefError(f"{source} is not a git clone (no .git folder)")
    return Repository(source, git_dir, source, PurePosixPath("."))


def copy_snapshot(snapshot: Snapshot, into: Path) -> None:
    """``into`` (not there yet) becomes a copy of the snapshot; the snapshot is only read
    (sandbox/trees: nothing written through a link, sizes bounded)."""
    into.mkdir()
    if snapshot.folder is not None:
        copy_folder(snapshot.folder, into, snapshot.describe())
    else:
        assert snapshot.git is not None
        repo = open_clone(snapshot.git)
        git_tree(repo, repo.commit(snapshot.ref), into, snapshot.describe())


class Workspace:
    """One sandbox over one copy (``copy``); ``base`` shows a snapshot read-only at
    ``/base`` (the verdict's diff); ``environment`` is the interpreter and packages commands
    run with, shown read-only (None: the plugin's interpreter, as before environments).
    Jobs run one at a time; ``close`` ends the sandbox and removes its temporary folder."""

    def __init__(
        self,
        copy: Path,
        base: Path | None = None,
        hidden: Sequence[os.PathLike[str] | str] = (),
        memory_mb: int | None = None,
        cgroup: bool = True,
        environment: Environment | None = None,
    ):
        """``memory_mb``: the sandbox's memory (``memory.MEMORY_MB`` by default), in a
        cgroup of its own where one can be made (not with ``cgroup=False``)."""
        self.copy = copy
        self.base = base
        self.hidden = [os.getcwd(), *(os.fspath(h) for h in hidden)]
        self._lock = threading.Lock()
        self._lines = LineReader()
        size = (memory_mb or memory.MEMORY_MB) << 20
        self._cgroup = memory.Cgroup.make(size, memory.PROCESSES) if cgroup else None
        self._home = tempfile.mkdtemp(prefix="prompteval-workspace-")
        env = {k: os.environ[k] for k in SAFE_ENV if k in os.environ}
        env.update(HOME=self._home, PYTHONDONTWRITEBYTECODE="1")
        shown = None
        if environment is not None:
            shown = {
                "path": str(environment.path),
                "shown": list(environment.shown()),
                "plugins": environment.declared,
            }
        env["PROMPTEVAL_WORKSPACE"] = json.dumps(
            {
                "repo": str(copy),
                "base": str(base) if base else None,
                "hidden": self.hidden,
                "memory": size,
                "cgroup": list(self._cgroup.folders) if self._cgroup else None,
                "environment": shown,
            }
        )
        self._stderr: IO[str] = open(os.path.join(self._home, "server.err"), "w+")  # noqa: SIM115
        self._process = subprocess.Popen(
            server_command("pytest_prompteval.sandbox.workspace_server"),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            cwd=self._home,
            env=env,
            start_new_session=True,
        )
        hold_non_dumpable(+1)
        ready = self._receive(60.0)
        if not ready or not ready.get("ready"):
            self._stderr.seek(0)
            tail = " | ".join(self._stderr.read().strip().splitlines()[-3:])
            missing = "; ".join(ready.get("missing", [])) if ready else tail or "no answer"
            self.close()
            raise SandboxUnavailable(
                f"the repository sandbox cannot isolate its commands here: {missing}"
            )
        #: the copy becomes its user's before the first job, not now: a sandbox started
        #: while another still works in the copy (the verdict's, during the agent's turns)
        #: takes it as that one left it (any depth, links)
        self._owner: int | None = int(ready["uid"]) if ready["root"] else None
        self.info = ready

    def _receive(self, timeout: float) -> dict[str, Any] | None:
        stream = self._process.stdout
        assert stream is not None
        line = self._lines.next(stream, timeout)
        answer: dict[str, Any] | None = json.loads(line) if line is not None else None
        return answer

    def job(self, job: Mapping[str, Any], timeout: float) -> dict[str, Any]:
        """One job and its answer; a sandbox that does not answer is an error."""
        with self._lock:
            if self._owner is not None:
                give_tree(str(self.copy), self._owner, NOBODY)
                self._owner = None
            stdin = self._process.stdin
            assert stdin is not None
            try:
                stdin.write(json.dumps({**job, "timeout": timeout}).encode() + b"\n")
                stdin.flush()
            except BrokenPipeError:
                raise PromptevalError("the repository sandbox ended unexpectedly") from None
            answer = self._receive(timeout + SLACK)
        if answer is None:
            raise PromptevalError("the repository sandbox did not answer")
        return answer

    def bash(self, command: str, timeout: float) -> dict[str, Any]:
        return self.job({"op": "bash", "command": command}, timeout)

    def restart(self, timeout: float) -> dict[str, Any]:
        return self.job({"op": "restart"}, timeout)

    def edit(
        self, command: Mapping[str, Any], timeout: float, max_characters: int | None = None
    ) -> dict[str, Any]:
        job = {"op": "edit", "input": dict(command), "max_characters": max_characters}
        return self.job(job, timeout)

    def run(self, script: str, timeout: float) -> dict[str, Any]:
        return self.job({"op": "run", "script": script}, timeout)

    def diff(self, timeout: float = 60.0, exclude: Collection[str] = ()) -> str:
        """The diff of the snapshot to the copy, ``exclude`` (relative paths, an install's
        products) left out; a sandbox that could not take it is an error, never "no
        change"."""
        answer = self.job({"op": "diff", "exclude": sorted(exclude)}, timeout)
        if "diff" not in answer:
            raise PromptevalError(f"taking the diff failed: {answer.get('error', answer)}")
        return str(answer["diff"])

    def read(self, path: str, limit: int, timeout: float = 60.0) -> dict[str, Any]:
        """At most ``limit`` bytes of a file of the sandbox's /tmp (``text``), and its
        ``size``; an empty text when it is not there."""
        return self.job({"op": "read", "path": path, "limit": limit}, timeout)

    def check_files(
        self, checks: Sequence[Mapping[str, Any]], timeout: float = 60.0
    ) -> list[dict[str, Any]]:
        """The file-state checks (``filestate.py``) on /repo as it is, each's ``passed``
        and ``reason``."""
        answer = self.job({"op": "files", "checks": [dict(c) for c in checks]}, timeout)
        if "error" in answer or len(answer.get("checks", ())) != len(checks):
            why = answer.get("error", "not one answer a check")
            raise PromptevalError(f"checking the repository's files failed: {why}")
        return [dict(c) for c in answer["checks"]]

    def restore(
        self,
        named: Sequence[str],
        folders: Sequence[str],
        allowed: Sequence[str],
        timeout: float = 60.0,
        limit: int = MAX_ENTRIES,
    ) -> list[str]:
        """Put ``named`` and the test infrastructure back from ``/base`` (``restore.py``);
        the infrastructure paths the agent had changed, bar ``allowed``. A copy of more
        than ``limit`` entries, or a path too long to reach, is refused: CopyRefused, why
        in its message."""
        job = {"op": "restore", "named": list(named), "folders": list(folders)}
        answer = self.job({**job, "allowed": list(allowed), "limit": limit}, timeout)
        if "error" in answer:
            raise PromptevalError(f"restoring the test files failed: {answer['error']}")
        if "refused" in answer:
            raise CopyRefused(str(answer["refused"]))
        return [str(p) for p in answer["restored"]]

    def close(self) -> None:
        if self._process.poll() is None:  # it exits once every process of the sandbox has
            # (isolation), so that none is left at work in the copy the host goes on with
            self._process.terminate()
            try:
                self._process.wait(SLACK)
            except subprocess.TimeoutExpired:
                self._process.kill()
        self._process.wait()
        for stream in (self._process.stdin, self._process.stdout):
            if stream is not None:
                stream.close()
        self._stderr.close()
        if self._cgroup is not None:
            self._cgroup.remove()
        hold_non_dumpable(-1)
        shutil.rmtree(self._home, ignore_errors=True)

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


class Copy:
    """An item's private copy of a snapshot in a temporary folder of its own; removed by
    ``remove`` (or on leaving a ``with``)."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        self.folder = Path(tempfile.mkdtemp(prefix="prompteval-repo-"))
        self.path = self.folder / "repo"
        try:
            copy_snapshot(snapshot, self.path)
        except BaseException:  # a refused or failed copy leaves nothing in /tmp
            self.remove()
            raise

    def base(self) -> Path:
        """A pristine snapshot folder to diff against: the folder itself, or for a git
        snapshot a second tree from the objects."""
        if self.snapshot.folder is not None:
            return self.snapshot.folder
        base = self.folder / "base"
        if not base.exists():
            copy_snapshot(self.snapshot, base)
        return base

    def remove(self) -> None:
        remove_tree(str(self.folder))

    def __enter__(self) -> Copy:
        return self

    def __exit__(self, *_: object) -> None:
        self.remove()


class ToolOps(Protocol):
    """What the client tools run on: any provider's repository sandbox (``provider.py``)."""

    def bash(self, command: str, timeout: float) -> dict[str, Any]: ...

    def restart(self, timeout: float) -> dict[str, Any]: ...

    def edit(
        self, command: Mapping[str, Any], timeout: float, max_characters: int | None = None
    ) -> dict[str, Any]: ...


class Executor:
    """The tool loop's executor for one item: ``executor(name, input) -> ToolOutcome``.
    ``tools`` maps each tool's ``name`` to its ``type`` (one of ``TOOL_TYPES``);
    ``timeout`` is the case's, per command; ``max_characters`` a text editor's own bound on
    what ``view`` shows, by its name."""

    def __init__(
        self,
        workspace: ToolOps,
        tools: Mapping[str, str],
        timeout: float,
        max_characters: Mapping[str, int] | None = None,
    ) -> None:
        self.workspace = workspace
        self.tools = dict(tools)
        self.timeout = timeout
        self.max_characters = dict(max_characters or {})

    def __call__(self, name: str, command: Mapping[str, Any]) -> ToolOutcome:
        kind = self.tools.get(name)
        if kind == TEXT_EDITOR:
            answer = self.workspace.edit(command, self.timeout, self.max_characters.get(name))
            if "error" in answer:
                return ToolOutcome(f"Error: {answer['error']}", True)
            return ToolOutcome(str(answer["text"]), bool(answer["is_error"]))
        if kind == BASH:
            if command.get("restart"):
                answer = self.workspace.restart(self.timeout)
            elif isinstance(command.get("command"), str):
                answer = self.workspace.bash(command["command"], self.timeout)
            else:
                return ToolOutcome(
                    "Error: the bash tool needs a `command` (or `restart: true`)", True
                )
            return ToolOutcome(str(answer["output"]), bool(answer["timed_out"]))
        return ToolOutcome(f"Error: no tool named {name!r}", True)
