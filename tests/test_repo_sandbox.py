"""A repository task's copy, shell and editor: a hostile agent is contained, as root and as
an unprivileged user, and the snapshot it worked on is never changed.

The agent's commands go through the executor the tool loop calls, in a separate process
(``python this_file.py PROJECT OUTSIDE PORT``) started with an API key in its environment,
the way pytest would be; it reports what every tool call answered and what it left behind.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from pytest_prompteval.core.content import ToolOutcome
from pytest_prompteval.sandbox import editor

TOOLS = {"bash": "bash_20250124", "str_replace_based_edit_tool": "text_editor_20250728"}


def digest(top: Path) -> dict[str, str]:
    """Every entry below ``top`` with its content (a link: its target), byte for byte."""
    found = {}
    for folder, dirs, names in os.walk(top):
        for name in (*dirs, *names):
            path = os.path.join(folder, name)
            if os.path.islink(path):
                found[path] = "-> " + os.readlink(path)
            elif os.path.isfile(path):
                found[path] = hashlib.sha256(Path(path).read_bytes()).hexdigest()
            else:
                found[path] = "dir"
    return found


def hostile(project: Path, outside: Path, port: int) -> dict[str, Any]:
    from pytest_prompteval.sandbox.workspace import Copy, Executor, Snapshot, Workspace

    before = digest(project)
    calls: list[tuple[str, dict[str, Any]]] = [
        ("bash", {"command": "cat /proc/1/environ; cat /proc/*/environ; env"}),
        ("bash", {"command": "cat /etc/shadow"}),
        ("str_replace_based_edit_tool", {"command": "view", "path": "/proc/1/environ"}),
        ("str_replace_based_edit_tool", {"command": "view", "path": "/etc/shadow"}),
        ("bash", {"command": f"echo pwned > /tmp/pwned; echo pwned > {outside}/pwned"}),
        ("bash", {"command": "echo pwned > ../../pwned; echo pwned > ../pwned"}),
        (
            "str_replace_based_edit_tool",
            {"command": "create", "path": "../../pwned", "file_text": "pwned"},
        ),
        (
            "str_replace_based_edit_tool",
            {"command": "create", "path": f"{outside}/pwned", "file_text": "pwned"},
        ),
        ("bash", {"command": "ln -s /etc link_out && ln -s / root_link"}),
        ("str_replace_based_edit_tool", {"command": "view", "path": "link_out/passwd"}),
        (
            "str_replace_based_edit_tool",
            {"command": "create", "path": "root_link/tmp/pwned", "file_text": "x"},
        ),
        ("bash", {"command": "echo appended >> src/m.py; rm -f README; chmod 000 src"}),
        (
            "bash",
            {
                "command": "python -c 'import socket; "
                f'socket.create_connection(("127.0.0.1", {port}), timeout=2)\' '
                "|| echo NO-CONNECTION"
            },
        ),
        ("bash", {"command": "sleep 300"}),
        ("bash", {"command": "echo still here"}),
        ("bash", {"command": "python3 -c 'import os; os.memfd_create(\"m\")' 2>&1; ulimit -n"}),
    ]
    answers = []
    with Copy(Snapshot(folder=project)) as copy:
        with Workspace(copy.path) as workspace:
            memory = workspace.info["memory"]
            run = Executor(workspace, TOOLS, timeout=3.0)
            for name, command in calls:
                result = run(name, command)
                answers.append({"text": result.content, "is_error": result.is_error})
        copy_folder = copy.folder
    return {
        "answers": answers,
        "memory": memory,
        "same_snapshot": digest(project) == before,
        "copy_removed": not copy_folder.exists(),
        "host_files": [str(p) for p in (outside / "pwned", Path("/tmp/pwned")) if p.exists()],
    }


def make_project(top: Path) -> Path:
    (top / "src").mkdir()
    (top / "src" / "m.py").write_text("def f():\n    return 1\n")
    (top / "README").write_text("the snapshot\n")
    (top / "link").symlink_to("src/m.py")
    return top


@pytest.mark.parametrize("unprivileged", [False, True], ids=["root", "unprivileged"])
def test_a_hostile_agent_is_contained_and_the_snapshot_unchanged(
    unprivileged: bool, request: pytest.FixtureRequest
) -> None:
    # the script imports this file: the helpers only where pytest runs it
    from tests.test_sandbox_hostile import (
        KEY,
        interpreter_for,
        outside_tmp,
        run_script,
        unreached_port,
    )

    if not unprivileged and os.geteuid() != 0:
        pytest.skip("the root mode needs root")
    project = make_project(Path(tempfile.mkdtemp(prefix="prompteval-snapshot-")))
    outside = Path(tempfile.mkdtemp(prefix="prompteval-outside-", dir=outside_tmp()))
    for made in (project, outside):
        request.addfinalizer(functools.partial(shutil.rmtree, made, ignore_errors=True))
    for folder in (project, project / "src", outside):
        folder.chmod(0o777)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "ANTHROPIC_API_KEY": KEY}
    python, user = interpreter_for(env, unprivileged)
    with unreached_port() as port:
        report = run_script([python, __file__, str(project), str(outside), port], env, user)
    answers = report["answers"]
    assert all(KEY not in a["text"] for a in answers)
    assert "sk-ant" not in json.dumps(answers)
    assert "Permission denied" in answers[0]["text"]
    assert "Permission denied" in answers[1]["text"]
    for index in (2, 3, 6, 7, 9, 10):  # the editor refuses paths out of /repo
        assert answers[index]["is_error"], answers[index]
        assert "outside /repo" in answers[index]["text"]
    assert "Read-only file system" in answers[5]["text"] or "Permission" in answers[5]["text"]
    assert "NO-CONNECTION" in answers[12]["text"]
    assert answers[13]["is_error"] and "timed out" in answers[13]["text"]
    assert answers[14] == {"text": "still here\n", "is_error": False}
    assert report["host_files"] == []
    assert report["same_snapshot"]
    assert report["copy_removed"]
    if unprivileged:  # no cgroup of its own: its memory is split between its processes
        assert report["memory"] == "split"
        assert "PermissionError" in answers[15]["text"]  # memory no address space counts
        assert answers[15]["text"].endswith("\n256\n")


def test_the_editor_commands_follow_the_api(tmp_path: Path) -> None:
    top = str(tmp_path)
    (tmp_path / "a.py").write_text("x = 1\ny = 1\nz = 2\n")
    run = editor.run
    assert run({"command": "view", "path": "a.py", "view_range": [2, 3]}, top).endswith(
        "     2\ty = 1\n     3\tz = 2"
    )
    with pytest.raises(editor.EditError, match=r"^Error: Found 2 matches for replacement text"):
        run({"command": "str_replace", "path": "a.py", "old_str": "= 1", "new_str": "= 3"}, top)
    with pytest.raises(editor.EditError, match=r"^Error: No match found for replacement"):
        run({"command": "str_replace", "path": "a.py", "old_str": "w", "new_str": "v"}, top)
    run({"command": "str_replace", "path": "a.py", "old_str": "z = 2", "new_str": "z = 3"}, top)
    run({"command": "insert", "path": "a.py", "insert_line": 1, "insert_text": "w = 0"}, top)
    run({"command": "insert", "path": "a.py", "insert_line": 4, "new_str": "end = 1\n"}, top)
    assert (tmp_path / "a.py").read_text() == "x = 1\nw = 0\ny = 1\nz = 3\nend = 1\n"
    with pytest.raises(editor.EditError, match="insert_line"):
        run({"command": "insert", "path": "a.py", "insert_line": 9, "insert_text": "q"}, top)
    run({"command": "create", "path": "pkg/../b.txt", "file_text": "b"}, top)
    assert (tmp_path / "b.txt").read_text() == "b"
    (tmp_path / "d" / "e").mkdir(parents=True)
    (tmp_path / "d" / "e" / "deep.txt").write_text("")
    listing = run({"command": "view", "path": top}, top)
    assert f"{top}/d/e/" in listing and "deep.txt" not in listing
    with pytest.raises(editor.EditError, match="Unrecognized command"):
        run({"command": "undo_edit", "path": "a.py"}, top)


@pytest.mark.parametrize("swapped", ["src", "src/m.py"])
@pytest.mark.parametrize("command", ["view", "create", "str_replace", "insert"])
def test_a_link_swapped_in_after_the_editors_check_is_not_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, swapped: str, command: str
) -> None:
    # the agent's background process replaces a folder or the file by a link (to
    # /proc/self/fd/1, the server's answer pipe, say) between the check and the open
    top, outside = tmp_path / "repo", tmp_path / "outside"
    (top / "src").mkdir(parents=True)
    (top / "src" / "m.py").write_text("mine = 1\n")
    (top / "link").symlink_to("src/m.py")
    (outside / "src").mkdir(parents=True)
    (outside / "src" / "m.py").write_text("secret = 1\n")
    shown = editor.run({"command": "view", "path": "link"}, str(top))
    assert shown.endswith("     1\tmine = 1")  # a link inside the copy is still followed
    checked = editor.resolve

    def racing(path: object, folder: str = editor.REPO) -> str:
        real = checked(path, folder)
        (top / swapped).rename(tmp_path / "moved")
        (top / swapped).symlink_to(outside / swapped)
        return real

    monkeypatch.setattr(editor, "resolve", racing)
    calls: dict[str, dict[str, Any]] = {
        "view": {},
        "create": {"file_text": "pwned"},
        "str_replace": {"old_str": "secret", "new_str": "pwned"},
        "insert": {"insert_line": 0, "insert_text": "pwned"},
    }
    refused = r"^Error: cannot open .*: (Too many levels|Not a directory)"
    with pytest.raises(editor.EditError, match=refused):
        editor.run({"command": command, "path": "src/m.py", **calls[command]}, str(top))
    assert (outside / "src" / "m.py").read_text() == "secret = 1\n"


def test_the_editors_process_holds_none_of_the_servers_descriptors(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the server's stdin and stdout are pytest's job and answer pipes: a child that opened
    # /proc/self/fd/1 could write answers; it holds /dev/null and its own pipe only
    from pytest_prompteval.sandbox import workspace_server

    monkeypatch.setattr(workspace_server, "_unprivileged", lambda: None)  # not the point
    pipes = os.pipe(), os.pipe()  # the server's other pipes (the shell's)

    def held() -> dict[str, str]:
        found = {}
        for fd in os.listdir("/proc/self/fd"):
            with contextlib.suppress(OSError):  # the listing's own is closed
                found[fd] = os.readlink(f"/proc/self/fd/{fd}")
        return found

    try:
        found = workspace_server.in_child(held, 60.0)
    finally:
        for fd in (*pipes[0], *pipes[1]):
            os.close(fd)
    assert [found[fd] for fd in ("0", "1", "2")] == ["/dev/null"] * 3, found
    others = [target for fd, target in found.items() if fd not in ("0", "1", "2")]
    assert len(others) == 1 and others[0].startswith("pipe:"), found  # its answer's


def test_view_shows_at_most_the_tools_max_characters(tmp_path: Path) -> None:
    from pytest_prompteval.sandbox.workspace import Copy, Executor, Snapshot, Workspace

    (tmp_path / "long.py").write_text("".join(f"x{i} = {i}\n" for i in range(400)))
    whole = editor.run({"command": "view", "path": "long.py"}, str(tmp_path))
    bounded = editor.run({"command": "view", "path": "long.py"}, str(tmp_path), 200)
    assert bounded == whole[:200] + f"\n[output truncated: {len(whole):,} characters, 200 shown]"
    with Copy(Snapshot(folder=tmp_path)) as copy, Workspace(copy.path) as workspace:
        limits = {"str_replace_based_edit_tool": 200}
        run = Executor(workspace, TOOLS, timeout=30.0, max_characters=limits)
        shown = run("str_replace_based_edit_tool", {"command": "view", "path": "long.py"})
        assert shown == ToolOutcome(bounded, False)
        assert run("bash", {"command": "wc -l < long.py"}) == ToolOutcome("400\n", False)


def test_processes_of_others_do_not_count_against_a_workspace(tmp_path: Path) -> None:
    # other programs' processes under ``nobody`` (as other sandboxes' would be) reach the
    # commands' process limit; the agent's shell and what it starts must still run
    from pytest_prompteval.sandbox.memory import FALLBACK_PROCESSES, PROCESSES
    from pytest_prompteval.sandbox.workspace import Copy, Executor, Snapshot, Workspace

    from .conftest import processes_of  # not at the top: this file also runs as a script

    if os.geteuid() != 0:
        pytest.skip("the sandbox's own user is root's to give")
    processes = max(PROCESSES, FALLBACK_PROCESSES)
    with (
        processes_of(65534, processes + 2),
        Copy(Snapshot(folder=make_project(tmp_path))) as copy,
        Workspace(copy.path) as w,
    ):
        run = Executor(w, TOOLS, timeout=30.0)
        done = run("bash", {"command": "(echo forked > made.txt) && cat made.txt; id -u"})
        uid = w.info["uid"]
        assert done == ToolOutcome(f"forked\n{uid}\n", False)
        assert uid != 65534 and copy.path.stat().st_uid == uid


#: Four processes, each holding 100 MiB at once (each writes once its block is filled).
HOLD_400_MIB = """python3 -c '
import os
report, release = os.pipe(), os.pipe()
for _ in range(4):
    if os.fork() == 0:
        os.close(report[0]); os.close(release[1])
        try:
            block = bytearray(100 << 20)
            os.write(report[1], b"x")
        finally:
            os.close(report[1])
        os.read(release[0], 1)
        os._exit(0)
os.close(report[1])
held = b""
while chunk := os.read(report[0], 4):
    held += chunk
os.close(release[1])
for _ in range(4):
    os.wait()
print("held", len(held), "of 4")
'"""


@pytest.mark.parametrize("cgroup", [True, False], ids=["cgroup", "split"])
def test_the_sandboxs_memory_is_bounded_in_total(tmp_path: Path, cgroup: bool) -> None:
    # its own cgroup where one can be made (as root), else the memory split between a
    # bounded number of processes: either way four processes cannot hold 400 of 256 MiB
    from pytest_prompteval.sandbox.workspace import Copy, Executor, Snapshot, Workspace

    with (
        Copy(Snapshot(folder=make_project(tmp_path))) as copy,
        Workspace(copy.path, memory_mb=256, cgroup=cgroup) as workspace,
    ):
        made = workspace.info["memory"]
        if cgroup and made != "cgroup":
            pytest.skip("no cgroup can be made here (it needs root and a writable hierarchy)")
        folders = workspace._cgroup.folders if workspace._cgroup else ()
        run = Executor(workspace, TOOLS, timeout=120.0)
        done = run("bash", {"command": HOLD_400_MIB})
        after = run("bash", {"command": "echo next"})
        # memory no address space counts: a memfd's pages, SysV segments kept detached
        outside = run("bash", {"command": "python3 -c 'import os; os.memfd_create(\"m\")'"})
        files = run("bash", {"command": "ulimit -n"})  # each socket's buffers count in none
    assert "held" in done.content
    if cgroup:
        # the kernel kills one when they would pass the bound: before its block was counted
        # as held, or after it (under load, reclaim can let a block through for a moment)
        assert done.content.endswith(
            "[out of memory: the sandbox's 256 MiB, shared by its processes; one was killed]"
        )
    else:
        assert "held 4 of 4" not in done.content
        assert made == "split" and "MemoryError" in done.content
        assert done.content.endswith(
            "[out of memory? the sandbox's 256 MiB are split between at most 8 processes: "
            "32 MiB of address space each]"
        )
    assert after == ToolOutcome("next\n", False)
    assert ("PermissionError" in outside.content) is not cgroup  # the cgroup counts them
    assert files == ToolOutcome("1024\n" if cgroup else "256\n", False)
    assert folders == () or not any(os.path.exists(folder) for folder in folders)


def test_a_copy_on_tmpfs_counts_in_the_sandboxs_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # where the host's /tmp is tmpfs the copy is RAM, and only 64 MiB a file is bounded:
    # in the sandbox's cgroup what its processes write there counts as their memory
    from pytest_prompteval.sandbox.workspace import Copy, Executor, Snapshot, Workspace

    mounts = Path("/proc/self/mounts").read_text().split("\n")
    if not any(line.split()[1:3] == ["/dev/shm", "tmpfs"] for line in mounts if line):
        pytest.skip("no tmpfs at /dev/shm")
    folder = tempfile.mkdtemp(dir="/dev/shm")
    monkeypatch.setattr(tempfile, "tempdir", folder)
    try:
        with (
            Copy(Snapshot(folder=make_project(tmp_path))) as copy,
            Workspace(copy.path, memory_mb=64) as workspace,
        ):
            if workspace.info["memory"] != "cgroup":
                pytest.skip("no cgroup can be made here: the copy's size is not bounded")
            run = Executor(workspace, TOOLS, timeout=120.0)
            done = run(
                "bash", {"command": "for i in 1 2 3; do head -c 50000000 /dev/zero > f$i; done"}
            )
    finally:
        os.rmdir(folder)
    assert done.content.endswith(
        "[out of memory: the sandbox's 64 MiB, shared by its processes; one was killed]"
    )


def test_a_cgroup_a_killed_pytest_left_behind_is_removed_by_the_next() -> None:
    from pytest_prompteval.sandbox.memory import Cgroup

    made = Cgroup.make(64 << 20, 8)
    if made is None:
        pytest.skip("no cgroup can be made here (it needs root and a writable hierarchy)")
    # a pid above any pid_max: that pytest is gone
    left = [os.path.join(os.path.dirname(f), "prompteval-999999999-0") for f in made.folders]
    for folder in left:
        os.mkdir(folder)
    made.remove()
    assert all(os.path.exists(folder) for folder in left)
    again = Cgroup.make(64 << 20, 8)
    assert again is not None
    again.remove()
    assert not any(os.path.exists(f) for f in (*left, *made.folders, *again.folders))


if __name__ == "__main__":
    from pytest_prompteval.sandbox.client import SandboxUnavailable

    try:
        print(json.dumps(hostile(Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]))))
    except SandboxUnavailable as exc:
        print(exc)
        sys.exit(3)


#: What the repository sandbox's server must not import: it starts twice per item (the
#: agent's sandbox, the verdict's), and these are its start-up's cost, not its jobs' needs.
HEAVY = (
    "ast",
    "dataclasses",
    "datetime",
    "decimal",
    "difflib",
    "inspect",
    "platform",
    "pytest_prompteval.sandbox.harness",
    "pytest_prompteval.sandbox.restore",
    "pytest_prompteval.sandbox.server",
    "pytest_prompteval.sandbox.zygote",
    "secrets",
    "shutil",
    "socket",
    "tempfile",
    "typing",
)


def test_the_agents_sandbox_server_imports_nothing_heavy() -> None:
    from pytest_prompteval.sandbox.client import server_command

    command = server_command("pytest_prompteval.sandbox.workspace_server")
    assert command[3].rstrip().endswith("\nmain()")  # imported, not run
    command[3] = (
        command[3].rstrip().removesuffix("main()") + "print(json.dumps(sorted(sys.modules)))"
    )
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    imported = set(json.loads(done.stdout))
    assert "pytest_prompteval.sandbox.workspace_server" in imported
    assert sorted(imported & set(HEAVY)) == []


def test_a_verdicts_job_in_the_agents_sandbox_is_an_answer_not_a_crash(tmp_path: Path) -> None:
    from pytest_prompteval.sandbox.workspace import Copy, Snapshot, Workspace

    with Copy(Snapshot(folder=make_project(tmp_path))) as copy, Workspace(copy.path) as workspace:
        answer = workspace.job({"op": "diff"}, 10.0)
        assert "needs a snapshot" in answer["error"]
        assert workspace.bash("echo on", 10.0)["output"].strip() == "on"


def test_a_command_joins_a_v1_cgroup_by_its_one_thread(tmp_path: Path) -> None:
    # v1's cgroup.procs takes a lock on every process of the system for an RCU grace
    # period (5-20 ms a command); a fresh fork has one thread, which `tasks` moves alone.
    # v2 has no `tasks`: there the process joins through cgroup.procs
    from pytest_prompteval.sandbox import memory

    v1, v2 = tmp_path / "v1", tmp_path / "v2"
    for folder in (v1, v2):
        folder.mkdir()
        (folder / "cgroup.procs").write_text("")
    (v1 / "tasks").write_text("")
    held = tuple(os.open(folder, os.O_RDONLY | os.O_DIRECTORY) for folder in (v1, v2))
    try:
        memory.enter(held)
    finally:
        for fd in held:
            os.close(fd)
    assert [(v1 / "tasks").read_text(), (v1 / "cgroup.procs").read_text()] == ["0", ""]
    assert (v2 / "cgroup.procs").read_text() == "0"


def test_the_verdicts_server_loads_the_settings_parsers_before_it_isolates_itself() -> None:
    # the restore parses pytest's settings files (iniconfig, tomllib) in a child of the
    # isolated server: an import there searches the import path, where a folder of the
    # copy (a project checked out at /repo) could hold a module a command wrote
    from pytest_prompteval.sandbox.client import server_command
    from pytest_prompteval.sandbox.restore import TOML

    command = server_command("pytest_prompteval.sandbox.workspace_server")
    command[3] = (
        command[3].rstrip().removesuffix("main()")
        + "import pytest_prompteval.sandbox.workspace_server as server\n"
        + "server.verdict_jobs()\nprint(json.dumps(sorted(sys.modules)))"
    )
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    assert {"iniconfig", TOML} <= set(json.loads(done.stdout))


def test_a_script_the_full_tmp_cannot_hold_is_an_answer_not_a_crash(tmp_path: Path) -> None:
    # the verdict's install step runs the agent's build code, which may fill the sandbox's
    # /tmp: the test run's script then cannot be written, and the server died on it (the
    # item an error, where the agent's own run decides)
    from pytest_prompteval.sandbox.workspace import Copy, Snapshot, Workspace

    with Copy(Snapshot(folder=make_project(tmp_path))) as copy, Workspace(copy.path) as workspace:
        fill = "for i in 1 2; do head -c 40000000 /dev/zero > /tmp/fill$i; done; true"
        assert workspace.run(fill, 60.0)["status"] == 0
        answer = workspace.run("echo ran # " + "x" * 200_000, 10.0)  # the reporter, the ids
        assert answer["status"] == 125 and "ran" not in answer["output"]
        assert "cannot write the script to /tmp: No space left on device" in answer["output"]
        assert os.listdir(copy.path)  # the sandbox still answers, /tmp as the command left it
        assert workspace.bash("ls /tmp | grep -c script", 10.0)["output"].strip() == "0"
