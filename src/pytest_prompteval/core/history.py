"""Run history: ``<results dir>/<timestamp>_<version>.json`` per prompt version and run.

While the run goes, every finished item is appended to ``<timestamp>_<version>.jsonl`` (a
header line, then one result per line, flushed each time), so a run that is killed keeps
what it finished. At the end the JSON file is written atomically, in the seed's
``{summary, results}`` shape plus ``meta`` and ``partial``, and the journal removed.
``load_run`` reads either form.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from pytest_prompteval.core.errors import PromptevalError
from pytest_prompteval.core.paths import (
    MAX_RESULTS_BYTES,
    create_new,
    read_bounded,
    write_atomically,
)
from pytest_prompteval.core.result import SCHEMA_VERSION, ItemResult

FORMAT = SCHEMA_VERSION
#: a run's file: ``<stamp>_<version>.json``, or ``.jsonl`` while it runs
RUN_FILE = re.compile(r"^(\d{8}_\d{6}(?:-\d+)?)_([\w.+-]+?)\.(json|jsonl)\Z")


def is_run_file(name: str) -> bool:
    """A run's results in a results folder (not its review file, ``<run>.json.review.json``)."""
    return RUN_FILE.match(name) is not None and not name.endswith(".review.json")


@dataclass
class StoredRun:
    path: Path
    meta: dict[str, Any]
    results: list[ItemResult]
    partial: bool
    summary: dict[str, Any]

    @property
    def version(self) -> str:
        return str(self.meta.get("prompt_version", self.path.stem.split("_", 2)[-1]))


def _file_part(version: str) -> str:
    """A version as part of a file name: a git version's ref may hold a slash."""
    return version.replace("/", "+")


def _stamp(directory: Path, versions: Sequence[str]) -> str:
    base = time.strftime("%Y%m%d_%H%M%S")
    stamp, n = base, 1
    while any(  # lexists: a planted link leading nowhere takes its name too
        os.path.lexists(directory / f"{stamp}_{_file_part(v)}.{ext}")
        for v in versions
        for ext in ("json", "jsonl")
    ):
        n += 1
        stamp = f"{base}-{n}"
    return stamp


class RunHistory:
    def __init__(self, directory: Path, meta_by_version: Mapping[str, dict[str, Any]]):
        directory.mkdir(parents=True, exist_ok=True)
        self.directory = directory
        self.stamp = _stamp(directory, list(meta_by_version))
        self.meta = {
            v: {**m, "format": FORMAT, "started_at": _now(), "prompt_version": v}
            for v, m in meta_by_version.items()
        }
        #: each result with its JSON text, encoded once for the journal and the file
        self.results: dict[str, list[tuple[ItemResult, Encoded]]] = {v: [] for v in meta_by_version}
        self._journals: dict[str, IO[str]] = {}
        self._next_flush = 0.0
        for version, meta in self.meta.items():
            journal = create_new(self.path(version, "jsonl"))
            journal.write(json.dumps({"header": meta, "partial": True}, sort_keys=True) + "\n")
            journal.flush()
            self._journals[version] = journal

    def path(self, version: str, ext: str = "json") -> Path:
        return self.directory / f"{self.stamp}_{_file_part(version)}.{ext}"

    def add(self, result: ItemResult, data: dict[str, Any] | None = None) -> None:
        """``data``: the result's JSON when the caller has it (the item's report does)."""
        version = result.prompt
        if version not in self._journals:
            return
        data = result.to_json() if data is None else data
        line = Encoded(standard_json(data, sort_keys=True, ensure_ascii=False))
        self.results[version].append((result, line))
        journal = self._journals[version]
        journal.write(line + "\n")
        now = time.monotonic()
        if now >= self._next_flush:  # at most every 0.1 s: a crash loses no more than that
            journal.flush()
            self._next_flush = now + 0.1

    def finalize(self, summaries: Mapping[str, dict[str, Any]], partial: bool) -> list[Path]:
        written = []
        for version, journal in self._journals.items():
            journal.close()
            document = {
                "meta": {**self.meta[version], "finished_at": _now()},
                "partial": partial,
                "summary": summaries.get(version, {}),
                # in case order, not arrival order, so runs with and without xdist compare
                "results": [
                    line
                    for r, line in sorted(
                        self.results[version], key=lambda r: (r[0].file, r[0].case_id, r[0].sample)
                    )
                ],
            }
            target = self.path(version)
            write_json_atomically(target, document)
            self.path(version, "jsonl").unlink(missing_ok=True)
            written.append(target)
        self._journals.clear()
        return written


def finite(value: Any) -> Any:
    """``value`` with NaN and infinities as None: standard JSON, which every reader parses
    (a score of NaN from a custom scorer must not make the history unreadable)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v) for v in value]
    return value


def standard_json(value: Any, **options: Any) -> str:
    """``json.dumps`` with NaN and infinities as null; the walk that replaces them only
    when there is one (it costs more than the encoding)."""
    try:
        return json.dumps(value, allow_nan=False, **options)
    except ValueError:
        return json.dumps(finite(value), allow_nan=False, **options)


def _readable(document: Any) -> str:
    """Indented at the top two levels, one line per result below: readable and diffable,
    and encoded by json's C encoder (with ``indent`` json encodes in Python, several times
    slower for thousands of results)."""
    try:
        return _layout(document, 0)
    except ValueError:
        return _layout(finite(document), 0)


class Encoded(str):
    """JSON text already encoded as ``_layout`` would, placed as it is."""


def _layout(value: Any, depth: int) -> str:
    if isinstance(value, Encoded):
        return value
    pad, inner = "  " * depth, "  " * (depth + 1)
    if depth < 2 and isinstance(value, dict) and value:
        items = [
            f"{inner}{json.dumps(str(k), ensure_ascii=False)}: {_layout(v, depth + 1)}"
            for k, v in sorted(value.items())
        ]
        return "{\n" + ",\n".join(items) + f"\n{pad}}}"
    if depth < 2 and isinstance(value, list) and value:
        return "[\n" + ",\n".join(inner + _layout(v, 2) for v in value) + f"\n{pad}]"
    return json.dumps(value, allow_nan=False, sort_keys=True, ensure_ascii=False)


def write_json_atomically(target: Path, document: Any) -> None:
    write_atomically(target, _readable(document) + "\n")


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def load_run(path: Path, root: Path | None = None) -> StoredRun:
    """A finished run (.json) or the journal of an interrupted one (.jsonl); ``root``: the
    folder it must lie in (a results folder's own files, not links out of it)."""
    try:
        text = read_bounded(path, MAX_RESULTS_BYTES, root).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PromptevalError(f"cannot read results: not UTF-8 ({exc.reason})", path) from None
    if path.suffix == ".jsonl":
        lines = text.splitlines()
        try:
            header = json.loads(lines[0])["header"]
        except (IndexError, ValueError, KeyError):
            raise PromptevalError("not a results journal (no header line)", path, 1) from None
        results = []
        for number, line in enumerate(lines[1:], start=2):
            try:
                result = ItemResult.from_json(json.loads(line))
            except (ValueError, TypeError, AttributeError, RecursionError):
                if number == len(lines):  # a line cut short by the kill
                    break
                raise PromptevalError("corrupt result line", path, number) from None
            check_scores(result, path, "result", number)
            results.append(result)
        return StoredRun(path, header, results, True, {})
    try:
        data = json.loads(text)
        results = [ItemResult.from_json(r) for r in data["results"]]
        run = StoredRun(
            path, data["meta"], results, bool(data.get("partial")), data.get("summary", {})
        )
    except (ValueError, KeyError, TypeError, RecursionError) as exc:  # nested too deep
        raise PromptevalError(f"not a results file ({type(exc).__name__}: {exc})", path) from None
    for index, result in enumerate(results):
        check_scores(result, path, f"results[{index}]")
    return run


def check_scores(result: ItemResult, path: Path, where: str, line: int | None = None) -> None:
    """A score outside [0, 1] (JSON's NaN and Infinity parse) would poison every figure the
    results feed: the file is refused, naming the item."""
    for name in ("score", "automatic_score", "judge_score"):
        value = getattr(result, name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
            raise PromptevalError(
                f"{where} (case {result.case_id!r}): {name} {value!r} is not a number from 0 to 1",
                path,
                line,
            )


def command_line() -> list[str]:
    return [Path(sys.argv[0]).name, *sys.argv[1:]]
