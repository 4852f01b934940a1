"""A run as the grid, the flips and the item pages read it: a compact row per case, built
once by streaming the results file, and each item read back alone from its line.

A run of 10,000 cases x 5 samples is a results file of 50,000 lines; holding every answer
of it (and of the runs beside it) would cost a great deal of memory for the few a page
shows. ``core/history`` writes one result per line, in case order, so the file is read line
by line: each case's samples become one ``CaseCell`` (its verdict, k/n, mean score, labels,
each sample's outcome and score, why it failed) and each item's line is remembered by its
byte offset. A line is read as the JSON it is, for the few fields a row needs: building the
whole result of every line (its checks, judge, conversation) cost more than the rest of the
reading; only the sample a failed case shows is built, for its reason. The text a search
looks through (case id, file, answers, errors, reasons, an agent's turns) goes casefolded,
one line per case, to an anonymous temporary file that a search scans. A file not laid out
so is read whole (``load_run``), as before. Digests are cached by name, size and
modification time, so a run rewritten is read again.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import math
import os
import shutil
import tempfile
import threading
import weakref
from array import array
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from dataclasses import fields as dataclass_fields
from pathlib import Path
from types import NoneType
from typing import IO, Any, cast

from pytest_prompteval.core.errors import PromptevalError
from pytest_prompteval.core.history import check_scores, load_run, standard_json
from pytest_prompteval.core.paths import (
    MAX_RESULTS_BYTES,
    open_bounded,
    read_bounded,
    user_cache_dir,
    write_atomically,
)
from pytest_prompteval.core.result import ItemResult
from pytest_prompteval.report import figures
from pytest_prompteval.report.pages import ORDER, case_rows, scores_of
from pytest_prompteval.report.summary import outcome_of
from pytest_prompteval.view.index import Index

MAX_REASON = 300
_RESULTS = b'  "results": ['
KINDS = ("text", "agent", "repo", "code")
KEPT_FORMAT = 2
MAX_KEPT = 200  # digests kept between sessions (a 50,000-item run's is about 3 MB)


@dataclass(frozen=True)
class CaseCell:
    """One case of one run: its verdict over its samples and where its items are."""

    key: str  # file::case_id
    file: str
    case_id: str
    outcome: str  # failed | error | passed | skipped, as the run page's rows
    kn: str
    score: float | None
    flaky: bool
    min_pass_text: str
    category: str
    difficulty: str
    markers: frozenset[str]
    kind: str  # text | agent | repo | code
    #: (sample, item number) of each sample, in sample order
    items: tuple[tuple[int, int], ...]
    #: the item a click opens: the first sample that did not pass, else the first
    shown: int
    #: why the shown sample did not pass, in a line; "" when it passed
    reason: str
    #: (outcome, score) of each sample, in sample order
    marks: tuple[tuple[str, float | None], ...] = ()

    @property
    def passing(self) -> bool:
        return self.outcome == "passed"

    @property
    def samples(self) -> list[tuple[int, str, float | None]]:
        """(item number, outcome, score) of each sample, in sample order."""
        return [(n, o, s) for (_, n), (o, s) in zip(self.items, self.marks, strict=True)]

    def item_of(self, sample: int) -> int | None:
        return next((number for s, number in self.items if s == sample), None)

    def sample_of(self, number: int) -> int:
        return next(s for s, n in self.items if n == number)


def kind_of(data: dict[str, Any]) -> str:
    """text | agent | repo | code, from a result's JSON (as ``ItemResult.from_json`` reads
    it: a code run is a result scored by execution)."""
    if data.get("repo") is not None:
        return "repo"
    if data.get("trajectory") is not None:
        return "agent"
    return "code" if data.get("scorer") == "execution" else "text"


def _line(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= MAX_REASON else flat[: MAX_REASON - 3] + "..."


def reason_of(result: ItemResult) -> str:
    """Why a sample did not pass, in one line: its error, the repository's verdict, the
    first failed check, the judge's notes, or its score under the threshold."""
    if result.error:
        return _line(f"{result.error_type or 'error'}: {result.error}")
    repo = result.repo
    if repo is not None and not repo.resolved:
        if repo.broken:
            return _line(f"tests did not run: {repo.broken}")
        return _line(
            f"not resolved: fail_to_pass fixed {figures.share(repo.fail_to_pass_fixed)}, "
            f"pass_to_pass kept {figures.share(repo.pass_to_pass_kept)}"
        )
    if result.trajectory is not None and result.trajectory.failure:
        return _line(result.trajectory.failure)
    failed = [line for line in scores_of(result) if line.passed is False]
    if failed:
        return _line(f"{failed[0].name}: {failed[0].reason}")
    if result.judge is not None and result.judge.notes:
        return _line(f"judge {figures.score(result.judge.score)}: {result.judge.notes}")
    return _line(f"score {figures.score(result.score)} under the threshold {result.threshold}")


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _texts(data: dict[str, Any]) -> list[Any]:
    """What a search looks through in one result: its answer, error, prefill, checks'
    reasons, the judge's notes, an agent's turns."""
    parts = [data.get("response"), data.get("error"), data.get("prefill")]
    parts += [check.get("reason") for check in _dicts(data.get("assertions"))]
    if data.get("judge_score") is not None:
        parts.append(data.get("judge_notes"))
    trajectory = data.get("trajectory")
    if isinstance(trajectory, dict):
        for step in _dicts(trajectory.get("steps")):
            parts += [step.get("text"), step.get("turn")]
    return parts


def _searchable(first: Sample, texts: Sequence[Any]) -> bytes:
    """One line of what a search over a case looks through, casefolded."""
    parts = [first.case_id, first.file, *(t for t in texts if isinstance(t, str))]
    return " ".join(" ".join(parts).casefold().split()).encode("utf-8", "replace") + b"\n"


def _unit(value: Any) -> bool:
    return value is None or (
        not isinstance(value, bool) and isinstance(value, int | float) and 0 <= value <= 1
    )


@dataclass(frozen=True, slots=True)
class Sample:
    """What a case's row reads of one result (``pages.case_rows``), read from its JSON."""

    prompt: str
    file: str
    case_id: str
    sample: int
    outcome: str
    passed: bool
    error_type: str | None
    score: float | None
    min_pass: float | None


def sample_of(data: dict[str, Any], path: Path, number: int) -> Sample:
    """A result line's row fields, checked as ``load_run`` checks a result (a score outside
    [0, 1] refuses the file, naming the item); ValueError when it is no result."""
    prompt, file, case_id = data.get("prompt"), data.get("file"), data.get("case_id")
    sample, min_pass = data.get("sample", 0), data.get("min_pass")
    if not (isinstance(prompt, str) and isinstance(file, str) and isinstance(case_id, str)):
        raise ValueError("not a result")
    if type(sample) is not int:
        raise ValueError("not a result")
    if min_pass is not None and not (
        isinstance(min_pass, int | float)
        and not isinstance(min_pass, bool)
        and math.isfinite(min_pass)
        and min_pass > 0
    ):
        raise ValueError("not a result")
    if not (_unit(data.get("score")) and _unit(data.get("automatic_score"))) or not _unit(
        data.get("judge_score")
    ):
        check_scores(ItemResult.from_json(data), path, "result", number)  # raises, naming it
    outcome = data.get("outcome")
    if not outcome:  # history written before the field: derived as the reports derive it
        outcome = outcome_of(ItemResult.from_json(data))
    if outcome not in ORDER:
        raise ValueError("not a result")
    error_type = data.get("error_type")
    return Sample(
        prompt, file, case_id, sample, outcome, bool(data.get("passed")),
        error_type if isinstance(error_type, str) else None, data.get("score"), min_pass,
    )  # fmt: skip


def _label(value: Any) -> str:
    return value if isinstance(value, str) else ""


#: a sample of a case as it is read: its item number, its JSON, its row fields
Read = tuple[int, dict[str, Any], Sample]


def _cell(group: list[Read]) -> CaseCell:
    group.sort(key=lambda read: read[2].sample)
    samples = [s for _, _, s in group]
    # a Sample has every field a row reads: the rows' rules stay in one place
    row = case_rows(cast("list[ItemResult]", samples))[0]
    first = group[0][1]
    shown, data, sample = next((read for read in group if read[2].outcome != "passed"), group[0])
    tags = first.get("tags")
    labels = {_label(first.get(name)) for name in ("category", "difficulty", "quality")}
    labels |= {str(t) for t in tags} if isinstance(tags, list) else set()
    return CaseCell(
        key=row.key, file=samples[0].file, case_id=samples[0].case_id, outcome=row.outcome,
        kn=row.kn, score=row.mean_score, flaky=row.flaky, min_pass_text=row.min_pass_text,
        category=_label(first.get("category")), difficulty=_label(first.get("difficulty")),
        markers=frozenset(label for label in labels if label), kind=kind_of(first),
        items=tuple((s.sample, n) for n, _, s in group), shown=shown,
        reason="" if sample.outcome == "passed" else _reason(data),
        marks=tuple((s.outcome, s.score) for s in samples),
    )  # fmt: skip


def _reason(data: dict[str, Any]) -> str:
    """The reason of the one sample a failed case shows: only it is built whole."""
    try:
        return reason_of(ItemResult.from_json(data))
    except (ValueError, TypeError, AttributeError):
        return "(this result cannot be read)"


class _NotLaidOut(Exception):
    """The file is not one result per line (written by hand or by another tool)."""


def _parse(line: bytes, path: Path, number: int) -> ItemResult:
    result = ItemResult.from_json(_json(line))
    check_scores(result, path, "result", number)
    return result


_DECODER = json.JSONDecoder()


def _json(line: bytes) -> dict[str, Any]:
    try:
        data = _DECODER.decode(line.decode("utf-8").strip().rstrip(","))
    except RecursionError:  # arrays in arrays a hundred thousand deep: no result either
        raise ValueError("not a result") from None
    if not isinstance(data, dict):
        raise ValueError("not a result")
    return data


def _read(line: bytes, path: Path, number: int, item: int) -> Read:
    data = _json(line)
    return item, data, sample_of(data, path, number)


Lines = Iterator[tuple[int, bytes, int]]


def _result_lines(file: IO[bytes], journal: bool) -> tuple[dict[str, Any], bool, Lines]:
    """The run's meta, whether it is partial, and (offset, text, line number) of each result
    line, read as ``core/history`` writes a journal or a finished run."""
    offset, number = 0, 0
    if journal:
        header = file.readline()
        offset, number = len(header), 1
        try:
            head = json.loads(header)
            meta, partial = head["header"], True
        except (ValueError, KeyError, TypeError):
            raise _NotLaidOut from None
    else:
        lines = []
        for line in file:
            offset += len(line)
            number += 1
            if line.startswith(_RESULTS):
                break
            lines.append(line)
        else:
            raise _NotLaidOut
        try:
            head = json.loads(b"".join(lines).rstrip().rstrip(b",") + b"}")
            meta, partial = head["meta"], bool(head.get("partial"))
        except (ValueError, KeyError, TypeError):
            raise _NotLaidOut from None
        if line.rstrip() != _RESULTS:  # "results": [] on its line: no results
            return meta, partial, iter(())
    if not isinstance(meta, dict):
        raise _NotLaidOut

    def results() -> Lines:
        nonlocal offset, number
        for line in file:
            start = offset
            offset += len(line)
            number += 1
            if not journal and line.startswith(b"  ]"):
                return
            yield start, line, number

    return meta, partial, results()


class _CollectorPause:
    """The garbage collector off while a digest is read: the read makes hundreds of
    thousands of objects (no cycles among them, freed as they go out of use), which set off
    full collections over every digest the server already holds; for a kept digest they
    took longer than the read (0.46 s against 1.33 s beside two others, in one
    measurement). Process-wide, so counted across the server's threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._count = 0
        self._enabled = False

    @contextlib.contextmanager
    def __call__(self) -> Iterator[None]:
        with self._lock:
            if self._count == 0:
                self._enabled = gc.isenabled()
                gc.disable()
            self._count += 1
        try:
            yield
        finally:
            with self._lock:
                self._count -= 1
                if self._count == 0 and self._enabled:
                    gc.enable()


_collector_paused = _CollectorPause()


class RunDigest:
    """One run's cases, in case order, and its items by number (as ``load_run`` numbers
    them), read back one at a time."""

    def __init__(self, name: str, path: Path, root: Path, kept: Path | None = None):
        """``kept``: a folder where finished runs' digests stay between sessions (by the
        file's path, size and modification time), so a big run is streamed once, not once
        per session."""
        self.name, self.path, self.root = name, path, root
        self.cases: list[CaseCell] = []
        self.meta: dict[str, Any] = {}
        self.partial = False
        self._offsets = array("q")
        self._loaded: list[ItemResult] | None = None  # a file not laid out line by line
        self._lock = threading.Lock()
        self._found: OrderedDict[str, frozenset[int]] = OrderedDict()
        info = os.stat(path)
        stamp = f"{os.path.realpath(path)}\0{info.st_size}\0{info.st_mtime_ns}"
        # a journal grows while its run goes: kept, it would be a new digest every look
        keep = kept is not None and path.suffix == ".json"
        base = kept / hashlib.sha256(stamp.encode()).hexdigest() if keep and kept else None
        with _collector_paused():
            if base is None or not self._load(base):
                self._search: IO[bytes] = self._new_search()
                try:
                    self._stream()
                except _NotLaidOut:
                    self._whole()
                if base is not None and self._loaded is None:
                    self._keep(base)
        self.position = {cell.key: i for i, cell in enumerate(self.cases)}
        self.categories = sorted({c.category for c in self.cases if c.category})
        self.difficulties = sorted({c.difficulty for c in self.cases if c.difficulty})

    @property
    def version(self) -> str:
        return str(self.meta.get("prompt_version", Index.version_of(self.name)))

    @property
    def items(self) -> int:
        return len(self._loaded) if self._loaded is not None else len(self._offsets)

    def _stream(self) -> None:
        journal = self.path.suffix == ".jsonl"
        keys: list[tuple[str, str]] = []
        group: list[Read] = []
        seen: set[tuple[str, str]] = set()
        in_order, cut = True, 0
        with open_bounded(self.path, MAX_RESULTS_BYTES, self.root) as file:
            self.meta, self.partial, lines = _result_lines(file, journal)
            for offset, line, number in lines:
                if cut:  # a bad line before this one was not the last: the file is corrupt
                    raise PromptevalError("corrupt result line", self.path, cut)
                try:
                    read = _read(line, self.path, number, len(self._offsets))
                except (ValueError, TypeError, AttributeError):
                    if not journal:
                        raise _NotLaidOut from None
                    cut = number  # a journal's last line may be cut short by a kill
                    continue
                key = (read[2].file, read[2].case_id)
                if group and key != keys[-1]:
                    self._add(group)
                    group = []
                if not group:
                    in_order = in_order and key not in seen
                    seen.add(key)
                group.append(read)
                self._offsets.append(offset)
                keys.append(key)
            if group:
                self._add(group)
            if not in_order:  # a journal, in the order items finished: read again by case
                self._regroup(file, keys)

    def _regroup(self, file: IO[bytes], keys: list[tuple[str, str]]) -> None:
        self.cases = []
        self._search = self._new_search()
        numbers: dict[tuple[str, str], list[int]] = {}
        for number, key in enumerate(keys):
            numbers.setdefault(key, []).append(number)
        for key in sorted(numbers):
            group = []
            for number in numbers[key]:
                file.seek(self._offsets[number])
                group.append(_read(file.readline(), self.path, number, number))
            self._add(group)

    def _whole(self) -> None:
        run = load_run(self.path, self.root)
        self.meta, self.partial, self._loaded = run.meta, run.partial, run.results
        self.cases, self._search = [], self._new_search()
        self._offsets = array("q")
        groups: dict[tuple[str, str], list[Read]] = {}
        for number, result in enumerate(run.results):
            data = result.to_json()
            try:
                read = (number, data, sample_of(data, self.path, number))
            except ValueError:
                raise PromptevalError(f"results[{number}] is not a result", self.path) from None
            groups.setdefault((read[2].file, read[2].case_id), []).append(read)
        for key in sorted(groups):
            self._add(groups[key])

    def _keep(self, base: Path) -> None:
        """Write the digest beside others kept (each file whole, or not at all)."""
        try:
            base.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd, tmp = tempfile.mkstemp(dir=base.parent, prefix=".tmp-")
            with os.fdopen(fd, "wb") as copy:
                self._search.flush()
                self._search.seek(0)
                shutil.copyfileobj(self._search, copy)
            os.replace(tmp, base.with_suffix(".search"))
            cases = [
                [sorted(v) if isinstance(v, frozenset) else v for v in vars(c).values()]
                for c in self.cases
            ]
            document = {
                "format": KEPT_FORMAT, "source": str(self.path), "meta": self.meta,
                "partial": self.partial, "offsets": self._offsets.tolist(), "cases": cases,
            }  # fmt: skip
            write_atomically(base.with_suffix(".digest"), standard_json(document))
            _prune(base.parent)
        except OSError:
            pass  # a cache: the next session streams the run again

    def _load(self, base: Path) -> bool:
        """The kept digest at ``base``; False (and nothing changed) when there is none or
        it is not one this version wrote whole."""
        try:
            data = json.loads(
                read_bounded(base.with_suffix(".digest"), MAX_RESULTS_BYTES, base.parent)
            )
            if data["format"] != KEPT_FORMAT or data["source"] != str(self.path):
                return False
            cases = _kept_cells(data["cases"])
            offsets = array("q", data["offsets"])
            search = open_bounded(base.with_suffix(".search"), MAX_RESULTS_BYTES, base.parent)
        except (OSError, ValueError, TypeError, KeyError, OverflowError, PromptevalError):
            return False
        if sum(1 for _ in search) != len(cases) or not isinstance(data["meta"], dict):
            search.close()
            return False
        weakref.finalize(self, search.close)
        self.cases, self._offsets, self._search = cases, offsets, search
        self.meta, self.partial = data["meta"], bool(data["partial"])
        return True

    def _new_search(self) -> IO[bytes]:
        """An anonymous file, closed when the digest is dropped (and gone, even on a kill)."""
        if hasattr(self, "_search"):
            self._search.close()
        file = tempfile.TemporaryFile()  # noqa: SIM115 (kept open: the finalizer closes it)
        weakref.finalize(self, file.close)
        return file

    def _add(self, group: list[Read]) -> None:
        cell = _cell(group)
        self.cases.append(cell)
        self._search.write(_searchable(group[0][2], [t for _, d, _ in group for t in _texts(d)]))

    def item(self, number: int) -> ItemResult:
        if not 0 <= number < self.items:
            raise PromptevalError(f"no item {number} in {self.name}")
        if self._loaded is not None:
            return self._loaded[number]
        with open_bounded(self.path, MAX_RESULTS_BYTES, self.root) as file:
            file.seek(self._offsets[number])
            line = file.readline()
        try:
            return _parse(line, self.path, number)
        except (ValueError, TypeError, AttributeError):
            raise PromptevalError(f"item {number} changed under the view", self.path) from None

    def search(self, text: str) -> frozenset[int]:
        """The positions (in ``cases``) of the cases whose text holds ``text``, any case."""
        needle = " ".join(text.casefold().split()).encode("utf-8", "replace")
        with self._lock:
            found = self._found.get(text)
            if found is None:
                self._search.flush()
                self._search.seek(0)
                found = frozenset(i for i, line in enumerate(self._search) if needle in line)
                self._found[text] = found
                while len(self._found) > 16:
                    self._found.popitem(last=False)
            else:
                self._found.move_to_end(text)
        return found


def _only(values: Any, *kinds: type) -> bool:
    """Every value is exactly of one of ``kinds`` (a bool is no int here)."""
    return set(map(type, values)) <= set(kinds)


def _kept_cells(rows: Any) -> list[CaseCell]:
    """The kept cases, their fields checked as a results file's would be: a column at a
    time (a check per field of each of 10,000 cases took longer than the rest of the read)."""
    if not isinstance(rows, list) or not rows:
        return []
    if not _only(rows, list) or {len(row) for row in rows} != {len(dataclass_fields(CaseCell))}:
        raise ValueError("not a kept case")
    columns = list(zip(*rows, strict=True))
    pairs = [tuple(map(tuple, pair)) for pair in columns[12]]
    shown_marks = [tuple(map(tuple, mark)) for mark in columns[15]]
    if not _labels_hold(columns) or not _samples_hold(columns, pairs, shown_marks):
        raise ValueError("not a kept case")
    return [
        CaseCell(*row[:10], frozenset(row[10]), row[11], pair, row[13], row[14], mark)  # type: ignore[call-arg]
        for row, pair, mark in zip(rows, pairs, shown_marks, strict=True)
    ]


def _labels_hold(columns: list[tuple[Any, ...]]) -> bool:
    """The kept cases' texts, flags, outcomes, kinds and markers are of their types."""
    (keys, files, ids, outcomes, kns, _, flaky, min_pass, categories, difficulties,
     markers, kinds, _, _, reasons, _) = columns  # fmt: skip
    texts = (keys, files, ids, kns, min_pass, categories, difficulties, reasons)
    return (
        all(_only(column, str) for column in texts)
        and _only(flaky, bool)
        and set(outcomes) <= ORDER.keys()
        and set(kinds) <= set(KINDS)
        and _only(markers, list)
        and _only((m for ms in markers for m in ms), str)
    )


def _samples_hold(
    columns: list[tuple[Any, ...]],
    pairs: list[tuple[tuple[Any, ...], ...]],
    shown_marks: list[tuple[tuple[Any, ...], ...]],
) -> bool:
    """Each case's (item, sample) pairs, the one it shows, and its samples' outcomes and
    scores hold together."""
    shown = columns[13]
    flat = [item for cell_items in pairs for item in cell_items]
    if {len(item) for item in flat} != {2} or not _only((x for i in flat for x in i), int):
        return False
    marked = [x for mark in shown_marks for x in mark]
    if not _only(shown, int) or {len(x) for x in marked} != {2}:
        return False
    if not {o for o, _ in marked} <= ORDER.keys():
        return False
    values = [*columns[5], *(s for _, s in marked)]
    if not _only(values, float, int, NoneType):
        return False
    if not all(0 <= v <= 1 for v in values if v is not None):
        return False
    return not any(
        len(p) != len(m) or (n not in {x for _, x in p})
        for p, m, n in zip(pairs, shown_marks, shown, strict=True)
    )


def _prune(folder: Path) -> None:
    """The ``MAX_KEPT`` digests used last are kept, the others removed."""
    kept = sorted(folder.glob("*.digest"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in kept[MAX_KEPT:]:
        old.unlink(missing_ok=True)
        old.with_suffix(".search").unlink(missing_ok=True)


def kept_folder() -> Path:
    """Where runs' digests stay between sessions: the user's cache, outside every project
    (nothing a pull request commits is taken for a digest)."""
    return user_cache_dir() / "view"


def keep_written(paths: Sequence[Path]) -> None:
    """Digest the results files a run has just written, into the digests the view keeps:
    the view then reads the digest, not the run, the first time it opens one (it checks
    the digest as it checks any it kept). Nothing here may fail the run: a digest that
    cannot be written is built by the view instead."""
    for path in paths:
        with contextlib.suppress(OSError, PromptevalError):
            RunDigest(path.name, path, path.parent, kept_folder())


class Digests:
    """Each run's digest, built on first use, the most recently used kept."""

    def __init__(self, index: Index, kept: Path | None = None, cached: int = 16):
        self.index = index
        self.kept = kept
        self._cached = cached
        self._lock = threading.Lock()
        self._digests: OrderedDict[tuple[str, int, int], RunDigest] = OrderedDict()
        #: a lock per digest being built: a second request for it waits instead of building
        self._building: dict[tuple[str, int, int], threading.Lock] = {}

    def get(self, name: str) -> RunDigest:
        path = self.index.path(name)
        try:
            info = os.stat(path)
        except OSError as exc:
            raise PromptevalError(f"cannot read run {name!r}: {exc.strerror}") from None
        key = (name, info.st_mtime_ns, info.st_size)
        with self._lock:
            if key in self._digests:
                self._digests.move_to_end(key)
                return self._digests[key]
            building = self._building.setdefault(key, threading.Lock())
        with building:
            with self._lock:
                if key in self._digests:
                    return self._digests[key]
            try:
                digest = RunDigest(name, path, self.index.directory, self.kept)
            except OSError as exc:  # removed or unreadable since it was listed
                raise PromptevalError(f"cannot read run {name!r}: {exc.strerror}") from None
            finally:
                with self._lock:
                    self._building.pop(key, None)
            with self._lock:
                self._digests[key] = digest
                while len(self._digests) > self._cached:
                    self._digests.popitem(last=False)
        return digest

    def warm(self) -> threading.Thread:
        """Digest the newest session's runs in the background (what is opened first after a
        run), so their grid opens without waiting; a run that cannot be read is left to
        the page that asks for it."""

        def work() -> None:
            names = self.index.names()
            for name in names[:1] + self.index.siblings(names[0]) if names else []:
                with contextlib.suppress(PromptevalError, OSError):
                    self.get(name)

        thread = threading.Thread(target=work, name="prompteval-view-warm", daemon=True)
        thread.start()
        return thread

    def item_beside(self, name: str, cell_key: str, sample: int) -> ItemResult | None:
        """The same case's same sample in the run ``name``, if it has one."""
        digest = self.get(name)
        position = digest.position.get(cell_key)
        if position is None:
            return None
        number = digest.cases[position].item_of(sample)
        return None if number is None else digest.item(number)
