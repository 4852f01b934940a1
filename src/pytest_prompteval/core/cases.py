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
        # repository cases (core/repocases.py)
        "repo",
        "fail_to_pass",
        "pass_to_pass",
        "reference_patch",
        "test_patch",
        "test_command",
        # agent cases
        "tools",
        "tool_results",
        "turns",
        "user_simulator",
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
    def __init__(
        self,
        path: Path,
        node: MarkedDict,
        index: int,
        known: Collection[str] = CASE_FIELDS,
        root: Path | None = None,
    ):
        self.path = path
        self.node = node
        self.known = known
        self.root = root
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
        check_keys(self.node, self.known, self.path, f"case {case_id!r}: ", _DECLARE)
        payload = self.node.get("input")
        if not isinstance(payload, Mapping):
            raise self.fail("input", "a mapping of the request's fields")
        variables = self.node.get("vars") or {}
        if not isinstance(variables, Mapping):
            raise self.fail("vars", "a mapping of template variables")
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
            vars=variables,
            raw=self.node,
            root=self.root,
        )


def inline_case(
    path: Path, line: int, fields: Mapping[str, Any], extra_fields: Collection[str] = ()
) -> Case:
    """A case written in Python (the ``prompteval`` fixture), validated like a YAML one."""
    node = MarkedDict(fields)
    node.line, node.key_lines = line, {}
    return _CaseReader(path, node, 0, CASE_FIELDS.union(extra_fields)).read()


def load_case_file_cached(
    path: Path,
    cache_dir: Path | None,
    extra_fields: Collection[str] = (),
    root: Path | None = None,
) -> CaseFile:
    """``load_case_file`` with the parsed YAML kept as JSON under ``cache_dir``, keyed by the
    file's path, content digest and the plugin version: YAML construction is most of a large
    suite's collection time. An entry is signed with this machine's key (``machine_key``,
    outside the project), so one a pull request plants (a ``threshold: 0.0`` of its own) is
    not ours and the YAML is parsed again; without a key nothing is cached."""
    if root is not None:
        check_inside(root, path)  # a case file linked to a file outside is not read
    key = machine_key() if cache_dir is not None else None
    if cache_dir is not None and key is not None:
        return read_case_file(path, _parse_cached(path, cache_dir, key), extra_fields, root)
    return read_case_file(path, _parse(path), extra_fields, root)


def _parse(path: Path) -> Any:
    return parse_yaml(_read_text(path), path)


def _read_text(path: Path) -> str:
    try:
        return read_bounded(path).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PromptevalError(f"cannot read file: not UTF-8 ({exc.reason})", path) from None


def _parse_cached(path: Path, cache_dir: Path, key: bytes) -> Any:
    text = _read_text(path)  # checks the file is regular and bounded, as without a cache
    source = text.encode()
    name = f"{path.resolve()}|{hashlib.sha256(source).hexdigest()}|{__version__}"
    entry = cache_dir / (hmac.new(key, name.encode(), "sha256").hexdigest()[:32] + ".json")
    limit = 4 * len(source) + 4096  # an entry is a few times the YAML, never more

    def signature(payload: bytes) -> bytes:
        return hmac.new(key, entry.name.encode() + b"\n" + payload, "sha256").hexdigest().encode()

    try:
        signed, _, payload = read_bounded(entry, limit + 65, cache_dir).partition(b"\n")
        if hmac.compare_digest(signed, signature(payload)):
            return _decode(payload)
    except (PromptevalError, ValueError, TypeError, KeyError, RecursionError):
        pass  # absent or not ours: parse again
    data = parse_yaml(text, path)
    try:
        encoded = json.dumps(_encode(data), ensure_ascii=False, allow_nan=False).encode()
    except (TypeError, ValueError):
        return data  # dates or NaN: not worth caching
    if len(encoded) > limit:
        return data  # aliases expanded it: not worth caching
    write_atomically(entry, signature(encoded) + b"\n" + encoded)
    return data


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
    # the entry's signature says we wrote it (``_encode``): no conversion (once a third of
    # a cached collection's time), and the cases are validated as a file's all the same
    keys = value["keys"]
    node = MarkedDict(zip(keys, value["values"], strict=True))
    node.line, node.key_lines = value["line"], dict(zip(keys, value["lines"], strict=True))
    return node


def load_case_file(
    path: Path, extra_fields: Collection[str] = (), root: Path | None = None
) -> CaseFile:
    """Read and validate one case file; raise PromptevalError at the first problem."""
    if root is not None:
        check_inside(root, path)  # a case file linked to a file outside is not read
    return read_case_file(path, _parse(path), extra_fields, root)


def read_case_file(
    path: Path, data: Any, extra_fields: Collection[str] = (), root: Path | None = None
) -> CaseFile:
    """Validate one case file's parsed YAML; ``extra_fields`` are the project's declared
    case fields, ``root`` the folder the files its cases name must lie in."""
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
    cases: list[Case] = []
    seen: dict[str, int] = {}
    known = CASE_FIELDS.union(extra_fields)
    for index, node in enumerate(cases_node):
        if not isinstance(node, MarkedDict):
            raise PromptevalError(
                f"case #{index + 1}: expected a mapping with id, input, ..., got "
                f"{_type_name(node)}",
                path,
                line_of(data, "cases"),
            )
        case = _CaseReader(path, node, index, known, root).read()
        if case.id in seen:
            raise PromptevalError(
                f"duplicate case id {case.id!r}: first defined at {display(path, seen[case.id])}",
                path,
                case.line,
            )
        seen[case.id] = case.line
        cases.append(case)
    return CaseFile(path=path, description=description or "", cases=tuple(cases))
