"""The verdict's reporter, loaded into the repository's own pytest with ``-p``.

The verdict writes this file's text into its sandbox's /tmp, in a folder of its own under a
name of its own (a module of the repository cannot stand in for it), with ``ids.json``
beside it: the listed test ids. Here the collected tests are matched to them (exactly, or
as SWE-bench's log parser writes an id: cut at a space inside its brackets), the others
deselected, and each event written to ``report.jsonl`` beside it, a JSON line each: the
listed ids matched and unmatched, each test's outcome as pytest's ``-rA`` summary names
it (a test the code under test ended with ``pytest.xfail()`` failed: that code does not
decide its own test), each collection error, and pytest's exit status. Colour, ``-q``,
``-rA`` or a plugin that rewrites the terminal change nothing read here.

Standalone on purpose: it runs in the repository's interpreter and pytest (any version
since 3.0), which cannot import this package.
"""

import json
import os
from typing import IO, Any

import pytest

_HERE = os.path.dirname(os.path.abspath(__file__))
_OUT: "list[IO[str]]" = []
#: The folders the verdict restores whole above a listed test (as scoring/repo.py).
_TEST_FOLDERS = ("tests", "test", "testing")
#: Tests an imperative xfail of the code under test ended: they did not pass.
_XFAILED_BY_CODE: "set[str]" = set()


def _write(record: Any) -> None:
    if not _OUT:
        _OUT.append(open(os.path.join(_HERE, "report.jsonl"), "a"))  # noqa: SIM115
    _OUT[0].write(json.dumps(record) + "\n")  # ASCII: the verdict bounds what it reads
    _OUT[0].flush()


def _listed() -> Any:
    path = os.path.join(_HERE, "ids.json")
    if not os.path.exists(path):
        return None
    with open(path) as file:
        return json.load(file)


def pytest_configure(config: Any) -> None:
    _write({"started": True})


def pytest_collection_modifyitems(session: Any, config: Any, items: Any) -> None:
    listed = _listed()
    if listed is None:
        return
    exact: Any = {}
    cut: Any = {}
    for item in items:
        exact.setdefault(item.nodeid, []).append(item)
        if " " in item.nodeid:
            cut.setdefault(item.nodeid.split(" ", 1)[0], []).append(item)
    kept: set[int] = set()
    for test in listed:
        found = exact.get(test) or cut.get(test)
        if found:
            _write({"matched": test, "as": [item.nodeid for item in found]})
            kept.update(id(item) for item in found)
        else:
            _write({"unmatched": test})
    deselected = [item for item in items if id(item) not in kept]
    items[:] = [item for item in items if id(item) in kept]
    if deselected:
        config.hook.pytest_deselected(items=deselected)


def _the_tests(test: str, caller: str) -> bool:
    """Whether ``caller`` is the test's (restored) code: its own file, a conftest.py, or a
    file of the test folder above it."""
    if caller == test or os.path.basename(caller) == "conftest.py":
        return True
    parts = test.split(os.sep)
    holders = [d for d in range(1, len(parts)) if parts[d - 1] in _TEST_FOLDERS]
    return bool(holders) and caller.startswith(os.sep.join(parts[: holders[-1]]) + os.sep)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: Any, call: Any) -> Any:
    """An imperative ``pytest.xfail()`` counts as passing (as in SWE-bench) only when the
    test's own code calls it: called from the code under test, it is that code deciding
    the test's outcome."""
    outcome = yield
    report = outcome.get_result()
    excinfo = call.excinfo
    if excinfo is None or not hasattr(report, "wasxfail"):
        return
    if not any(c.__name__ == "XFailed" for c in excinfo.type.__mro__):
        return  # a failure the test's xfail marker expects
    files = []
    tb = excinfo.tb
    while tb is not None:
        files.append(os.path.abspath(tb.tb_frame.f_code.co_filename))
        tb = tb.tb_next
    if files and os.path.basename(files[-1]) == "outcomes.py":
        files.pop()  # pytest.xfail itself: its caller decides
    test = os.path.abspath(str(getattr(item, "path", item.fspath)))
    if files and not _the_tests(test, files[-1]):
        _XFAILED_BY_CODE.add(report.nodeid)


def pytest_runtest_logreport(report: Any) -> None:
    if report.nodeid in _XFAILED_BY_CODE:
        _write({"test": report.nodeid, "outcome": "FAILED"})
        return
    xfail = hasattr(report, "wasxfail")
    if report.when == "call":
        outcome = ("XPASS" if report.passed else "XFAIL") if xfail else report.outcome.upper()
    elif report.failed:
        outcome = "ERROR"
    elif report.skipped:
        outcome = "XFAIL" if xfail else "SKIPPED"
    else:
        return
    _write({"test": report.nodeid, "outcome": outcome})


def pytest_collectreport(report: Any) -> None:
    if report.failed:
        _write({"collect": report.nodeid, "error": str(report.longrepr)[-4000:]})


def pytest_sessionfinish(session: Any, exitstatus: Any) -> None:
    _write({"exit": int(exitstatus)})
