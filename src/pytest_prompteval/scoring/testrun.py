"""One run of a repository's tests in its sandbox, read from a file, not from the terminal.

The case's test command (pytest) runs with the verdict's reporter (``verdict_plugin.py``)
loaded by ``-p``: written with the listed ids into a folder of the sandbox's /tmp under a
name of its own, put first on ``PYTHONPATH``. The command line names only the files the
listed ids are in (that exist): the reporter selects the listed tests among them (exactly,
or as SWE-bench's log parser cut an id) and writes each one's outcome to its report, which
is read back bounded. So colour, ``-q``, no ``-rA``, a plugin that rewrites the summary, or
2,500 ids (one shell argument holds 128 KiB) change nothing, and the output is kept only to
quote its end when the command itself failed.

A run is ``broken`` when the test command failed: pytest never got to its tests (a bad
option, a conftest that does not load, no pytest) or ended with an internal or usage error
(``fatal``: no test ran as asked), or it could not collect a file holding a listed test
(whose tests read as ``ERROR``: a test of the test patch that imports what the fix adds
fails so before the fix). It says so once, quoting the last lines of pytest's own output.
"""

from __future__ import annotations

import json
import re
import secrets
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_prompteval.sandbox.provider import RepoSandbox

#: pytest on the listed ids (appended, as files, with the reporter's options).
DEFAULT_TEST_COMMAND = "python -m pytest -p no:cacheprovider"
#: Outcomes the reporter names (``core.result.PASSING`` pass), worst first: what a test
#: with several reports (a failing teardown) reads as.
WORST = ("ERROR", "FAILED", "XPASS", "SKIPPED")
#: A listed id no collected test matches.
UNMATCHED = "UNMATCHED"
#: The most of the reporter's file read back (about 15,000 listed tests).
MAX_REPORT = 1_500_000
#: Bytes of the end of pytest's output kept, and lines of it quoted.
TAIL, QUOTED = 6000, 15
#: pytest's exit statuses for an internal and a usage error.
INTERNAL_ERROR, USAGE_ERROR = 3, 4
HINT = "a test_command setting PYTHONPATH keeps it: PYTHONPATH=src:$PYTHONPATH"
_COLOUR = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_PLUGIN = (Path(__file__).parent / "verdict_plugin.py").read_text()


@dataclass(frozen=True)
class TestRun:
    """Each listed test's outcome (every test the run reported when none were listed),
    the listed ids no test matched, why the run is broken (None when the tests ran) and
    the end of pytest's output."""

    __test__ = False  # not a test class for pytest

    outcomes: dict[str, str]
    unmatched: tuple[str, ...] = ()
    broken: str | None = None
    #: no test ran as asked (not just a file that did not collect)
    fatal: bool = False
    output: str = field(repr=False, default="")


def _written(path: str, text: str) -> str:
    """``text`` and a newline into ``path`` by bash's own ``printf``: no process, and no
    bound on its size (a builtin's arguments are not an exec's)."""
    return f"printf '%s\\n' {shlex.quote(text)} > {path}"


#: Chunks of ``TAIL`` bytes bash reads before it leaves a longer output to ``tail``.
_CHUNKS = 25


def _show_tail(path: str) -> str:
    """The last ``TAIL`` bytes of ``path``: by bash alone (no process) when the file is
    short, as pytest's output usually is; by ``tail`` past ``_CHUNKS`` chunks."""
    return (
        "LC_ALL=C end= n=0\n"
        f"while (( n++ < {_CHUNKS} )) && IFS= read -r -N {TAIL} chunk; do "
        f"end=${{end: -{TAIL}}}$chunk chunk=; done < {path}\n"
        f"if (( n > {_CHUNKS} )); then tail -c {TAIL} {path}; else end=$end$chunk; "
        f"(( ${{#end}} > {TAIL} )) && end=${{end: -{TAIL}}}; printf '%s' \"$end\"; fi"
    )


def script(command: str, tests: Sequence[str], folder: str, name: str) -> str:
    """The shell script of the run: the reporter and the ids written to ``folder``, the
    command with the files of the listed tests that exist, its output to a file whose end
    is shown. One process beside the command: ``mkdir`` (the reporter's folder, fresh, mode
    700); the rest is bash's own."""
    files = sorted(
        {
            t.split("::", 1)[0]
            for t in tests
            if "\n" not in t and "\0" not in t and t[:1] not in ("-", ":")
        }
    )
    return "\n".join(
        [
            f"mkdir -m 700 {folder} || exit 125",
            _written(f"{folder}/{name}.py", _PLUGIN),
            _written(f"{folder}/ids.json", json.dumps(list(tests))) if tests else "",
            "files=()",
            f"for f in {' '.join(map(shlex.quote, files))}; do "
            '[ -e "/repo/$f" ] && files+=("$f"); done',
            f'export PYTHONPATH="{folder}${{PYTHONPATH:+:$PYTHONPATH}}"',
            f"cd /repo && {command} -p {name} --continue-on-collection-errors "
            f'"${{files[@]}}" > {folder}/output 2>&1',
            "status=$?",
            _show_tail(f"{folder}/output"),
            "exit $status",
        ]
    )


def _records(text: str) -> list[dict[str, Any]]:
    found = []
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue  # a line cut at the bound, or the repository's code writing here
        if isinstance(record, dict):
            found.append(record)
    return found


def _combined(outcomes: Sequence[str]) -> str:
    """One outcome for a test reported several times, or an id several tests matched."""
    for worst in WORST:
        if worst in outcomes:
            return worst
    return outcomes[-1]


def _quoted(output: str) -> str:
    lines = [_COLOUR.sub("", line).rstrip() for line in output.splitlines()]
    shown = [line for line in lines if line.strip()][-QUOTED:]
    return "\n".join(f"  | {line}" for line in shown) or "  | (no output)"


def _outcomes_by_node(records: list[dict[str, Any]]) -> dict[str, list[str]]:
    by_node: dict[str, list[str]] = {}
    for r in records:
        if isinstance(r.get("test"), str) and isinstance(r.get("outcome"), str):
            by_node.setdefault(r["test"], []).append(r["outcome"])
    return by_node


def _matches(records: list[dict[str, Any]]) -> tuple[dict[str, list[str]], dict[str, None]]:
    """The node ids each listed test matched, and the listed tests that matched none."""
    matched: dict[str, list[str]] = {}
    unmatched: dict[str, None] = {}
    for r in records:
        if isinstance(r.get("matched"), str) and isinstance(r.get("as"), list):
            matched[r["matched"]] = [str(n) for n in r["as"]]
        elif isinstance(r.get("unmatched"), str):
            unmatched[r["unmatched"]] = None
    return matched, unmatched


def _uncollected(
    records: list[dict[str, Any]],
    by_node: dict[str, list[str]],
    matched: dict[str, list[str]],
    unmatched: dict[str, None],
) -> list[tuple[str, str]]:
    """The files that failed to collect a listed test; their tests move from ``unmatched``
    to errors in ``by_node`` and ``matched``."""
    collect = [(str(r["collect"]), str(r.get("error", ""))) for r in records if "collect" in r]
    uncollected = [
        (node, error)
        for node, error in collect
        if any(u.split("::", 1)[0].startswith(node) for u in unmatched)
    ]
    for node, _ in uncollected:  # its tests did not run: they fail, they are not misnamed
        for test in [u for u in unmatched if u.split("::", 1)[0].startswith(node)]:
            del unmatched[test]
            by_node[test] = ["ERROR"]
            matched[test] = [test]
    return uncollected


def _outcomes(
    tests: Sequence[str],
    by_node: dict[str, list[str]],
    matched: dict[str, list[str]],
    unmatched: dict[str, None],
) -> dict[str, str]:
    if not tests:
        return {node: _combined(found) for node, found in by_node.items()}
    outcomes: dict[str, str] = {}
    for test in tests:
        if test in matched:
            ran = [_combined(by_node[n]) for n in matched[test] if n in by_node]
            if len(ran) == len(matched[test]):
                outcomes[test] = _combined(ran)
        elif test in unmatched:
            outcomes[test] = UNMATCHED
    return outcomes


def _fatal(records: list[dict[str, Any]], status: int | None, timed_out: bool) -> str | None:
    """Why no test ran as asked, or None when they did."""
    exits = [r["exit"] for r in records if isinstance(r.get("exit"), int)]
    started = any(r.get("started") is True for r in records)
    if timed_out:
        return "it ran past the case's timeout and was killed; the end of its output:"
    if not started and status in (0, 1, 2, 5):
        return f"exit status {status}, and no test was reported ({HINT})"
    if not started or not exits:
        return f"exit status {status} before any test ran; the end of its output:"
    if exits[-1] in (INTERNAL_ERROR, USAGE_ERROR):
        return f"exit status {exits[-1]}; the end of its output:"
    return None


def _incomplete(
    uncollected: list[tuple[str, str]], cut: bool, tests: Sequence[str], outcomes: dict[str, str]
) -> str | None:
    """Why some tests of a run that started have no outcome, or None."""
    if uncollected:
        node, error = uncollected[0]
        more = f" (and {len(uncollected) - 1} more)" if len(uncollected) > 1 else ""
        return f"collecting {node} failed{more}:\n{_quoted(error)}"
    if cut and any(t not in outcomes for t in tests):
        return f"its report passed {MAX_REPORT:,} bytes: the tests after it are not read"
    return None


def read_report(
    text: str,
    tests: Sequence[str],
    status: int | None,
    output: str,
    cut: bool = False,
    timed_out: bool = False,
) -> TestRun:
    """The run from the reporter's ``text`` (``cut``: at the bound), the command's exit
    ``status`` (``timed_out``: killed at the case's timeout) and the end of its ``output``."""
    records = _records(text)
    by_node = _outcomes_by_node(records)
    matched, unmatched = _matches(records)
    uncollected = _uncollected(records, by_node, matched, unmatched)
    outcomes = _outcomes(tests, by_node, matched, unmatched)
    fatal = _fatal(records, status, timed_out)
    if fatal is not None:
        broken: str | None = f"{fatal}\n{_quoted(output)}"
    else:
        broken = _incomplete(uncollected, cut, tests, outcomes)
    return TestRun(outcomes, tuple(unmatched), broken, fatal is not None, output)


def run_tests(
    workspace: RepoSandbox, command: str | None, tests: Sequence[str], timeout: float
) -> TestRun:
    """The listed ``tests`` (every test the command runs, when none are listed) in the
    workspace's /repo, by ``command`` (the case's, or pytest)."""
    token = secrets.token_hex(8)
    folder, name = f"/tmp/verdict-{token}", f"_prompteval_verdict_{token}"
    done = workspace.run(script(command or DEFAULT_TEST_COMMAND, tests, folder, name), timeout)
    report = workspace.read(f"{folder}/report.jsonl", MAX_REPORT, timeout)
    status = done.get("status")
    return read_report(
        str(report.get("text", "")),
        tests,
        status if isinstance(status, int) else None,
        str(done.get("output", "")),
        cut=int(report.get("size", 0)) > MAX_REPORT,
        timed_out=bool(done.get("timed_out")),
    )
