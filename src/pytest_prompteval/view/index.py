"""The results folder as the view reads it: runs listed from their names, each run's figures
read once, and only the runs a page shows.

A history of hundreds of runs of thousands of items is hundreds of megabytes of JSON; the
first page must not parse it all. A run's file name gives its time and version; its figures
come from the ``meta`` at the head of the file and the ``summary`` at its tail (the layout
``core/history`` writes), without parsing the results between; a file not laid out so (or
a journal of a run still going) is read whole. Everything is cached by name, size and
modification time, so a run that is rewritten is read again.
"""

from __future__ import annotations

import json
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_prompteval.core.errors import PromptevalError
from pytest_prompteval.core.history import RUN_FILE as RUN_NAME
from pytest_prompteval.core.history import StoredRun, load_run
from pytest_prompteval.core.history import is_run_file as is_run_name
from pytest_prompteval.core.paths import MAX_RESULTS_BYTES, open_bounded, resolve_inside
from pytest_prompteval.report.summary import summarize

_RESULTS = b'\n  "results": ['
_SUMMARY = b'\n  "summary": '
_CHUNK = 1 << 16
#: the most of a file's head or tail read to find its meta or summary
_MAX_END = 16 << 20


@dataclass(frozen=True)
class RunEntry:
    """One run of one version, as the runs page lists it."""

    name: str
    stamp: str
    version: str
    started: str
    items: int
    passed: int
    failed: int
    errored: int
    pass_rate: float | None
    cost_usd: float
    partial: bool
    judge_models: tuple[str, ...] = ()


def _entry(name: str, meta: dict[str, Any], summary: dict[str, Any], partial: bool) -> RunEntry:
    match = RUN_NAME.match(name)
    assert match is not None  # listed names only
    return RunEntry(
        name=name,
        stamp=match.group(1),
        version=str(meta.get("prompt_version", match.group(2))),
        started=str(meta.get("started_at", "")),
        items=int(summary.get("items", 0)),
        passed=int(summary.get("passed", 0)),
        failed=int(summary.get("failed", 0)),
        errored=int(summary.get("errored", 0)),
        pass_rate=summary.get("pass_rate"),
        # every purpose's cost is apart (core/usage.py)
        cost_usd=sum(float(summary.get(f"{p}cost_usd") or 0) for p in ("", "judge_", "user_")),
        partial=partial,
    )


def _ends(path: Path, root: Path) -> bytes:
    """A run file's head up to its results and its tail from its summary, without reading
    the results between (a run of 50,000 items is tens of megabytes); b"" when they are not
    within ``_MAX_END`` of either end."""
    with open_bounded(path, MAX_RESULTS_BYTES, root) as file:
        size = os.fstat(file.fileno()).st_size
        if size <= 4 * _CHUNK:
            return file.read()
        head = file.read(_CHUNK)
        while _RESULTS not in head and len(head) < _MAX_END:
            more = file.read(_CHUNK)
            if not more:
                return b""
            head += more
        start = size
        tail = b""
        while _SUMMARY not in tail and size - start < _MAX_END and start > len(head):
            start = max(len(head), start - 4 * _CHUNK)
            file.seek(start)
            tail = file.read(size - start)
        return head + tail if _RESULTS in head and _SUMMARY in tail else b""


def _head_and_tail(data: bytes) -> tuple[dict[str, Any], bool, dict[str, Any]] | None:
    """meta, partial and summary of a finished run's file, leaving its results unparsed;
    None when the file is not laid out as ``core/history`` writes it."""
    results, summary = data.find(_RESULTS), data.rfind(_SUMMARY)
    if results < 0 or summary < results:
        return None
    try:
        head = json.loads(data[:results].rstrip(b",") + b"}")
        tail = json.loads(b"{" + data[summary:])
    except (ValueError, RecursionError):  # RecursionError: nested beyond the parser's depth
        return None
    if not isinstance(head, dict) or not isinstance(tail, dict):
        return None
    meta, summary_data = head.get("meta"), tail.get("summary")
    if not isinstance(meta, dict) or not isinstance(summary_data, dict) or not summary_data:
        return None
    return meta, bool(head.get("partial")), summary_data


class Index:
    """The runs of one results folder."""

    def __init__(self, directory: Path, cached_runs: int = 8):
        self.directory = directory
        self._lock = threading.Lock()
        self._entries: dict[str, tuple[tuple[int, int], RunEntry]] = {}
        self._runs: OrderedDict[tuple[str, int, int], StoredRun] = OrderedDict()
        self._cached_runs = cached_runs

    def names(self, version: str | None = None) -> list[str]:
        """Run file names, newest first (their stamps sort by time)."""
        try:
            listed = os.listdir(self.directory)
        except OSError:
            return []
        names = sorted((n for n in listed if is_run_name(n)), reverse=True)
        if version is not None:
            names = [n for n in names if self.version_of(n) == version]
        return names

    @staticmethod
    def version_of(name: str) -> str:
        match = RUN_NAME.match(name)
        return match.group(2).replace("+", "/") if match else ""

    def path(self, name: str) -> Path:
        """The file of the run ``name``: a run's name in this folder, nothing else (a
        ``..``, a separator, a review file or a link out of the folder is refused)."""
        if not is_run_name(name):
            raise PromptevalError(f"no run named {name!r}")
        path = resolve_inside(self.directory, name)
        if path.parent != Path(os.path.realpath(self.directory)):
            raise PromptevalError(f"no run named {name!r}")
        return path

    def _stamp_of(self, path: Path) -> tuple[int, int]:
        info = os.stat(path)
        return info.st_mtime_ns, info.st_size

    def run(self, name: str) -> StoredRun:
        path = self.path(name)
        stamp = self._stamp_of(path)
        key = (name, *stamp)
        with self._lock:
            if key in self._runs:
                self._runs.move_to_end(key)
                return self._runs[key]
        run = load_run(path, self.directory)
        with self._lock:
            self._runs[key] = run
            while len(self._runs) > self._cached_runs:
                self._runs.popitem(last=False)
        return run

    def stored_summary(self, name: str) -> dict[str, Any] | None:
        """The summary a finished run's file keeps at its tail, its results unread; None
        for a journal or a file not laid out so."""
        path = self.path(name)
        found = _head_and_tail(_ends(path, self.directory)) if path.suffix == ".json" else None
        return None if found is None else found[2]

    def entry(self, name: str) -> RunEntry:
        path = self.path(name)
        stamp = self._stamp_of(path)
        cached = self._entries.get(name)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        entry = self._read_entry(name, path)
        self._entries[name] = (stamp, entry)
        return entry

    def _read_entry(self, name: str, path: Path) -> RunEntry:
        if path.suffix == ".json":
            found = _head_and_tail(_ends(path, self.directory))
            if found is not None:
                return _entry(name, found[0], found[2], found[1])
        run = self.run(name)
        summaries = summarize(run.results, [run.version])
        figures = summaries[0].to_json() if summaries else {}
        entry = _entry(name, run.meta, figures, run.partial)
        models = sorted({r.judge.model for r in run.results if r.judge is not None})
        return RunEntry(**{**vars(entry), "judge_models": tuple(models)})

    def page(
        self, number: int, size: int, version: str | None = None
    ) -> tuple[list[RunEntry | tuple[str, str]], int]:
        """The runs of page ``number`` (from 1) and how many pages there are; a run that
        cannot be read is (name, why) in its place."""
        names = self.names(version)
        pages = max(1, -(-len(names) // size))
        shown: list[RunEntry | tuple[str, str]] = []
        for name in names[(number - 1) * size : number * size]:
            try:
                shown.append(self.entry(name))
            except (PromptevalError, OSError) as exc:
                shown.append((name, str(exc)))
        return shown, pages

    def versions(self) -> list[str]:
        return sorted({self.version_of(n) for n in self.names()})

    def siblings(self, name: str) -> list[str]:
        """The other versions' runs of the same session (same stamp)."""
        match = RUN_NAME.match(name)
        if match is None:
            return []
        return [n for n in self.names() if n != name and n.startswith(match.group(1) + "_")]


def page_numbers(current: int, pages: int) -> Sequence[int]:
    """The page links to show: the first, the last, and two either side of ``current``."""
    near = range(max(1, current - 2), min(pages, current + 2) + 1)
    return sorted({1, pages, *near})
