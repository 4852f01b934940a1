"""A repository task's file-state assertions (``file_exists``, ``file_not_exists``,
``file_matches``, ``file_unchanged``) on the copy a scripted agent leaves, through the real
SDK on the loopback server: each result names the path and why, and no link the agent left
is followed."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from pytest_prompteval.core.patterns import pattern
from pytest_prompteval.sandbox import filestate
from pytest_prompteval.sandbox.filestate import glob_pattern
from pytest_prompteval.testing import AnthropicServer, ScriptedAgent, call

from .conftest import item_results
from .test_repo_items import make_project, replace

CASE = """\
cases:
- id: files
  kind: repo
  repo: ../repos/m
  input: {issue: "FILES: double(2) gives 5"}
  fail_to_pass: [tests/test_m.py::test_fixed]
  pass_to_pass: [tests/test_m.py::test_kept]
  timeout: 60
  assert:
  - {file_exists: 'out/*.py'}
  - {file_exists: src/x.py}
  - {file_not_exists: '**/*.orig'}
  - {file_not_exists: 'out/**'}
  - {file_matches: {path: out/answer.py, regex: 'result = \\d+'}}
  - {file_matches: {path: out/link.py, regex: 'double'}}
  - {file_matches: {path: via/test_m.py, regex: 'double'}}
  - {file_unchanged: tests/test_m.py}
  - {file_unchanged: m.py}
  - {file_unchanged: lib/util.py}
"""
AGENT = ScriptedAgent(
    {
        "FILES": [
            [replace("x + x + 1", "x + x")],
            # an answer file, and links the verdict's sandbox could follow to the snapshot
            # at /base: a file's, a folder's, and lib/ replaced by a link to its own
            [
                call(
                    "bash",
                    command="cd /repo && mkdir out && echo 'result = 42' > out/answer.py"
                    " && ln -s /base/m.py out/link.py && ln -s /base/tests via"
                    " && rm -r lib && ln -s /base/lib lib && ls -l",
                )
            ],
            ["Fixed."],
        ]
    }
)


def test_file_state_assertions_check_the_final_copy_and_follow_no_link(
    pytester: pytest.Pytester, anthropic_server: AnthropicServer
) -> None:
    anthropic_server.responder = AGENT
    repo = make_project(pytester.path, [])
    (repo / "lib").mkdir()
    (repo / "lib" / "util.py").write_text("HELPER = 1\n")
    (pytester.path / "prompt_cases" / "repo.yaml").write_text(CASE)
    reprec = pytester.inline_run("--prompt=fixer", "-p", "no:randomly")
    reprec.assertoutcome(failed=1)
    (result,) = item_results(reprec)
    assert result["repo"]["resolved"]
    checks = [(c["passed"], c["reason"]) for c in result["assertions"]]
    assert checks == [
        (True, "file_exists out/*.py: found out/answer.py, out/link.py"),
        (False, "file_exists src/x.py: no such file"),
        (True, "file_not_exists **/*.orig: no such file"),
        (False, "file_not_exists out/**: found out/answer.py, out/link.py"),
        (True, "file_matches out/answer.py: matches /result = \\d+/"),
        (False, "file_matches out/link.py: a link"),
        (False, "file_matches via/test_m.py: no such file"),
        (True, "file_unchanged tests/test_m.py: unchanged"),
        (False, "file_unchanged m.py: changed"),
        (False, "file_unchanged lib/util.py: removed"),
    ]


@pytest.mark.parametrize(
    ("glob", "matching", "not_matching"),
    [
        ("src/*.py", ["src/a.py"], ["src/b/a.py", "src/a.pyc", "xsrc/a.py"]),
        ("**/*.orig", ["a.orig", "x/y/a.orig"], ["a.orig/b", "a.origx"]),
        ("out/**", ["out/a", "out/b/c"], ["outx/a", "out"]),
        ("a?[!x].txt", ["ab1.txt"], ["abx.txt", "a/1.txt"]),
        ("(a+)+$.txt", ["(a+)+$.txt"], ["aa.txt"]),  # regex characters are literal
    ],
)
def test_a_glob_matches_whole_paths_and_only_its_own_folders(
    glob: str, matching: list[str], not_matching: list[str]
) -> None:
    found = pattern(glob_pattern(glob))
    assert [p for p in matching if found.search(p)] == matching
    assert [p for p in not_matching if found.search(p)] == []


def test_a_glob_past_the_walks_bound_never_passes_as_absent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # an agent that buries a forbidden file past the entries the walk looks at
    for i in range(5):
        (tmp_path / f"a{i}.txt").write_text("")
    (tmp_path / "z.orig").write_text("")
    monkeypatch.setattr(filestate, "REPO", str(tmp_path))
    monkeypatch.setattr(filestate, "MAX_ENTRIES", 3)
    checks: list[Mapping[str, Any]] = [
        {"type": t, "path": "*.orig"} for t in ("file_not_exists", "file_exists")
    ]
    reasons = [(c["passed"], c["reason"]) for c in filestate.check(checks)["checks"]]
    assert reasons == [
        (False, "file_not_exists *.orig: none in the first 3 entries, the rest not looked at"),
        (False, "file_exists *.orig: none in the first 3 entries, the rest not looked at"),
    ]
