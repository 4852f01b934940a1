"""hypothesis's plugin is left out of the summary of a prompt run that never imported it (its
summary would import the whole library), and kept wherever it may have something to say."""

from __future__ import annotations

import pytest

from .conftest import copy_compat

REPORT = """
import sys

def pytest_unconfigure(config):
    registered = config.pluginmanager.get_plugin("hypothesispytest") is not None
    print(f"IMPORTED {'hypothesis' in sys.modules} REGISTERED {registered}")
"""


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    copy_compat(pytester, "2026-11")
    conftest = pytester.path / "conftest.py"
    existing = conftest.read_text() if conftest.exists() else ""
    conftest.write_text(existing + REPORT)
    return pytester


def test_a_prompt_run_that_never_used_hypothesis_does_not_import_it(
    suite: pytest.Pytester,
) -> None:
    result = suite.runpytest_subprocess("--prompt=current", "--collect-only", "-q", "-s")
    result.stdout.fnmatch_lines(["IMPORTED False REGISTERED False"])


def test_the_plugin_stays_where_a_test_used_hypothesis(suite: pytest.Pytester) -> None:
    suite.makepyfile(
        test_props="""
        from hypothesis import given, strategies as st

        @given(st.integers())
        def test_int(n):
            assert isinstance(n, int)
        """
    )
    result = suite.runpytest_subprocess(
        "--prompt=current", "-k", "test_int", "-s", "--hypothesis-show-statistics"
    )
    result.stdout.fnmatch_lines(["*Hypothesis Statistics*", "IMPORTED True REGISTERED True"])


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["--collect-only", "-q"], id="no prompt run"),
        pytest.param(
            ["--prompt=current", "--collect-only", "-q", "--hypothesis-show-statistics"],
            id="a hypothesis option",
        ),
    ],
)
def test_the_plugin_stays_outside_a_prompt_run_or_when_asked_for(
    suite: pytest.Pytester, args: list[str]
) -> None:
    result = suite.runpytest_subprocess(*args, "-s")
    result.stdout.fnmatch_lines(["IMPORTED * REGISTERED True"])
