"""The verdict's diff is bounded whatever the agent left: huge, binary, many or oddly named
files, and the reader of a sandbox's answers holds at most its line limit."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from pytest_prompteval.core.bounds import MAX_DIFF
from pytest_prompteval.core.result import RepoResult
from pytest_prompteval.sandbox.client import LineReader, LineTooLong
from pytest_prompteval.sandbox.treediff import DIFF_BUDGET, FILE_BUDGET, LISTED, diff, walk

from .test_repo_sandbox import make_project


def trees(tmp_path: Path) -> tuple[Path, Path]:
    base, top = tmp_path / "base", tmp_path / "top"
    for folder in (base, top):
        folder.mkdir()
        (folder / "kept.py").write_text("same\n")
    return base, top


def test_six_16_mb_files_make_a_diff_within_the_budget_naming_each(tmp_path: Path) -> None:
    from pytest_prompteval.sandbox.workspace import Copy, Snapshot, Workspace

    (tmp_path / "base").mkdir()
    base = make_project(tmp_path / "base")
    line = b"x" * 99 + b"\n"
    with Copy(Snapshot(folder=base)) as copy:
        for number in range(6):
            with open(copy.path / f"big{number}.txt", "wb") as file:
                for _ in range(16):
                    file.write(line * 10_000)  # 16 MB, in lines: text a diff would show
        (copy.path / "src" / "m.py").write_text("def f():\n    return 2\n")
        with Workspace(copy.path, base=base) as workspace:
            shown = workspace.diff()
    assert len(shown.encode()) <= DIFF_BUDGET
    assert "-    return 1\n+    return 2\n" in shown
    for number in range(6):
        assert f"Large file big{number}.txt added (16,000,000 bytes), diff not shown\n" in shown


def test_binary_and_long_line_files_are_summarised(tmp_path: Path) -> None:
    base, top = trees(tmp_path)
    (base / "image.png").write_bytes(b"\x89PNG\0abc")
    (top / "image.png").write_bytes(b"\x89PNG\0abcde")
    (top / "one_line.txt").write_bytes(b"y" * (2 * FILE_BUDGET))  # never read whole
    (base / "wide.txt").write_text("a" * (FILE_BUDGET - 10) + "\n")
    (top / "wide.txt").write_text("b" * (FILE_BUDGET - 10) + "\n")  # its diff: twice that
    shown = diff(str(base), str(top))
    assert shown == (
        "Binary file image.png changed (8 -> 10 bytes)\n"
        f"Large file one_line.txt added ({2 * FILE_BUDGET:,} bytes), diff not shown\n"
        f"Large diff of wide.txt: file changed ({FILE_BUDGET - 9:,} -> {FILE_BUDGET - 9:,} "
        f"bytes), its diff over {FILE_BUDGET:,} bytes not shown\n"
    )


def test_past_the_budget_the_files_left_out_are_named_and_counted(tmp_path: Path) -> None:
    base, top = trees(tmp_path)
    count = 2 * DIFF_BUDGET // 1000
    for number in range(count):
        (top / f"f{number:05d}.txt").write_text("z" * 900 + "\n")
    shown = diff(str(base), str(top))
    assert len(shown.encode()) <= DIFF_BUDGET
    note = shown[shown.index("[diff stopped") :]
    shown_files = shown.count("+++ b/f")
    left = count - shown_files
    assert note.startswith(f"[diff stopped at its budget ({DIFF_BUDGET:,} bytes, 10 s of CPU): ")
    assert note.count(f"{left:,} more changed files not shown: ") == 1
    assert note.count("f0") == LISTED and note.endswith(f" and {left - LISTED:,} more]\n")
    assert f"f{shown_files:05d}.txt" in note  # the first one left out is listed


def test_a_diff_that_would_take_long_is_summarised_and_the_rest_left_out(
    tmp_path: Path,
) -> None:
    # difflib is quadratic when few distinct lines recur often: minutes of CPU for 256 KiB
    base, top = trees(tmp_path)
    (base / "a_slow.txt").write_text("".join(f"{i % 150}\n" for i in range(20_000)))
    (top / "a_slow.txt").write_text("".join(f"{i * 7 % 150}\n" for i in range(20_000)))
    (top / "b_next.txt").write_text("next\n")
    shown = diff(str(base), str(top), seconds=0.01)
    assert shown == (
        "Slow diff of a_slow.txt: file changed (65,310 -> 65,329 bytes), not shown (the "
        "diff's CPU time is spent)\n"
        f"[diff stopped at its budget ({DIFF_BUDGET:,} bytes, 0.01 s of CPU): 1 more changed "
        "file not shown: b_next.txt]\n"
    )


def test_the_walk_lists_at_most_its_limit_of_entries(tmp_path: Path) -> None:
    for number in range(10):
        (tmp_path / f"f{number}").write_text("")
    listed, stopped, _ = walk(str(tmp_path), limit=4)
    assert (sorted(listed), stopped) == (["f0", "f1", "f2", "f3"], True)
    assert walk(str(tmp_path), limit=10)[1] is False


def test_a_name_cannot_forge_a_header_and_is_quoted_as_git_quotes_it(tmp_path: Path) -> None:
    base, top = trees(tmp_path)
    (top / "x\n+++ evil.py").write_text("hi\n")
    (top / 'q"\\\x1b').write_text("hi\n")
    shown = diff(str(base), str(top))
    assert '+++ "b/x\\n+++ evil.py"\n' in shown
    assert '+++ "b/q\\"\\\\\\033"\n' in shown
    assert not any(line.startswith("+++ evil") for line in shown.splitlines())


def test_a_deep_tree_is_walked_without_recursion(tmp_path: Path) -> None:
    base, top = trees(tmp_path)
    folders = [os.open(top, os.O_PATH)]
    for _ in range(1200):  # deeper than Python's recursion limit
        os.mkdir("d", dir_fd=folders[-1])
        folders.append(os.open("d", os.O_PATH, dir_fd=folders[-1]))
    leaf = os.open("leaf.txt", os.O_WRONLY | os.O_CREAT, dir_fd=folders[-1])
    os.write(leaf, b"deep\n")
    os.close(leaf)
    try:
        shown = diff(str(base), str(top))
    finally:  # pytest's clean-up of its folders recurses
        os.unlink("leaf.txt", dir_fd=folders[-1])
        for inner, outer in zip(reversed(folders[1:]), reversed(folders[:-1]), strict=True):
            os.close(inner)
            os.rmdir("d", dir_fd=outer)
        os.close(folders[0])
    assert "/d/leaf.txt\n@@ -0,0 +1 @@\n+deep\n" in shown


def test_a_result_read_back_keeps_at_most_the_bound_of_a_diff() -> None:
    kept = RepoResult(True, {}, [], [], 1.0, 1.0, diff="+" * (3 * MAX_DIFF))
    assert len(kept.diff) < MAX_DIFF + 100 and kept.diff.endswith("bound]\n")


def test_a_line_longer_than_the_limit_is_an_error_not_a_growing_buffer() -> None:
    read, write = os.pipe()
    reader = LineReader(limit=1000)
    writer = threading.Thread(target=os.write, args=(write, b"ok\n" + b"a" * 5000 + b"\nnext\n"))
    writer.start()
    with open(read, "rb", buffering=0) as stream:
        assert reader.next(stream, 30.0) == "ok"
        with pytest.raises(LineTooLong, match="more than 1,000 bytes"):
            reader.next(stream, 30.0)
        assert len(reader._buffer) == 0
    writer.join()
    os.close(write)
