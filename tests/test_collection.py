"""Collection: items per case x version, ids, markers, -k/-m, xdist, and leaving other suites be."""

from __future__ import annotations

import pytest

from .conftest import COMPAT_INI, copy_compat


def test_compat_2025_05_collects_24_items(pytester: pytest.Pytester) -> None:
    copy_compat(pytester, "2025-05")
    result = pytester.runpytest(
        "--prompt=current", "--compare", "v1_baseline", "--collect-only", "-q"
    )
    assert result.ret == 0
    ids = [line for line in result.outlines if "::" in line]
    assert len(ids) == 24
    assert "test_cases/basic_optimizations.yaml::basic_loop_001[current]" in ids
    assert "test_cases/basic_optimizations.yaml::basic_loop_001[v1_baseline]" in ids
    # Case-major, in file order, versions in the order given.
    assert ids[:2] == [
        "test_cases/audience_variations.yaml::factorial_beginner_assembly[current]",
        "test_cases/audience_variations.yaml::factorial_beginner_assembly[v1_baseline]",
    ]


def test_compat_2025_05_runs_offline_with_errors_by_class(
    pytester: pytest.Pytester, xdist_args: list[str]
) -> None:
    """With no recordings and no key every item says why: a missing template value fails the
    prompt, a missing recording is an error of the run; xdist workers must collect
    identically or xdist itself reports the difference."""
    copy_compat(pytester, "2025-05")
    result = pytester.runpytest("--prompt=current", "--compare", "v1_baseline", *xdist_args)
    result.assert_outcomes(failed=12, errors=12)
    # The 2025-05 `current` names {audience_guidance} and friends, which the seed's project
    # filled in code: without a hook each item says so; the baseline lacks recordings.
    result.stdout.fnmatch_lines(
        [
            "*prompteval summary*",
            "current: errors: template 12 (most common: template)",
            "v1_baseline: errors: missing_recording 12 (most common: missing_recording)",
        ]
    )


def test_compat_2026_11_collects_unchanged(pytester: pytest.Pytester) -> None:
    copy_compat(pytester, "2026-11")
    result = pytester.runpytest("--prompt=current", "--collect-only", "-q")
    assert result.ret == 0
    assert len([line for line in result.outlines if "::" in line]) == 21


def test_markers_filter_under_strict_markers(pytester: pytest.Pytester) -> None:
    copy_compat(pytester, "2025-05")
    result = pytester.runpytest(
        "--prompt=all",
        "--collect-only",
        "-q",
        "--strict-markers",
        "-m",
        "loop_optimization and beginner",
    )
    assert result.ret == 0
    ids = sorted(line for line in result.outlines if "::" in line)
    assert ids == [
        "test_cases/basic_optimizations.yaml::basic_loop_001[current]",
        "test_cases/basic_optimizations.yaml::basic_loop_001[v1_baseline]",
    ]


@pytest.mark.parametrize(
    ("expression", "count"), [("basic_loop_001", 2), ("current", 12), ("edge and v1", 3)]
)
def test_keyword_selection_on_ids(pytester: pytest.Pytester, expression: str, count: int) -> None:
    copy_compat(pytester, "2025-05")
    result = pytester.runpytest(
        "--prompt=current", "--compare=v1_baseline", "--collect-only", "-q", "-k", expression
    )
    assert len([line for line in result.outlines if "::" in line]) == count


def test_without_prompt_nothing_changes(pytester: pytest.Pytester) -> None:
    copy_compat(pytester, "2025-05")
    pytester.makepyfile(test_plain="def test_one():\n    assert True\n")
    result = pytester.runpytest("-q")
    result.assert_outcomes(passed=1)
    result.stdout.no_fnmatch_line("*prompteval summary*")


def test_case_directories_are_added_when_testpaths_miss_them(pytester: pytest.Pytester) -> None:
    copy_compat(pytester, "2025-05")
    pytester.makeini(COMPAT_INI + "testpaths = tests\n")
    pytester.mkdir("tests")
    pytester.path.joinpath("tests", "test_plain.py").write_text("def test_one():\n    pass\n")
    result = pytester.runpytest("--prompt=current", "--collect-only", "-q")
    assert len([line for line in result.outlines if "::" in line]) == 13


def test_recordings_and_results_are_not_walked(pytester: pytest.Pytester) -> None:
    """Thousands of recordings never hold a test; a file there that would break collection
    shows they are skipped (only while the plugin runs: plain pytest is left alone)."""
    copy_compat(pytester, "2025-05")
    for folder in ("prompt_recordings", "prompt_results"):
        pytester.mkdir(folder)
        pytester.path.joinpath(folder, "test_trap.py").write_text("raise SystemExit(3)\n")
    result = pytester.runpytest("--prompt=current", "--collect-only", "-q")
    assert result.ret == 0
    assert len([line for line in result.outlines if "::" in line]) == 12
    assert pytester.runpytest("--collect-only", "-q").ret != 0
    # a recordings directory that holds the cases (and other tests) is walked as before
    pytester.path.joinpath("prompt_recordings", "test_trap.py").unlink()
    pytester.mkdir("suite")
    pytester.path.joinpath("test_cases").rename(pytester.path / "suite" / "cases")
    pytester.path.joinpath("suite", "test_plain.py").write_text("def test_one():\n    pass\n")
    pytester.makeini(
        COMPAT_INI.replace("= test_cases", "= suite/cases") + "prompteval_recordings = suite\n"
    )
    result = pytester.runpytest("--prompt=current", "--collect-only", "-q")
    ids = [line for line in result.outlines if "::" in line]
    assert len(ids) == 13
    assert "suite/test_plain.py::test_one" in ids


def test_unknown_version_is_a_usage_error_listing_the_available(
    pytester: pytest.Pytester,
) -> None:
    copy_compat(pytester, "2025-05")
    result = pytester.runpytest("--prompt=current", "--compare=v9")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: unknown prompt version 'v9' (prompt directory *prompts); available: current, "
            "v1_baseline"
        ]
    )
    assert "Traceback" not in result.stderr.str()


def test_samples_give_one_item_each(pytester: pytest.Pytester) -> None:
    copy_compat(pytester, "2025-05")
    result = pytester.runpytest(
        "--prompt=current", "--prompteval-samples=3", "--collect-only", "-q", "-k", "basic_loop"
    )
    ids = [line for line in result.outlines if "::" in line]
    assert [i.split("::")[1] for i in ids] == [
        "basic_loop_001[current-s0]",
        "basic_loop_001[current-s1]",
        "basic_loop_001[current-s2]",
    ]


GC_WATCH = """
import gc

seen = {}

def pytest_collection_finish(session):
    seen["collecting"] = gc.isenabled()

def pytest_sessionfinish(session):
    print(f"gc collecting={seen['collecting']} after={gc.isenabled()} "
          f"frozen={gc.get_freeze_count() > len(session.items)}")
"""


def test_the_garbage_collector_waits_for_collection_and_then_skips_what_it_made(
    pytester: pytest.Pytester,
) -> None:
    """Collection made tens of thousands of long-lived objects that the garbage collector
    went over again and again: it is off while collecting, on after, and the collected
    objects are left out of its rounds."""
    copy_compat(pytester, "2025-05")
    pytester.makeconftest(GC_WATCH)
    result = pytester.runpytest_subprocess("--prompt=current", "--collect-only", "-q", "-s")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["gc collecting=False after=True frozen=True"])


IMPORTED = """
import sys

def pytest_collection_finish(session):
    heavy = ("anthropic", "jinja2", "starlette", "uvicorn", "hypothesis.strategies")
    print("IMPORTED", sorted(name for name in heavy if name in sys.modules))
"""


def test_collecting_imports_no_client_server_or_templates(pytester: pytest.Pytester) -> None:
    """What only some runs need (the SDK for a call, Jinja2 for the HTML page, the view's
    server, hypothesis for property tests) is imported when it is needed, not at start."""
    copy_compat(pytester, "2025-05")
    pytester.makeconftest(IMPORTED)
    result = pytester.runpytest_subprocess("--collect-only", "-q", "--prompt=current")
    result.stdout.fnmatch_lines(["IMPORTED []"])


def test_pytest_does_not_rewrite_the_plugins_own_modules(pytester: pytest.Pytester) -> None:
    """pytest rewrites the asserts of a plugin's modules as they load; with no bytecode
    cache for them (PYTHONDONTWRITEBYTECODE) that compiled all of ours in every process.
    Only the package's own ``__init__`` (loaded before it can say no) goes through it."""
    pytester.makeconftest(
        """
        import sys

        def pytest_collection_finish(session):
            ours = [n for n in sys.modules if n.startswith("pytest_prompteval")]
            rewritten = [
                n for n in ours
                if type(getattr(sys.modules[n], "__loader__", None)).__name__
                == "AssertionRewritingHook"
            ]
            print(f"OURS {len(ours)} REWRITTEN {rewritten}")
        """
    )
    pytester.makepyfile("def test_x():\n    assert True\n")
    result = pytester.runpytest_subprocess("-s", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["OURS * REWRITTEN [[]'pytest_prompteval'[]]"])
