"""The verdict of a repository task decides with the test files and the test infrastructure
as the case author left them: whatever the agent did to the tests, their conftest.py,
pytest's ini sections or a module shadowing pytest, only its change of the code counts.

Each agent here is a shell command run in the item's sandbox, as the agent's tools run."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from pytest_prompteval.core.cases import load_case_file
from pytest_prompteval.core.errors import PromptevalError, VerdictError
from pytest_prompteval.core.patches import PatchError, patch_paths
from pytest_prompteval.core.repocases import RepoCase, parse_repo_case
from pytest_prompteval.sandbox.workspace import Copy, Workspace
from pytest_prompteval.scoring.repo import RepoVerdict, files_of_tests, snapshot_of, verdict

CODE = 'def slugify(text):\n    return "-".join(text.strip().lower().split(" "))\n'
FIXED = CODE.replace('split(" ")', "split()")
TESTS = 'from slug import slugify\n\n\ndef test_basic():\n    assert slugify("A b") == "a-b"\n'
# the hidden test patch adds the failing test, and a new file with another
TEST_PATCH = """\
diff --git a/tests/test_slug.py b/tests/test_slug.py
--- a/tests/test_slug.py
+++ b/tests/test_slug.py
@@ -4,2 +4,6 @@ from slug import slugify
 def test_basic():
     assert slugify("A b") == "a-b"
+
+
+def test_double_space():
+    assert slugify("a  b") == "a-b"
diff --git a/tests/test_new.py b/tests/test_new.py
new file mode 100644
--- /dev/null
+++ b/tests/test_new.py
@@ -0,0 +1,5 @@
+from slug import slugify
+
+
+def test_triple_space():
+    assert slugify("a   b") == "a-b"
"""
CASE = """cases:
- id: slug
  kind: repo
  repo: slugify
  input: {issue: double spaces}
  test_patch: tests.diff
  fail_to_pass: [tests/test_slug.py::test_double_space, tests/test_new.py::test_triple_space]
  pass_to_pass: [tests/test_slug.py::test_basic]
"""
FIX = f"cat > slug.py <<'EOF'\n{FIXED}EOF\n"
PASSING_HOOK = """\
import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    report.outcome = "passed"
"""

FIXED_IN_TESTS = "lambda t: '-'.join(t.lower().split())"
LISTED = (
    "tests/test_slug.py::test_double_space",
    "tests/test_new.py::test_triple_space",
    "tests/test_slug.py::test_basic",
)
# the standard library's module, loaded from behind the agent's, which adds its plugin
SHADOW = """\
import os, sys

sys.argv[1:1] = ["-p", "tests.forged"]
saved = sys.path[:]
sys.path[:] = [p for p in sys.path if p not in ("", os.getcwd())]
del sys.modules[__name__]
import argparse
sys.path[:] = saved
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    write(tmp_path / "slugify" / "slug.py", CODE)
    write(tmp_path / "slugify" / "tests" / "test_slug.py", TESTS)
    write(tmp_path / "tests.diff", TEST_PATCH)
    write(tmp_path / "cases.yaml", CASE)
    return tmp_path


def case_of(project: Path, extra: str = "") -> RepoCase:
    (project / "cases.yaml").write_text(CASE + extra)
    (case,) = load_case_file(project / "cases.yaml", root=project).cases
    return parse_repo_case(case)


def after(case: RepoCase, *commands: str) -> RepoVerdict:
    """The verdict on a copy the agent's ``commands`` left."""
    with Copy(snapshot_of(case)) as copy:
        with Workspace(copy.path) as workspace:
            for command in commands:
                done = workspace.bash(command, 30)
                assert done["status"] == 0, done["output"]
        return verdict(case, copy)


def test_an_honest_fix_is_resolved_and_no_fix_is_not(project: Path) -> None:
    case = case_of(project)
    assert case.test_files == ("tests/test_slug.py", "tests/test_new.py")
    fixed = after(case, FIX)
    assert fixed.passed and fixed.restored == ()
    assert not after(case).passed


def test_an_agent_that_rewrites_the_test_file_is_not_resolved(project: Path) -> None:
    rewritten = "printf 'def test_double_space():\\n    pass\\n' > tests/test_slug.py"
    found = after(case_of(project), rewritten)
    assert not found.passed
    assert found.outcomes["tests/test_slug.py::test_double_space"] == "FAILED"
    assert "def test_double_space" in found.diff  # the diff is still the agent's


def test_an_agent_that_creates_the_file_the_patch_adds_is_not_resolved(project: Path) -> None:
    # without the restore, the patch's new file fails to apply over it and the agent's runs
    created = "printf 'def test_triple_space():\\n    pass\\n' > tests/test_new.py"
    found = after(case_of(project), created)
    assert found.outcomes["tests/test_new.py::test_triple_space"] == "FAILED"
    assert not found.passed


def test_an_agent_that_links_the_test_file_to_its_own_is_not_resolved(project: Path) -> None:
    linked = (
        "mkdir -p mine && printf 'def test_double_space():\\n    pass\\n' > mine/t.py"
        " && rm tests/test_slug.py && ln -s ../mine/t.py tests/test_slug.py"
    )
    found = after(case_of(project), linked)
    assert found.outcomes["tests/test_slug.py::test_double_space"] == "FAILED"
    # its folder a link to its own: the folder comes back a folder
    moved = "mkdir -p mine && printf 'def test_basic():\\n    pass\\n' > mine/test_slug.py"
    found = after(case_of(project), moved + " && rm -r tests && ln -s mine tests")
    assert found.outcomes["tests/test_slug.py::test_double_space"] == "FAILED"


def test_an_honest_agent_that_added_its_own_regression_test_is_resolved(project: Path) -> None:
    own = (
        "cat >> tests/test_slug.py <<'EOF'\n\n\ndef test_mine():\n"
        '    assert slugify("x  y") == "x-y"\nEOF\n'
    )
    found = after(case_of(project), FIX, own)
    assert found.passed and found.restored == ()
    assert "+def test_mine():" in found.diff


def test_a_conftest_that_forces_passes_is_neutralised_and_named(project: Path) -> None:
    hook = f"cat > conftest.py <<'EOF'\n{PASSING_HOOK}EOF\n"
    deep = f"mkdir -p tests && cat > tests/conftest.py <<'EOF'\n{PASSING_HOOK}EOF\n"
    found = after(case_of(project), hook, deep)
    assert not found.passed
    assert found.restored == ("conftest.py", "tests/conftest.py")
    assert (
        "test infrastructure changed by the agent: conftest.py, tests/conftest.py "
        "(restored for the verdict)" in found.message()
    )
    assert found.to_json()["restored"] == ["conftest.py", "tests/conftest.py"]
    assert '+    report.outcome = "passed"' in found.diff  # the diff is the agent's


def test_agent_may_change_lets_a_conftest_change_through(project: Path) -> None:
    # the fix really is in conftest.py: a fixture the tests use
    write(project / "slugify" / "conftest.py", "")
    case = case_of(project, "  agent_may_change: [conftest.py]\n")
    found = after(case, f"cat > conftest.py <<'EOF'\n{PASSING_HOOK}EOF\n")
    assert found.passed and found.restored == ()
    # inside the test folder, which is otherwise restored whole
    case = case_of(project, "  agent_may_change: [tests/conftest.py]\n")
    found = after(case, f"cat > tests/conftest.py <<'EOF'\n{PASSING_HOOK}EOF\n")
    assert found.passed and found.restored == ()


@pytest.mark.parametrize(
    ("name", "text"),
    [
        # a module shadowing pytest itself, first on sys.path with `python -m pytest`
        ("pytest.py", f"for test in {LISTED}:\n    print('PASSED', test)\n"),
        # ini options: a -p of the agent's plugin
        ("pytest.ini", "[pytest]\naddopts = -p tests.forged\n"),
        ("tox.ini", "[pytest]\naddopts = -p tests.forged\n"),
        ("setup.cfg", "[tool:pytest]\naddopts = -p tests.forged\n"),
        ("pyproject.toml", '[tool.pytest.ini_options]\naddopts = "-p tests.forged"\n'),
        # a standard library module pytest imports after the working folder joins sys.path
        ("argparse.py", SHADOW),
        # a listed test's package, imported before it
        ("tests/__init__.py", f"import slug\nslug.slugify = {FIXED_IN_TESTS}\n"),
    ],
)
def test_test_infrastructure_the_agent_wrote_is_neutralised(
    project: Path, name: str, text: str
) -> None:
    forged = f"cat > tests/forged.py <<'EOF'\n{PASSING_HOOK}EOF\n"
    found = after(case_of(project), forged, f"cat > {name} <<'EOF'\n{text}EOF\n")
    assert not found.passed
    assert found.outcomes["tests/test_slug.py::test_double_space"] == "FAILED"
    if name != "tests/__init__.py":  # a listed test's folder: restored as a test file
        assert found.restored == (name,)


def test_an_honest_change_beside_pytests_section_stays(project: Path) -> None:
    write(
        project / "slugify" / "pyproject.toml",
        '[project]\nname = "slug"\n\n[tool.pytest.ini_options]\naddopts = "-q"\n',
    )
    change = 'sed -i \'s/name = "slug"/name = "slugify"/\' pyproject.toml'
    found = after(case_of(project), FIX, change)
    assert found.passed and found.restored == ()


def test_a_test_patch_that_does_not_apply_is_an_error_of_the_item(project: Path) -> None:
    (project / "tests.diff").write_text(TEST_PATCH.replace('assert slugify("A b")', "assert x"))
    with pytest.raises(VerdictError, match=r"test_patch does not apply .*patch failed"):
        after(case_of(project), FIX)


def test_a_patch_is_read_strictly() -> None:
    renamed = (
        "diff --git a/old name.py b/new name.py\nsimilarity index 90%\n"
        "rename from old name.py\nrename to new name.py\n"
        'diff --git "a/tab\\there.py" "b/tab\\there.py"\ndeleted file mode 100644\n'
        "diff --git a/img.png b/img.png\nGIT binary patch\nliteral 3\nKcmZ?wbN|8\n\n"
        "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1,2 +1 @@\n"
        "--- not a header\n-+++ nor this\n+new\n"
    )
    assert patch_paths(renamed) == ("old name.py", "new name.py", "tab\there.py", "img.png", "x.py")
    for hostile in ("a/../../etc/passwd", "/etc/passwd", "a/.git/config", "noprefix"):
        with pytest.raises(PatchError):
            patch_paths(f"--- {hostile}\n+++ {hostile}\n@@ -1 +1 @@\n-a\n+b\n")
    with pytest.raises(PatchError, match="no file"):
        patch_paths("just text\n")


@pytest.mark.parametrize(
    ("extra", "error"),
    [
        ("  agent_may_change: conftest.py\n", "agent_may_change: expected a list of paths"),
        ("  agent_may_change: [../conftest.py]\n", "agent_may_change: '../conftest.py'"),
        ("  agent_may_chang: [conftest.py]\n", "unknown field 'agent_may_chang'; did you mean"),
    ],
)
def test_a_bad_agent_may_change_is_one_line_naming_file_and_line(
    project: Path, extra: str, error: str
) -> None:
    with pytest.raises(PromptevalError) as raised:
        case_of(project, extra)
    assert f"cases.yaml:9: case 'slug': {error}" in str(raised.value)


def test_a_test_patch_naming_a_path_outside_is_refused_by_file_and_line(project: Path) -> None:
    (project / "tests.diff").write_text("--- a/../x\n+++ b/../x\n@@ -1 +1 @@\n-a\n+b\n")
    with pytest.raises(PromptevalError, match=r"cases.yaml:6: case 'slug': test_patch: names a"):
        case_of(project)


def test_the_tests_helpers_and_data_are_the_authors(project: Path) -> None:
    # the listed test reads a helper and an expected value from its folder
    write(project / "slugify" / "tests" / "expected.txt", "a-b\n")
    write(
        project / "slugify" / "tests" / "helpers.py",
        "from pathlib import Path\n\n\ndef expected():\n"
        "    return (Path(__file__).parent / 'expected.txt').read_text().strip()\n",
    )
    write(
        project / "slugify" / "tests" / "test_read.py",
        "from slug import slugify\nfrom tests.helpers import expected\n\n\n"
        'def test_read():\n    assert slugify("a  b") == expected()\n',
    )
    case = case_of(project)
    case = dataclasses.replace(case, fail_to_pass=("tests/test_read.py::test_read",))
    assert after(case, FIX).passed
    data = "printf 'a--b\\n' > tests/expected.txt"
    helper = "printf 'def expected():\\n    return \"a--b\"\\n' > tests/helpers.py"
    for forged in (data, helper):
        found = after(case, forged)
        assert found.outcomes["tests/test_read.py::test_read"] == "FAILED", forged


def test_folders_the_agent_closed_do_not_make_the_verdict_an_error(project: Path) -> None:
    nested = "mkdir -p tests/a/b && echo > tests/a/b/conftest.py && chmod 000 tests/a"
    closed = "echo > conftest.py && chmod 000 tests && chmod 555 ."
    found = after(case_of(project), FIX, nested, closed)
    assert found.passed and found.restored == ("conftest.py", "tests/a/b/conftest.py")
    # nor hide a change from the diff
    hidden = "mkdir -p mine && echo 'x = 1' > mine/m.py && chmod 000 mine"
    assert "+++ b/mine/m.py\n@@ -0,0 +1 @@\n+x = 1" in after(case_of(project), hidden).diff


def test_a_tree_deeper_than_the_recursion_limit_makes_no_error(project: Path) -> None:
    deep = "d=$(printf 'x/%.0s' $(seq 1200)); mkdir -p $d && echo 'y = 1' > ${d}deep.py"
    found = after(case_of(project), FIX, deep)  # the diff, the restore and the copy's removal
    assert found.passed and found.diff.count("x/") == 1200  # +++ b/x/.../deep.py


def test_a_copy_past_the_walks_bound_fails_the_agent_and_makes_no_error(project: Path) -> None:
    # restoring the test files walks the copy: millions of files took it past the time the
    # verdict waits, an error of the item; past the bound the agent fails instead
    case = case_of(project)
    with Copy(snapshot_of(case)) as copy:
        with Workspace(copy.path) as workspace:
            for command in (FIX, "mkdir many && touch many/f{1..60}"):
                assert workspace.bash(command, 30)["status"] == 0
        refused = verdict(case, copy, limit=50)
        fixed = verdict(case, copy, limit=1000)
    said = (
        "the tests were not run: /repo holds more than 50 entries (files and folders): no "
        "more are walked to restore the test files"
    )
    assert not refused.passed and refused.broken == said
    assert refused.message().startswith(said + "\nfail_to_pass not fixed: ")
    assert "+++ b/slug.py" in refused.diff  # the diff is still the agent's
    assert fixed.passed


#: A tree past PATH_MAX (4,096 bytes), a file at its bottom.
DEEP = (
    'python3 -c \'import os\nfor _ in range(2100): os.mkdir("x"); os.chdir("x")\n'
    'open("deep.py", "w").write("y = 1\\n")\''
)


def test_a_path_past_path_max_is_named_by_the_diff_and_fails_the_agent(project: Path) -> None:
    # no call reaches a file there: the diff skipped it without a word (a change hidden),
    # the restore erred (the agent's failure an error of the item)
    found = after(case_of(project), FIX, DEEP)
    assert not found.passed
    assert found.broken is not None and found.broken.startswith(
        "the tests were not run: /repo holds a path longer than 4,095 bytes (x/x/x/"
    )
    assert found.broken.endswith("...): the test files cannot be restored past it")
    unread = [line for line in found.diff.splitlines() if line.startswith("[not compared: ")]
    assert len(unread) == 1 and unread[0].startswith("[not compared: x/x/x/")
    assert unread[0].endswith("... (unreadable)]")


#: 120 MB in three files the sandbox may write (64 MiB each at most).
LARGE = "for i in 1 2 3; do head -c 40000000 /dev/zero | tr '\\0' x > {}/big$i; done"


def test_large_files_the_agent_left_make_the_restore_no_error(project: Path) -> None:
    # a test folder is compared with the snapshot's (all of it held at once: past the
    # sandbox's memory, an error of the item), and a path the case lets the agent change
    # kept aside (in the sandbox's /tmp, 64 MiB: full, an error too)
    fill = LARGE.format("tests")
    # pytest's section of a settings file is parsed (3,000,000 keys: past 64 MiB)
    keys = "python3 -c 'for i in range(3_000_000): print(f\"k{i} =\", i)' > pyproject.toml"
    found = after(case_of(project, "  memory_mb: 64\n"), FIX, fill, keys)
    assert found.passed and found.restored == ("pyproject.toml",)
    case = case_of(project, "  agent_may_change: [tests/data]\n")
    kept = after(case, FIX, "mkdir tests/data", LARGE.format("tests/data"), "ls tests/data")
    assert kept.passed and "Large file tests/data/big3 added (40,000,000 bytes)" in kept.diff


def test_the_test_folder_restored_is_the_nearest_one() -> None:
    files, folders = files_of_tests(
        ["numpy/testing/tests/test_utils.py::test_a", "test_top.py::t", "name (module.Class)"]
    )
    assert files == [
        "numpy/testing/tests",  # numpy/testing is code the fix may change
        "numpy/testing/tests/test_utils.py",
        "numpy/__init__.py",
        "numpy/testing/__init__.py",
        "numpy/testing/tests/__init__.py",
        "test_top.py",
    ]
    assert folders == ["numpy", "numpy/testing", "numpy/testing/tests"]
