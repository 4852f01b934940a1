"""What the agent could still do to the host through the copy it leaves, and the verdict's
diff of it: each test plays the agent's part (a process of its still running while the
host walks the copy is stood in for by a step run inside the walk, so that no test waits
on timing)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_prompteval.sandbox import trees


def _agent_moves_up(monkeypatch: pytest.MonkeyPatch, top: Path, folder: Path) -> None:
    """While the host walks ``folder``, the agent moves it to ``top``: the walk's way back
    by ``..`` is one folder short."""
    inode = folder.stat().st_ino
    original: Callable[..., list[str]] = trees._folders

    def folders(fd: int, other: Callable[[str], None]) -> list[str]:
        if os.fstat(fd).st_ino == inode and folder.exists():
            os.rename(folder, top / folder.name)
        return original(fd, other)

    monkeypatch.setattr(trees, "_folders", folders)


def _outside(where: Path, names: list[str]) -> tuple[str, str]:
    """Two folders below ``where``, in the order the walk takes them: (first, second)."""
    for name in names:
        (where / name).mkdir()
    listed = os.listdir(where)
    return listed[-1], listed[0]


@pytest.mark.parametrize("walk", ["remove", "give"])
def test_a_folder_moved_during_the_walk_never_takes_it_outside_the_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, walk: str
) -> None:
    """The copy holds ``first/inner`` and ``second``; while ``first/inner`` is walked, the
    agent moves it up. Climbing back by ``..`` then reached the copy's parent, removed an
    empty folder of the copy's name there (as /tmp holds .X11-unix) and emptied (or chowned)
    the parent's folder named as the copy's next one (``/tmp/x`` or ``/etc``)."""
    copy = tmp_path / "copy"
    copy.mkdir()
    first, second = _outside(copy, ["aa", "bb"])
    (copy / first / "inner").mkdir()
    (tmp_path / first).mkdir()  # an empty folder beside the copy (/tmp/.X11-unix)
    victim = tmp_path / second
    victim.mkdir()
    (victim / "keep").write_text("the host's file")
    os.chmod(victim / "keep", 0o600)
    _agent_moves_up(monkeypatch, copy, copy / first / "inner")
    with pytest.raises(OSError):
        if walk == "remove":
            trees.remove_tree(str(copy))
        else:
            trees.give_tree(str(copy), 12345, 12345)
    assert (victim / "keep").read_text() == "the host's file"
    assert (victim / "keep").stat().st_uid == os.getuid()
    assert (tmp_path / first).is_dir()


def _running_as(uid: int) -> list[str]:
    found = []
    for pid in os.listdir("/proc"):
        try:
            if pid.isdigit() and os.stat(f"/proc/{pid}").st_uid == uid:
                found.append(Path(f"/proc/{pid}/stat").read_text().split()[2])
        except OSError:
            continue
    return found


def test_nothing_of_the_agent_runs_once_its_sandbox_is_closed(tmp_path: Path) -> None:
    """Without a cgroup, closing the sandbox killed its server's parent and returned while
    the agent's processes still ran (the namespace's PID 1 had yet to kill them): the host
    then removed or handed over the copy with the agent still at work in it."""
    from pytest_prompteval.sandbox.workspace import Workspace

    if os.geteuid() != 0:
        pytest.skip("as root, each sandbox's commands run as a user of their own")
    copy = tmp_path / "repo"
    copy.mkdir()
    with Workspace(copy, cgroup=False) as workspace:
        uid = int(workspace.info["uid"])
        spin = "setsid sh -c 'while :; do :; done' &"
        workspace.bash(f"for i in 1 2 3 4 5 6; do ({spin}); done", 10.0)
        assert len(_running_as(uid)) >= 6
    assert _running_as(uid) == []


def test_folders_count_against_the_walks_limit(tmp_path: Path) -> None:
    """Folders were never counted: a copy of a million empty folders (no file at all) was
    walked whole, past the time the verdict waits for its diff (an error, not a failure)."""
    from pytest_prompteval.sandbox.treediff import walk

    for number in range(10):
        (tmp_path / f"d{number}").mkdir()
    (tmp_path / "d9" / "f").write_text("")
    listed, stopped, _ = walk(str(tmp_path), limit=4)
    assert stopped and len(listed) == 0


def test_a_line_of_the_diff_is_a_line_of_the_file(tmp_path: Path) -> None:
    """Lines were split where Python splits them (form feed, \\x1c-\\x1e, \\x85, U+2028),
    not at newlines as git does: a form feed in a C file or an agent's U+2028 showed lines
    the file does not have, each with a forged "No newline at end of file"."""
    from pytest_prompteval.sandbox.treediff import diff

    base, top = tmp_path / "base", tmp_path / "top"
    for folder in (base, top):
        folder.mkdir()
    (base / "m.c").write_text("a\n")
    (top / "m.c").write_text("a\n\x0cb\u2028c\x1cd\r\n")
    shown = diff(str(base), str(top))
    assert "No newline" not in shown
    assert "+\x0cb\u2028c\x1cd\r\n" in shown


def test_without_a_cgroup_memory_no_address_space_counts_is_refused(tmp_path: Path) -> None:
    """memfd_secret, like memfd_create, holds pages in a file no address space counts: a
    process of a 256 MiB sandbox held 3 GB in fifty of them (each mapped a window at a
    time, its own 32 MiB of address space never reached)."""
    from pytest_prompteval.sandbox.workspace import Workspace

    copy = tmp_path / "repo"
    copy.mkdir()
    (copy / "secret.py").write_text(
        "import ctypes, errno\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "fd = libc.syscall(447, 0)\n"
        "print('fd', fd, errno.errorcode.get(ctypes.get_errno()))\n"
    )
    with Workspace(copy, memory_mb=256, cgroup=False) as workspace:
        assert workspace.info["memory"] == "split"
        shown = workspace.bash("python3 secret.py", 30.0)["output"]
    assert shown.strip() == "fd -1 EPERM"


def test_the_walk_holds_no_more_of_a_folder_than_its_limit(tmp_path: Path) -> None:
    """A folder was listed whole before the limit was checked, in the verdict's server,
    whose memory no bound covers: the agent's millions of empty files in one folder were
    held there at once."""
    import tracemalloc

    from pytest_prompteval.sandbox.treediff import walk

    top = os.open(tmp_path, os.O_RDONLY)
    try:
        for number in range(20_000):
            os.close(os.open(f"f{number}", os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=top))
    finally:
        os.close(top)
    tracemalloc.start()
    try:
        listed, stopped, _ = walk(str(tmp_path), limit=10)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert stopped and len(listed) == 10
    assert peak < 200_000, peak  # 20,000 entries listed took some 3 MB


@pytest.mark.parametrize("walk", ["remove", "give"])
def test_the_host_holds_no_list_of_a_folders_files(tmp_path: Path, walk: str) -> None:
    """Removing or handing over a copy listed each folder whole in pytest: an agent's
    million empty files in one folder took pytest to 118 MiB (and each file was stat-ed)."""
    import tracemalloc

    copy = tmp_path / "copy"
    (copy / "d").mkdir(parents=True)
    top = os.open(copy / "d", os.O_RDONLY)
    try:
        for number in range(20_000):
            os.close(os.open(f"f{number}", os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=top))
    finally:
        os.close(top)
    tracemalloc.start()
    try:
        if walk == "remove":
            trees.remove_tree(str(copy))
        else:
            trees.give_tree(str(copy), os.getuid(), os.getgid())
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 200_000, peak
    if walk == "give":
        trees.remove_tree(str(copy))


def test_a_v1_cgroup_never_swaps_past_its_bound() -> None:
    """On cgroup v1 without swap accounting (no memory.memsw.*, a common boot default), the
    bound held only the memory in RAM: past it the kernel swapped the sandbox's pages out
    and it went on, as far as the host's swap went. Its swappiness is 0: it is killed."""
    from pytest_prompteval.sandbox.memory import Cgroup

    made = Cgroup.make(64 << 20, 8)
    if made is None or not made.folders[0].startswith("/sys/fs/cgroup/memory/"):
        pytest.skip("no cgroup v1 memory hierarchy pytest may write here")
    try:
        assert Path(made.folders[0], "memory.swappiness").read_text().strip() == "0"
    finally:
        made.remove()
