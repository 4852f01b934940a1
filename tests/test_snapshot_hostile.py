"""A repository snapshot's copy is written on the host by pytest's user from what a hostile
clone or folder holds: nothing lands outside the copy, oversized objects are refused before
they are read, and a failed copy leaves nothing behind; as root and as an unprivileged user.

The hostile clones are built from raw objects (``git hash-object --literally``: duplicate
names, names holding ``/`` or ``..``, which ``git mktree`` and a default clone let through).
The copies are made in a separate process (``python this_file.py SPEC``) that reports each
outcome and what it left behind.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol

import pytest

from pytest_prompteval.core.gitversions import GitRefError, load_version_at
from pytest_prompteval.core.paths import MAX_FILE_BYTES
from pytest_prompteval.sandbox.trees import MAX_FILE, SnapshotError, remove_tree
from pytest_prompteval.sandbox.workspace import Copy, Snapshot

#: A raw tree's entries: (mode, name, object), a tree's mode written 40000 as git does.
Entries = list[tuple[str, bytes, str]]
MiB = 2**20


def _git(clone: Path, *args: str, data: bytes = b"") -> str:
    done = subprocess.run(["git", *args], cwd=clone, input=data, capture_output=True, check=True)
    return done.stdout.decode().strip()


def blob(clone: Path, data: bytes) -> str:
    return _git(clone, "hash-object", "-w", "--stdin", data=data)


def zeros(clone: Path, size: int) -> str:
    """A blob of ``size`` zero bytes, never held here (git packs it small)."""
    command = f"head -c {size} /dev/zero | git hash-object -w --stdin"
    done = subprocess.run(command, shell=True, cwd=clone, capture_output=True, check=True)
    return done.stdout.decode().strip()


def tree(clone: Path, entries: Entries) -> str:
    raw = b"".join(f"{m} ".encode() + name + b"\0" + bytes.fromhex(s) for m, name, s in entries)
    return _git(clone, "hash-object", "-w", "-t", "tree", "--literally", "--stdin", data=raw)


def clone_of(top: Path, name: str, build: Callable[[Path], Entries]) -> Path:
    """A clone whose ``main`` is a commit of the top tree ``build`` makes in it."""
    clone = top / name
    subprocess.run(["git", "init", "-q", str(clone)], check=True)
    top_tree = tree(clone, build(clone))
    ident = ("-c", "user.name=t", "-c", "user.email=t@example.com")
    commit = _git(clone, *ident, "commit-tree", top_tree, "-m", name)
    _git(clone, "update-ref", "refs/heads/main", commit)
    return clone


def _link_then_tree(c: Path, outside: Path) -> Entries:  # the audit's: x -> OUTSIDE, x/sub/b
    below = tree(c, [("120000", b"b", blob(c, b"planted"))])
    return [
        ("120000", b"x", blob(c, str(outside).encode())),
        ("40000", b"x", tree(c, [("40000", b"sub", below)])),
    ]


def _tree_then_link(c: Path, outside: Path) -> Entries:
    below = tree(c, [("100644", b"planted", blob(c, b"planted"))])
    return [("40000", b"x", below), ("120000", b"x", blob(c, str(outside).encode()))]


def _slash_in_name(c: Path, outside: Path) -> Entries:
    return [
        ("120000", b"x", blob(c, str(outside).encode())),
        ("100644", b"x/planted", blob(c, b"planted")),
    ]


def _twice(c: Path, outside: Path) -> Entries:
    return [("100644", b"a", blob(c, b"one")), ("100755", b"a", blob(c, b"two"))]


def _dotdot(c: Path, outside: Path) -> Entries:
    return [("100644", b"../planted", blob(c, b"planted"))]


def _dot_git(c: Path, outside: Path) -> Entries:
    hook = tree(c, [("100755", b"post-checkout", blob(c, b"#!/bin/sh\necho pwned\n"))])
    return [("40000", b".GIT", tree(c, [("40000", b"hooks", hook)]))]


def _missing(c: Path, outside: Path) -> Entries:
    return [("100644", b"gone", "1" * 40)]


def _nul_link(c: Path, outside: Path) -> Entries:
    return [("120000", b"l", blob(c, b"/etc\0passwd"))]


def _deep(c: Path, outside: Path) -> Entries:
    entries: Entries = [("100644", b"f", blob(c, b"bottom"))]
    for _ in range(200):
        entries = [("40000", b"d", tree(c, entries))]
    return entries


class Build(Protocol):
    """Builds an attack's top tree in the clone ``c``, its links aimed at ``outside``."""

    def __call__(self, c: Path, outside: Path) -> Entries: ...


#: attack -> (its builder, the path its refusal names, the reason)
HOSTILE: dict[str, tuple[Build, str, str]] = {
    "link_then_tree": (_link_then_tree, "x", "is listed twice"),
    "tree_then_link": (_tree_then_link, "x", "is listed twice"),
    "slash_in_name": (_slash_in_name, "x/planted", "passes through 'x', a link"),
    "twice": (_twice, "a", "is listed twice"),
    "dotdot": (_dotdot, "../planted", "holds the name '..'"),
    "dot_git": (_dot_git, ".GIT", "holds the name '.GIT'"),
    "missing": (_missing, "gone", "is missing from the clone"),
    "nul_link": (_nul_link, "l", "is a link to an empty or NUL name"),
    "deep": (_deep, "/".join(["d"] * 129), "is more than 128 folders deep"),
}


def deep_folder(top: Path, depth: int, name: str = "d") -> Path:
    """A folder ``depth`` folders deep, made by descriptor (its path may pass PATH_MAX)."""
    top.mkdir()
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(depth):
        os.mkdir(name, dir_fd=fd)
        below = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = below
    os.close(os.open("f", os.O_WRONLY | os.O_CREAT, dir_fd=fd))
    os.close(fd)
    return top


def copies(spec: dict[str, Any]) -> dict[str, Any]:
    """In the script: each snapshot copied, then a copy its agent left 1,100 folders deep
    (past the recursion limit and PATH_MAX, a folder unreadable) removed; what each gave
    and what was left behind."""
    from pytest_prompteval.core.errors import PromptevalError
    from pytest_prompteval.sandbox.workspace import Copy, Snapshot

    tempfile.tempdir = spec["tmp"]
    snapshots = {
        name: Snapshot(git=Path(clone), ref="main") for name, clone in spec["clones"].items()
    }
    snapshots["deep_folder"] = Snapshot(folder=Path(spec["deep_folder"]))
    outcomes = {}
    for name, snapshot in snapshots.items():
        try:
            with Copy(snapshot):
                outcomes[name] = "copied"
        except PromptevalError as exc:
            outcomes[name] = str(exc)
        except Exception as exc:  # reported: the test fails on it
            outcomes[name] = f"{type(exc).__name__}: {exc}"
    copy = Copy(Snapshot(folder=Path(spec["clones"]["twice"])))  # any folder will do
    deep_folder(copy.path / "agent", 1100, "dddd")
    (copy.path / "agent" / "dddd" / "dddd").chmod(0)
    (copy.path / "agent").chmod(0o500)
    try:
        copy.remove()
        outcomes["agent_tree"] = "removed"
    except Exception as exc:  # reported: the test fails on it
        outcomes["agent_tree"] = f"{type(exc).__name__}: {exc}"
    return {
        "outcomes": outcomes,
        "outside": sorted(os.listdir(spec["outside"])),
        "left": sorted(os.listdir(spec["tmp"])),
    }


@pytest.fixture(scope="module")
def hostile() -> Iterator[dict[str, Any]]:
    """The hostile clones, a folder 1,100 deep, and the folder their links point at, where
    ``nobody`` may read them (not under pytest's temporary root: private to its user)."""
    workdir = Path(tempfile.mkdtemp(prefix="prompteval-snapshots-"))
    try:
        outside, clones = workdir / "outside", workdir / "clones"
        outside.mkdir()
        clones.mkdir()
        spec = {
            "workdir": str(workdir),
            "outside": str(outside),
            "clones": {
                name: str(clone_of(clones, name, functools.partial(build, outside=outside)))
                for name, (build, _, _) in HOSTILE.items()
            },
        }
        for folder, _, names in os.walk(workdir):
            os.chmod(folder, 0o777)
            for name in names:
                os.chmod(os.path.join(folder, name), 0o644)
        spec["deep_folder"] = str(deep_folder(workdir / "deep", 1100))
        yield spec
    finally:
        remove_tree(str(workdir))  # shutil.rmtree recurses: the deep folder is past its limit


AS_ROOT_AND_UNPRIVILEGED = pytest.mark.parametrize(
    "unprivileged", [pytest.param(False, id="root"), pytest.param(True, id="unprivileged")]
)


@AS_ROOT_AND_UNPRIVILEGED
def test_a_hostile_snapshot_is_refused_and_writes_nothing_outside(
    hostile: dict[str, Any], unprivileged: bool
) -> None:
    from tests.test_sandbox_hostile import interpreter_for, run_script

    if not unprivileged and os.geteuid() != 0:
        pytest.skip("the root mode needs root")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    python, user = interpreter_for(env, unprivileged)
    tmp = tempfile.mkdtemp(prefix="tmp-", dir=hostile["workdir"])
    os.chmod(tmp, 0o777)
    report = run_script([python, __file__, json.dumps({**hostile, "tmp": tmp})], env, user)
    outcomes = report["outcomes"]
    assert report["outside"] == []
    for name, (_, path, reason) in HOSTILE.items():
        start = f"repository snapshot {hostile['clones'][name]}@main: {path!r} {reason}"
        assert outcomes[name].startswith(start), (name, outcomes[name])
        assert outcomes[name].endswith("; refused") and "\n" not in outcomes[name]
    deep = f"repository snapshot {hostile['deep_folder']}: '{'/'.join(['d'] * 129)}' is more"
    assert outcomes["deep_folder"].startswith(deep), outcomes["deep_folder"]
    assert outcomes["agent_tree"] == "removed"
    assert report["left"] == []  # every refused copy and the agent's deep tree removed


def test_objects_past_the_bounds_are_refused_and_nothing_is_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a blob of 512 MiB of zeros packs into half a megabyte: the sizes are read first
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()

    def wide(c: Path) -> Entries:  # one small tree reused: 101 x 1,001 entries listed
        empty = blob(c, b"")
        folder = tree(c, [("100644", f"f{i:04d}".encode(), empty) for i in range(1000)])
        return [("40000", f"t{i:03d}".encode(), folder) for i in range(101)]

    def total(c: Path) -> Entries:
        part = zeros(c, MAX_FILE)
        return [("100644", f"part{i:02d}".encode(), part) for i in range(11)]

    refused = {
        "big": (
            lambda c: [("100644", b"zeros.bin", zeros(c, MAX_FILE + 1))],
            "'zeros.bin' is 104,857,601 bytes, past 104,857,600 for a file",
        ),
        "total": (total, "'part10' takes the snapshot past 1,073,741,824 bytes in all"),
        "wide": (wide, "'t099/f0900' is past the 100,000 entries a snapshot may hold"),
        "long_link": (
            lambda c: [("120000", b"l", blob(c, b"x/" * 2500))],
            "'l' is 5,000 bytes, past 4,095 for a link's target",
        ),
    }
    for name, (build, reason) in refused.items():
        clone = clone_of(tmp_path, name, build)
        with pytest.raises(SnapshotError) as caught:
            Copy(Snapshot(git=clone, ref="main"))
        assert str(caught.value) == f"repository snapshot {clone}@main: {reason}; refused"
    assert os.listdir(tmp_path / "tmp") == []


def test_a_snapshot_is_copied_as_it_is(tmp_path: Path) -> None:
    # contents streamed in chunks come out whole; links are copied as links, never
    # followed; submodules, devices and FIFOs are left out
    data = os.urandom(3 * MiB + 5)  # past a few chunks
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("not copied")

    def build(c: Path) -> Entries:
        nested = tree(c, [("100644", b"c.txt", blob(c, b"c\n"))])
        return [
            ("100644", b"data.bin", blob(c, data)),
            ("100755", b"run", blob(c, b"#!/bin/sh\n")),
            ("120000", b"abs", blob(c, str(outside).encode())),
            ("160000", b"module", "2" * 40),
            ("40000", b"a", tree(c, [("40000", b"b", nested)])),
        ]

    clone = clone_of(tmp_path, "clone", build)
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "data.bin").write_bytes(data)
    (folder / "run").write_text("#!/bin/sh\n")
    (folder / "run").chmod(0o755)
    (folder / "abs").symlink_to(outside)
    (folder / "secret").symlink_to(outside / "secret")
    os.mkfifo(folder / "fifo")
    (folder / "a" / "b").mkdir(parents=True)
    (folder / "a" / "b" / "c.txt").write_text("c\n")
    for snapshot in (Snapshot(git=clone, ref="main"), Snapshot(folder=folder)):
        with Copy(snapshot) as copy:
            # a git snapshot's base, for the verdict's diff, is a second copy
            for top in (copy.path, copy.base()) if snapshot.git else (copy.path,):
                assert (top / "data.bin").read_bytes() == data
                assert (top / "a" / "b" / "c.txt").read_text() == "c\n"
                assert (top / "run").stat().st_mode & 0o777 == 0o755
                assert (top / "data.bin").stat().st_mode & 0o777 == 0o644
                assert os.readlink(top / "abs") == str(outside)
                assert not (top / "module").exists() and not (top / "fifo").exists()
            if snapshot.folder:
                assert os.readlink(copy.path / "secret") == str(outside / "secret")


def test_a_file_read_at_a_ref_is_bounded_as_the_checkouts_is(tmp_path: Path) -> None:
    # a prompt version NAME@REF: the blob is read no further than MAX_FILE_BYTES
    def build(c: Path) -> Entries:
        prompts = [("100644", b"current.yaml", zeros(c, MAX_FILE_BYTES + 1))]
        return [("40000", b"prompts", tree(c, prompts))]

    clone = clone_of(tmp_path, "clone", build)
    with pytest.raises(GitRefError) as caught:
        load_version_at(clone, clone / "prompts", "current@main")
    assert caught.value.message == (
        f"prompt version 'current@main': {clone}/prompts/current.yaml at main is larger "
        "than 16,777,216 bytes"
    )


def test_a_copy_left_past_the_recursion_limit_is_given_to_the_next_sandbox(
    tmp_path: Path,
) -> None:
    # as root, the verdict's sandbox takes the copy as the agent left it: 1,100 folders
    # deep, past PATH_MAX; its own user can still write at the bottom (it was an error)
    from pytest_prompteval.sandbox.workspace import Executor, Workspace

    if os.geteuid() != 0:
        pytest.skip("the sandbox's own user is root's to give")
    (tmp_path / "README").write_text("a project\n")
    with Copy(Snapshot(folder=tmp_path)) as copy:
        deep_folder(copy.path / "agent", 1100, "dddd")
        with Workspace(copy.path) as workspace:
            run = Executor(workspace, {"bash": "bash_20250124"}, timeout=60.0)
            write = "find agent -name f -execdir sh -c 'echo x > g && cat g' ';'"
            assert run("bash", {"command": write}).content == "x\n"


if __name__ == "__main__":
    print(json.dumps(copies(json.loads(sys.argv[1]))))
