"""YAML case files → validated Case values, with file and line in every error.

The format is the seed's: ``description`` and ``cases: [{id, category, quality, description,
input, expected_topics, difficulty}]``. Fields we do not know are kept in ``Case.raw`` for
templates, hooks and results; they are never rejected.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_prompteval.core.errors import PromptevalError, display
from pytest_prompteval.core.version import __version__
from pytest_prompteval.core.yamlload import MarkedDict, line_of, load_yaml

# Case ids and marker values end up in node ids and `-m` expressions.
_NAME = re.compile(r"^[A-Za-z0-9_][\w.+-]*$")
# A category named like one of pytest's own markers would change how the item runs.
_RESERVED_MARKERS = frozenset(
    {
        "skip",
        "skipif",
        "xfail",
        "parametrize",
        "usefixtures",
        "filterwarnings",
        "tryfirst",
        "trylast",
    }
)
MARKER_FIELDS = ("category", "difficulty", "quality")


@dataclass(frozen=True)
class Case:
    id: str
    input: Mapping[str, Any]
    path: Path
    line: int
    category: str | None = None
    quality: str | None = None
    difficulty: str | None = None
    description: str = ""
    expected_topics: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    threshold: float | None = None
    samples: int | None = None
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def markers(self) -> tuple[str, ...]:
        values = [getattr(self, name) for name in MARKER_FIELDS]
        return tuple(dict.fromkeys(v for v in (*values, *self.tags) if v))


@dataclass(frozen=True)
class CaseFile:
    path: Path
    description: str
    cases: tuple[Case, ...]


def _type_name(value: Any) -> str:
    if isinstance(value, Mapping):
        return "mapping"
    return {list: "list", str: "string", type(None): "nothing"}.get(
        type(value), type(value).__name__
    )


class _CaseReader:
    def __init__(self, path: Path, node: MarkedDict, index: int):
        self.path = path
        self.node = node
        self.case_id = node.get("id") if isinstance(node.get("id"), str) else f"#{index + 1}"

    def fail(self, key: str, expected: str) -> PromptevalError:
        value = self.node.get(key)
        got = "nothing" if key not in self.node else f"{_type_name(value)} {value!r:.60}"
        return PromptevalError(
            f"case {self.case_id!r}, field {key!r}: expected {expected}, got {got}",
            self.path,
            self.node.line_of(key),
        )

    def string(self, key: str, *, required: bool = False, name: bool = False) -> str | None:
        if key not in self.node or (self.node[key] is None and not required):
            if required:
                raise self.fail(key, "a string")
            return None
        value = self.node[key]
        if not isinstance(value, str) or not value:
            raise self.fail(key, "a non-empty string")
        if name:
            self.check_name(key, value)
        return value

    def check_name(self, key: str, value: str) -> None:
        if not _NAME.match(value):
            raise self.fail(key, "a name of letters, digits and _ . + - (it becomes an id/marker)")
        if key != "id" and value in _RESERVED_MARKERS:
            raise self.fail(key, f"a name that is not one of pytest's own markers ({value})")

    def string_list(self, key: str, *, names: bool = False) -> tuple[str, ...]:
        value = self.node.get(key)
        if value is None:
            return ()
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise self.fail(key, "a list of strings")
        if names:
            for v in value:
                self.check_name(key, v)
        return tuple(value)

    def number(self, key: str, low: float, high: float, *, integer: bool = False) -> Any:
        value: Any = self.node.get(key)
        if value is None:
            return None
        numeric = isinstance(value, int) or (isinstance(value, float) and not integer)
        if isinstance(value, bool) or not numeric or not low <= value <= high:
            kind = "a whole number" if integer else "a number"
            raise self.fail(key, f"{kind} from {low:g} to {high:g}")
        return value

    def read(self) -> Case:
        case_id = self.string("id", required=True, name=True)
        assert case_id is not None
        payload = self.node.get("input")
        if not isinstance(payload, Mapping):
            raise self.fail("input", "a mapping of the request's fields")
        threshold = self.number("threshold", 0.0, 1.0)
        return Case(
            id=case_id,
            input=payload,
            path=self.path,
            line=self.node.line,
            category=self.string("category", name=True),
            quality=self.string("quality", name=True),
            difficulty=self.string("difficulty", name=True),
            description=self.string("description") or "",
            expected_topics=self.string_list("expected_topics"),
            tags=self.string_list("tags", names=True),
            threshold=float(threshold) if threshold is not None else None,
            samples=self.number("samples", 1, 1000, integer=True),
            raw=self.node,
        )


def inline_case(path: Path, line: int, fields: Mapping[str, Any]) -> Case:
    """A case written in Python (the ``prompteval`` fixture), validated like a YAML one."""
    node = MarkedDict(fields)
    node.line, node.key_lines = line, {}
    return _CaseReader(path, node, 0).read()


def load_case_file_cached(path: Path, cache_dir: Path | None) -> CaseFile:
    """``load_case_file`` through a pickle cache keyed by the file's path, size, mtime and the
    plugin version: YAML construction is most of a large suite's collection time."""
    if cache_dir is None:
        return load_case_file(path)
    stat = path.stat()
    key = f"{path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}|{__version__}"
    entry = cache_dir / (hashlib.sha256(key.encode()).hexdigest()[:32] + ".pickle")
    try:
        with entry.open("rb") as handle:
            cached = pickle.load(handle)
        if isinstance(cached, CaseFile):
            return cached
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError):
        pass
    case_file = load_case_file(path)
    fd, tmp = tempfile.mkstemp(dir=cache_dir, suffix=".tmp")
    with os.fdopen(fd, "wb") as handle:
        pickle.dump(case_file, handle, protocol=pickle.HIGHEST_PROTOCOL)
    os.replace(tmp, entry)
    return case_file


def load_case_file(path: Path) -> CaseFile:
    """Read and validate one case file; raise PromptevalError at the first problem."""
    data = load_yaml(path)
    if not isinstance(data, MarkedDict):
        raise PromptevalError(
            f"expected a mapping with 'description' and 'cases', got {_type_name(data)}", path, 1
        )
    cases_node = data.get("cases")
    if not isinstance(cases_node, list):
        raise PromptevalError(
            f"field 'cases': expected a list of cases, got {_type_name(cases_node)}",
            path,
            line_of(data, "cases"),
        )
    description = data.get("description")
    if description is not None and not isinstance(description, str):
        raise PromptevalError(
            "field 'description': expected a string", path, line_of(data, "description")
        )
    cases: list[Case] = []
    seen: dict[str, int] = {}
    for index, node in enumerate(cases_node):
        if not isinstance(node, MarkedDict):
            raise PromptevalError(
                f"case #{index + 1}: expected a mapping with id, input, ..., got "
                f"{_type_name(node)}",
                path,
                line_of(data, "cases"),
            )
        case = _CaseReader(path, node, index).read()
        if case.id in seen:
            raise PromptevalError(
                f"duplicate case id {case.id!r}: first defined at {display(path, seen[case.id])}",
                path,
                case.line,
            )
        seen[case.id] = case.line
        cases.append(case)
    return CaseFile(path=path, description=description or "", cases=tuple(cases))
