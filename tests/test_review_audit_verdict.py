"""Attacks on the verdict of a repository task by an agent set on being resolved without
the fix, or on making its failure read as an error of the case."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from .test_repo_verdict import (
    CASE,
    CODE,
    FIX,
    LISTED,
    PASSING_HOOK,
    TEST_PATCH,
    TESTS,
    after,
    case_of,
    write,
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    write(tmp_path / "slugify" / "slug.py", CODE)
    write(tmp_path / "slugify" / "tests" / "test_slug.py", TESTS)
    write(tmp_path / "tests.diff", TEST_PATCH)
    write(tmp_path / "cases.yaml", CASE)
    return tmp_path


def test_gitattributes_cannot_make_the_test_patch_fail(project: Path) -> None:
    case = case_of(project)
    found = after(case, "printf '* working-tree-encoding=UTF-16\\n' > .gitattributes")
    assert not found.passed


# a thousand conftest.py files, each 3,800 bytes deep: every one is named as restored
FLOOD = (
    'import os; deep = "/".join(["d" * 250] * 15); '
    '[os.makedirs(f"{deep}/{i}") or open(f"{deep}/{i}/conftest.py", "w").close() '
    "for i in range(1000)]"
)


def test_a_flood_of_restored_infrastructure_is_no_error(project: Path) -> None:
    case = case_of(project)
    found = after(case, f"python3 -c '{FLOOD}'")
    assert not found.passed
    assert found.restored[-1] == "and 980 more"
    assert len(found.restored) == 21
    assert all(len(p) <= 203 for p in found.restored)


# code that makes every test pass, in the pytest process that imports it
FORGE = """\
import gc

import pytest
from _pytest.config import Config


class _Forge:
    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        outcome.get_result().outcome = "passed"


for _config in [o for o in gc.get_objects() if isinstance(o, Config)]:
    _config.pluginmanager.register(_Forge())


def slugify(text):
    return text
"""


@pytest.mark.parametrize("where", [".git/objects/pack", "docs/.git"])
def test_code_the_diff_does_not_show_does_not_reach_the_tests(project: Path, where: str) -> None:
    """The verdict's diff leaves out every ``.git`` folder; what the tests import from one
    (here through a link) would forge the verdict where no diff shows it."""
    case = case_of(project)
    hide = (
        f"mkdir -p {where} && cat > {where}/x.py <<'EOF'\n{FORGE}EOF\n"
        f"rm slug.py && ln -s {where}/x.py slug.py"
    )
    found = after(case, hide)
    assert not found.passed or "gc.get_objects" in found.diff


@pytest.mark.parametrize("init", ["__init__.abi3.so", "__init__.so"])
def test_a_package_shadowing_pytest_by_an_extension_module_is_restored(
    project: Path, init: str
) -> None:
    """Python imports a folder whose ``__init__`` is an extension module as a package."""
    case = case_of(project)
    found = after(case, FIX, f"mkdir -p pytest && printf '\\177ELF' > pytest/{init}")
    assert found.restored == ("pytest",)
    assert found.passed


PLUGGED = 'pytest_plugins = ["slughelp.plugin"]\n'
FIXTURE = "import pytest\n\n\n@pytest.fixture\ndef text():\n    return 'a b'\n"


@pytest.mark.parametrize(
    ("loader", "text"),
    [("conftest.py", PLUGGED), ("pytest.ini", "[pytest]\naddopts = -p slughelp.plugin\n")],
)
def test_a_plugin_the_authors_settings_load_is_the_authors(
    project: Path, loader: str, text: str
) -> None:
    """``pytest_plugins`` in the snapshot's conftest.py, or ``-p`` in its ini, names test
    infrastructure too."""
    (project / "slugify" / loader).write_text(text)
    write(project / "slugify" / "slughelp" / "__init__.py", "")
    write(project / "slugify" / "slughelp" / "plugin.py", FIXTURE)
    case = case_of(project)
    forged = f"cat >> slughelp/plugin.py <<'EOF'\n{PASSING_HOOK}EOF\n"
    found = after(case, forged)
    assert not found.passed
    assert found.restored == ("slughelp/plugin.py",)
    allowed = case_of(project, "  agent_may_change: [slughelp/plugin.py]\n")
    assert after(allowed, FIX, "echo '# a helper' >> slughelp/plugin.py").passed


XFAILING = "import pytest\n\n\ndef slugify(text):\n    pytest.xfail('a known issue')\n"
# a helper of the test folder that calls pytest.xfail (the author's: it counts)
HELPER = "import pytest\n\n\ndef known(reason):\n    pytest.xfail(reason)\n"
XFAIL_PATCH = """\
diff --git a/tests/test_slug.py b/tests/test_slug.py
--- a/tests/test_slug.py
+++ b/tests/test_slug.py
@@ -4,2 +4,7 @@ from slug import slugify
 def test_basic():
     assert slugify("A b") == "a-b"
+
+
+def test_double_space():
+    from tests.helpers import known
+    known("the author's own expected failure")
"""


def test_an_xfail_called_by_the_code_under_test_does_not_pass(project: Path) -> None:
    case = case_of(project)
    found = after(case, f"cat > slug.py <<'EOF'\n{XFAILING}EOF\n")
    assert found.outcomes["tests/test_slug.py::test_double_space"] == "FAILED"
    assert not found.passed


def test_an_xfail_the_tests_call_still_counts_as_passing(project: Path) -> None:
    write(project / "slugify" / "tests" / "helpers.py", HELPER)
    write(project / "slugify" / "tests" / "__init__.py", "")
    (project / "tests.diff").write_text(XFAIL_PATCH)
    case = case_of(project)
    case = dataclasses.replace(case, fail_to_pass=LISTED[:1])
    found = after(case, FIX)
    assert found.outcomes["tests/test_slug.py::test_double_space"] == "XFAIL"
    assert found.passed
