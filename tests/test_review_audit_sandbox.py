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
    original: Callable[..., object] = trees._entries

    def entries(fd: int) -> object:
        if os.fstat(fd).st_ino == inode and folder.exists():
            os.rename(folder, top / folder.name)
        return original(fd)

    monkeypatch.setattr(trees, "_entries", entries)


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
