"""A run's summary tables as its page shows them, without reading its answers.

A finished run's file keeps the summary the run computed (``core/history``, at the file's
tail, which ``view/index`` reads without parsing the results). It is read back into a
``VersionSummary`` when it holds together: every field of the type it is declared with, the
same JSON again when written back out, and the counts of the run's digest (items, passed,
failed, errored, skipped). Otherwise (a journal, a file from another tool or an older
version, a summary edited by hand) the run is read whole and summarized, as before.
"""

from __future__ import annotations

import dataclasses
import math
import threading
import types
import typing
import weakref
from collections import Counter
from typing import Any

from pytest_prompteval.core.errors import PromptevalError
from pytest_prompteval.report.summary import Figures, StoredSummary, summarize
from pytest_prompteval.view.digest import RunDigest
from pytest_prompteval.view.index import Index


def _decode(value: Any, hint: Any) -> Any:
    """``value`` (JSON) as the type ``hint`` declares, as ``VersionSummary.to_json`` writes
    it (int keys as "pass@k", pairs as two-key objects); ValueError when it is not."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return _decode_optional(value, hint)
    if hint in (int, bool, str, float):
        return _decode_scalar(value, hint)
    if origin is tuple:
        return _decode_pair(value, hint)
    if origin in (dict, Counter):
        return _decode_mapping(value, hint)
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return _decode_dataclass(value, hint)
    raise ValueError(f"cannot read {hint}")


def _decode_optional(value: Any, hint: Any) -> Any:
    args = typing.get_args(hint)
    if value is None and type(None) in args:
        return None
    (inner,) = [a for a in args if a is not type(None)]
    return _decode(value, inner)


def _decode_scalar(value: Any, hint: type) -> Any:
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if hint is float and number and math.isfinite(value):
        return value
    if (hint is int and number and isinstance(value, int)) or type(value) is hint:
        return value
    raise ValueError(f"expected {hint.__name__}")


def _decode_pair(value: Any, hint: Any) -> tuple[Any, ...]:
    args = typing.get_args(hint)
    items = [value[k] for k in sorted(value)] if isinstance(value, dict) else value
    if not isinstance(items, list) or len(items) != len(args):
        raise ValueError("expected a pair")
    return tuple(_decode(v, a) for v, a in zip(items, args, strict=True))


def _decode_mapping(value: Any, hint: Any) -> dict[Any, Any]:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    key_hint, value_hint = (args[0], int) if origin is Counter else args
    if not isinstance(value, dict):
        raise ValueError("expected an object")
    decoded = {_key(k, key_hint): _decode(v, value_hint) for k, v in value.items()}
    return Counter(decoded) if origin is Counter else decoded


def _decode_dataclass(value: Any, hint: type) -> Any:
    if not isinstance(value, dict):
        raise ValueError("expected an object")
    hints = typing.get_type_hints(hint)
    fields = [f for f in dataclasses.fields(hint) if f.init]
    return hint(**{f.name: _decode(value[f.name], hints[f.name]) for f in fields})


def _key(key: str, hint: Any) -> Any:
    if hint is str:
        return key
    digits = key.removeprefix("pass@")
    if hint is int and digits.isascii() and digits.isdigit():
        return int(digits)
    raise ValueError("expected pass@k")


#: what the run's page does not show, left out when the summary is read back: each case's
#: pass@k (10,000 of them took longer to check than all the rest of the page)
UNSHOWN = ("case_pass_at_k",)


def stored_summary(data: dict[str, Any]) -> StoredSummary | None:
    """The summary a run's file keeps, as the run computed it (less ``UNSHOWN``); None when
    it does not hold together: a field missing, of another type, or one it does not have."""
    shown = {k: v for k, v in data.items() if k not in UNSHOWN}
    if set(shown) | set(UNSHOWN) != {f.name for f in dataclasses.fields(StoredSummary)}:
        return None
    try:
        summary: StoredSummary = _decode({**shown, **{key: {} for key in UNSHOWN}}, StoredSummary)
    except (ValueError, KeyError, TypeError):
        return None
    return summary


def _agrees(summary: Figures, digest: RunDigest) -> bool:
    """The summary's counts are the digest's: it describes the results beside it."""
    outcomes = Counter(o for cell in digest.cases for o, _ in cell.marks)
    counts = (summary.items, summary.passed, summary.failed, summary.errored, summary.skipped)
    found = (digest.items, *(outcomes[o] for o in ("passed", "failed", "error", "skipped")))
    return summary.version == digest.version and counts == found


class Summaries:
    """Each run's summary, kept while its digest is."""

    def __init__(self, index: Index):
        self.index = index
        self._lock = threading.Lock()
        self._kept: weakref.WeakKeyDictionary[RunDigest, list[Figures]] = (
            weakref.WeakKeyDictionary()
        )
        #: how many times a run was read whole for its summary
        self.read_whole = 0

    def of(self, digest: RunDigest) -> list[Figures]:
        with self._lock:
            found = self._kept.get(digest)
        if found is None:
            found = self._read(digest)
            with self._lock:
                self._kept[digest] = found
        return found

    def _read(self, digest: RunDigest) -> list[Figures]:
        data = self.index.stored_summary(digest.name)
        summary = None if data is None else stored_summary(data)
        if summary is not None and _agrees(summary, digest):
            return [summary]
        self.read_whole += 1
        try:
            run = self.index.run(digest.name)
        except OSError as exc:
            raise PromptevalError(f"cannot read run {digest.name!r}: {exc.strerror}") from None
        return list(summarize(run.results, [run.version], (1,)))
