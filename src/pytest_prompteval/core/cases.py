"""YAML case files → validated Case values, with file and line in every error.

The format is the seed's: ``description`` and ``cases: [{id, category, quality, description,
input, expected_topics, difficulty}]``, plus the fields the plugin's scorers read. Any other
field is a typo (an error with a suggestion) unless the project declares it (ini
``prompteval_case_fields`` or the ``pytest_prompteval_case_fields`` hook); data for templates
goes under ``input:`` or ``vars:``. Every field stays in ``Case.raw`` for hooks and results.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_prompteval.core.errors import PromptevalError, display
from pytest_prompteval.core.paths import (
    NAME,
    check_inside,
    machine_key,
    read_bounded,
    write_atomically,
)
from pytest_prompteval.core.schema import check_keys
from pytest_prompteval.core.version import __version__
from pytest_prompteval.core.yamlload import MarkedDict, line_of, parse_yaml

#: A category named like one of pytest's own markers would change how the item runs.
RESERVED_MARKERS = frozenset(
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
FILE_FIELDS = frozenset({"description", "cases"})
#: Every field the plugin reads from a case (scorers, judge, code cases included).
CASE_FIELDS = frozenset(
    {
        *MARKER_FIELDS,
        "id",
        "input",
        "vars",
        "description",
        "notes",
        "tags",
        "expected_topics",
        "threshold",
        "samples",
        "min_pass",
        "assert",
        # the automatic scorer and the judge
        "audience",
        "expected_topics_by_audience",
        # the public explain project's newer cases (data for its templates and hooks)
        "explanation_type",
        "common_mistakes",
        "key_terms",
        "review_template",
        # code cases
        "kind",
        "entry_point",
        "language",
        "tests",
        "reference",
        "properties",
        "timeout",
        "test_setup",
        "atol",
        # repository cases (core/repocases.py)
        "repo",
        "fail_to_pass",
        "pass_to_pass",
        "reference_patch",
        "test_patch",
        "test_command",
        "memory_mb",
        "agent_may_change",
        "environment",
        # agent cases
        "tools",
        "tool_results",
        "turns",
        "user_simulator",
        "item_timeout",
        "max_tool_calls",
    }
)
_DECLARE = (
    "; put template data under vars:, or declare the field (ini prompteval_case_fields, "
    "or the pytest_prompteval_case_fields hook)"
)


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
    vars: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)
    #: The project's root: files the case names must lie inside it.
    root: Path | None = field(default=None, compare=False, repr=False)

    @property
    def markers(self) -> tuple[str, ...]:
        values = [getattr(self, name) for name in MARKER_FIELDS]
        return tuple(dict.fromkeys(v for v in (*values, *self.tags) if v))


@dataclass(frozen=True)
class LoadedCaseFile:
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
    def __init__(
        self,
        path: Path,
        node: MarkedDict,
        index: int,
        known: Collection[str] = CASE_FIELDS,
    ):
        self.path = path
        self.node = node
        self.known = known
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
        if not NAME.match(value):
            raise self.fail(key, "a name of letters, digits and _ . + - (it becomes an id/marker)")
        if key != "id" and value in RESERVED_MARKERS:
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

    def check(self) -> None:
        """Raise at the case's first problem; ``_case`` builds it from what passed."""
        case_id = self.string("id", required=True, name=True)
        check_keys(self.node, self.known, self.path, f"case {case_id!r}: ", _DECLARE)
        if not isinstance(self.node.get("input"), Mapping):
            raise self.fail("input", "a mapping of the request's fields")
        if not isinstance(self.node.get("vars") or {}, Mapping):
            raise self.fail("vars", "a mapping of template variables")
        self.number("threshold", 0.0, 1.0)
        for key in ("category", "quality", "difficulty"):  # the order errors were found in
            self.string(key, name=True)
        self.string("description")
        self.string_list("expected_topics")
        self.string_list("tags", names=True)
        self.number("samples", 1, 1000, integer=True)


def _case(path: Path, node: MarkedDict, root: Path | None) -> Case:
    """A case from a node that passed ``_CaseReader.check`` (now or when it was cached)."""
    threshold = node.get("threshold")
    return Case(
        id=node["id"],
        input=node["input"],
        path=path,
        line=node.line,
        category=node.get("category"),
        quality=node.get("quality"),
        difficulty=node.get("difficulty"),
        description=node.get("description") or "",
        expected_topics=tuple(node.get("expected_topics") or ()),
        tags=tuple(node.get("tags") or ()),
        threshold=float(threshold) if threshold is not None else None,
        samples=node.get("samples"),
        vars=node.get("vars") or {},
        raw=node,
        root=root,
    )


def inline_case(
    path: Path, line: int, fields: Mapping[str, Any], extra_fields: Collection[str] = ()
) -> Case:
    """A case written in Python (the ``prompteval`` fixture), validated like a YAML one."""
    node = MarkedDict(fields)
    node.line, node.key_lines = line, {}
    _CaseReader(path, node, 0, CASE_FIELDS.union(extra_fields)).check()
    return _case(path, node, None)


def load_case_file_cached(
    path: Path,
    cache_dir: Path | None,
    extra_fields: Collection[str] = (),
    root: Path | None = None,
) -> LoadedCaseFile:
    """``load_case_file``, parsed and checked once per content: a file that passed is kept
    as JSON under ``cache_dir``, keyed by its path and content digest, the plugin's version
    and rules, and all else the checks read (the declared fields, the root); a hit builds
    the cases from it (YAML construction, then the checks, are most of a large suite's
    collection time). A file that fails is not kept: it fails the same way next time. An
    entry is signed with this machine's key (``machine_key``, outside the project), so one a
    pull request plants (a ``threshold: 0.0`` of its own) is not ours and the file is parsed
    and checked again; without a key nothing is cached."""
    if root is not None:
        check_inside(root, path)  # a case file linked to a file outside is not read
    key = machine_key() if cache_dir is not None else None
    if cache_dir is None or key is None:
        return read_case_file(path, _parse(path), extra_fields, root)
    text = _read_text(path)  # checks the file is regular and bounded, as without a cache
    entry = _Entry(cache_dir, key, path, text.encode(), extra_fields, root)
    cached = entry.read()
    if cached is not None:
        return cached
    data = parse_yaml(text, path)
    case_file = read_case_file(path, data, extra_fields, root)  # a mistake: nothing is kept
    entry.write(data)
    return case_file


def _parse(path: Path) -> Any:
    return parse_yaml(_read_text(path), path)


def _read_text(path: Path) -> str:
    try:
        return read_bounded(path).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PromptevalError(f"cannot read file: not UTF-8 ({exc.reason})", path) from None


#: What the checks hold to besides the code: an entry kept under other rules is not used
#: (an editable install keeps its version while a field is dropped).
_RULES = hashlib.sha256(
    json.dumps(
        [sorted(CASE_FIELDS), sorted(FILE_FIELDS), sorted(RESERVED_MARKERS), NAME.pattern]
    ).encode()
).hexdigest()


class _Entry:
    """A checked case file's entry in the cache: its name is signed, so it is found only
    for the same content, version, rules, declared fields and root."""

    def __init__(
        self,
        cache_dir: Path,
        key: bytes,
        path: Path,
        source: bytes,
        extra_fields: Collection[str],
        root: Path | None,
    ):
        name = json.dumps(
            [
                "checked",
                str(path.resolve()),
                hashlib.sha256(source).hexdigest(),
                __version__,
                _RULES,
                sorted(extra_fields),
                None if root is None else str(root),
            ]
        )
        digest = hmac.new(key, name.encode(), "sha256").hexdigest()[:32]
        self.cache_dir, self.key, self.file = cache_dir, key, cache_dir / f"{digest}.json"
        self.path, self.root = path, root
        self.limit = 4 * len(source) + 4096  # an entry is a few times the YAML, never more

    def signature(self, payload: bytes) -> bytes:
        message = self.file.name.encode() + b"\n" + payload
        return hmac.new(self.key, message, "sha256").hexdigest().encode()

    def read(self) -> LoadedCaseFile | None:
        """The file's cases, unchecked (they were when the entry was written); None when
        there is no entry of ours."""
        try:
            stored = read_bounded(self.file, self.limit + 65, self.cache_dir)
            signed, _, payload = stored.partition(b"\n")
            if hmac.compare_digest(signed, self.signature(payload)):
                return _case_file(self.path, _decode(payload), self.root)
        except (PromptevalError, ValueError, TypeError, KeyError, RecursionError):
            pass  # absent or not ours: parse and check again
        return None

    def write(self, data: Any) -> None:
        """Keep ``data``, the parsed YAML of a file that passed the checks."""
        try:
            encoded = json.dumps(_encode(data), ensure_ascii=False, allow_nan=False).encode()
        except (TypeError, ValueError):
            return  # dates or NaN: not worth caching
        if len(encoded) <= self.limit:  # else aliases expanded it: not worth caching
            write_atomically(self.file, self.signature(encoded) + b"\n" + encoded)


# A mapping is {"line": n, "keys": [...], "lines": [...], "values": [...]}: every JSON object
# in an entry is one, so lists and scalars pass through unchanged.
def _encode(value: Any) -> Any:
    if isinstance(value, MarkedDict):
        return {
            "line": value.line,
            "keys": list(value),
            "lines": [value.key_lines.get(k, value.line) for k in value],
            "values": [_encode(v) for v in value.values()],
        }
    if isinstance(value, list):
        return [_encode(v) for v in value]
    if value is None or isinstance(value, str | int | float):
        return value
    raise TypeError(type(value).__name__)


def _decode(entry: bytes) -> Any:
    return json.loads(entry, object_hook=_mapping)


def _mapping(value: dict[str, Any]) -> MarkedDict:
    # the entry's signature says we wrote it (``_encode``) for a file that passed the
    # checks: no conversion (once a third of a cached collection's time), no checks
    keys = value["keys"]
    node = MarkedDict(zip(keys, value["values"], strict=True))
    node.line, node.key_lines = value["line"], dict(zip(keys, value["lines"], strict=True))
    return node


def load_case_file(
    path: Path, extra_fields: Collection[str] = (), root: Path | None = None
) -> LoadedCaseFile:
    """Read and validate one case file; raise PromptevalError at the first problem."""
    if root is not None:
        check_inside(root, path)  # a case file linked to a file outside is not read
    return read_case_file(path, _parse(path), extra_fields, root)


def read_case_file(
    path: Path, data: Any, extra_fields: Collection[str] = (), root: Path | None = None
) -> LoadedCaseFile:
    """Validate one case file's parsed YAML; ``extra_fields`` are the project's declared
    case fields, ``root`` the folder the files its cases name must lie in."""
    _check_file(path, data, CASE_FIELDS.union(extra_fields))
    return _case_file(path, data, root)


def _check_file(path: Path, data: Any, known: Collection[str]) -> None:
    if not isinstance(data, MarkedDict):
        raise PromptevalError(
            f"expected a mapping with 'description' and 'cases', got {_type_name(data)}", path, 1
        )
    check_keys(data, FILE_FIELDS, path)
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
    seen: dict[str, int] = {}
    for index, node in enumerate(cases_node):
        if not isinstance(node, MarkedDict):
            raise PromptevalError(
                f"case #{index + 1}: expected a mapping with id, input, ..., got "
                f"{_type_name(node)}",
                path,
                line_of(data, "cases"),
            )
        _CaseReader(path, node, index, known).check()
        case_id = node["id"]
        if case_id in seen:
            raise PromptevalError(
                f"duplicate case id {case_id!r}: first defined at {display(path, seen[case_id])}",
                path,
                node.line,
            )
        seen[case_id] = node.line


def _case_file(path: Path, data: Any, root: Path | None) -> LoadedCaseFile:
    """The cases of a file's YAML that passed ``_check_file``."""
    return LoadedCaseFile(
        path=path,
        description=data.get("description") or "",
        cases=tuple(_case(path, node, root) for node in data["cases"]),
    )
