"""``assert:`` entries of cases and prompt versions: parsed and checked at collection,
evaluated per response. Each gives a score in [0, 1] and a pass/fail against its threshold.
"""

from __future__ import annotations

import functools
import json
import math
import statistics
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_prompteval.core.content import input_matches
from pytest_prompteval.core.errors import PromptevalError
from pytest_prompteval.core.patterns import SPACE, PatternError, pattern
from pytest_prompteval.core.result import CheckResult, Trajectory
from pytest_prompteval.core.schema import suggestion
from pytest_prompteval.core.yamlload import line_of
from pytest_prompteval.scoring.score import Score

_FENCE = pattern(rf"(?s)```(?:json)?{SPACE}*\n(.*?)```")

#: graded by the judge: a question about the answer, or its comparison with a reference
JUDGED_TYPES = ("judge", "baseline")
STRING_TYPES = ("contains", "icontains", "equals", "starts_with", *JUDGED_TYPES)
#: a list of strings: the answer contains any (all) of them, in its case or in any case
LIST_TYPES = ("contains_any", "contains_all", "icontains_any", "icontains_all")
PATTERN_TYPES = ("regex",)
LIMIT_TYPES = ("max_length", "min_length", "max_tokens", "max_latency_ms", "max_cost_usd")
JSON_TYPES = ("is_json", "contains_json", "json_schema", "json_field")
#: yes-or-no checks of the answer that ``not_<type>`` turns round
NEGATABLE = (
    "contains",
    "icontains",
    "equals",
    "starts_with",
    *LIST_TYPES,
    "regex",
    "is_json",
    "contains_json",
)
NEGATED_TYPES = tuple(f"not_{kind}" for kind in NEGATABLE)
#: an agent's conversation: the tools it called, in what order, in how many steps
TRAJECTORY_TYPES = ("tool_called", "tool_not_called", "tool_sequence", "max_steps")
#: how ``tool_sequence`` compares the calls made with the names listed
SEQUENCE_MODES = ("exact", "in_order", "any_order", "subset", "superset")
#: a repository task's final copy: a glob there or not, a file's content, a file as it was
FILE_TYPES = ("file_exists", "file_not_exists", "file_matches", "file_unchanged")
FILE_MATCH_KEYS = ("path", "regex")
BUILTIN_TYPES = (
    *STRING_TYPES,
    *LIST_TYPES,
    *PATTERN_TYPES,
    *NEGATED_TYPES,
    *LIMIT_TYPES,
    *JSON_TYPES,
    *TRAJECTORY_TYPES,
    *FILE_TYPES,
    "topics",
)
#: what a ``json_field`` compares the field with: exactly one of these
FIELD_CHECKS = ("equals", "in", "matches", "approx")
FIELD_KEYS = ("path", *FIELD_CHECKS, "tolerance")
OPTIONS = ("type", "value", "weight", "threshold", "include_prefill")
#: options only some types take
TYPE_OPTIONS = {
    "tool_called": ("input",),
    "tool_sequence": ("mode",),
    **{kind: ("votes",) for kind in JUDGED_TYPES},
}
#: a judge graded by majority: an odd number of votes, each its own recorded call
MAX_VOTES = 9


@dataclass(frozen=True)
class Assertion:
    type: str
    value: Any = None
    weight: float = 1.0
    threshold: float | None = None
    include_prefill: bool = False
    #: tool_called: the input the call must hold; tool_sequence: its mode
    input: Any = None
    mode: str = "exact"
    #: judge: the votes its verdict is the majority of
    votes: int = 1

    @property
    def tools(self) -> tuple[str, ...]:
        """The tool names a trajectory assertion names."""
        if self.type not in ("tool_called", "tool_not_called", "tool_sequence"):
            return ()
        return tuple(self.value) if isinstance(self.value, list) else (self.value,)


@dataclass(frozen=True)
class FieldCheck:
    """A parsed ``json_field`` value: where the field is and what it must be."""

    path: tuple[str, ...]
    name: str  # the path as tables show it (``field_name``)
    check: str  # one of FIELD_CHECKS
    expected: Any
    tolerance: float | None = None


@dataclass(frozen=True)
class Checked:
    type: str
    passed: bool
    score: float
    weight: float
    reason: str
    field: str | None = None
    step: int | None = None

    def result(self) -> CheckResult:
        return CheckResult(
            self.type,
            self.passed,
            round(self.score, 6),
            self.weight,
            self.reason,
            self.field,
            self.step,
        )


def parse_assertions(
    entries: Any, where: tuple[Any, int | None], owner: str, scorers: Iterable[str] = ()
) -> list[Assertion]:
    """Validate an ``assert:`` list; errors name file, line, owner (case or prompt) and entry."""
    path, line = where
    if entries is None:
        return []
    if not isinstance(entries, list):
        raise PromptevalError(f"{owner}, field 'assert': expected a list of assertions", path, line)
    known = (*BUILTIN_TYPES, *scorers)
    return [
        _parse_entry(
            entry, known, _failer(f"{owner}, assert[{index}]", path, line_of(entry, None) or line)
        )
        for index, entry in enumerate(entries)
    ]


def _failer(prefix: str, path: Any, entry_line: int | None) -> Callable[..., PromptevalError]:
    """The error for one entry: its message after ``prefix``, at the entry's line."""

    def fail(message: str, at: int | None = None) -> PromptevalError:
        return PromptevalError(f"{prefix}: {message}", path, at or entry_line)

    return fail


def _expanded(entry: Any, known: tuple[str, ...]) -> Any:
    """The shorthand {contains: "x"} as {type: contains, value: "x"}: the one key naming a
    known type is the type."""
    if not isinstance(entry, Mapping) or "type" in entry:
        return entry
    short = [k for k in entry if k not in OPTIONS and k not in ("input", "mode")]
    named = [k for k in short if k in known] if len(short) > 1 else short
    if len(named) != 1:
        return entry
    entry = {**entry, "type": named[0], "value": entry[named[0]]}
    del entry[named[0]]
    return entry


def _check_kind(
    entry: Mapping[str, Any], known: tuple[str, ...], fail: Callable[..., PromptevalError]
) -> None:
    """The entry's options are its type's, its type is known, a scorer is given no value."""
    kind = entry["type"]
    allowed = (*OPTIONS, *TYPE_OPTIONS.get(kind, ()))
    extra = [k for k in entry if k not in allowed]
    if extra:
        raise fail(f"unknown option(s) {', '.join(extra)}; allowed: {', '.join(allowed)}")
    if kind not in known:
        raise fail(
            f"unknown assertion or scorer {kind!r}{suggestion(kind, known)}; known: "
            f"{', '.join(sorted(known))}"
        )
    value = entry.get("value")
    if kind not in BUILTIN_TYPES and value is not None and value is not True:
        # a scorer scores the answer alone: a value given it would be silently ignored
        raise fail(
            f"scorer {kind!r} takes no value (got {value!r}); write {{{kind}: true}}, or "
            f"{{type: {kind}, threshold: X}} for the score it needs"
        )


def _numbers(
    entry: Mapping[str, Any], fail: Callable[..., PromptevalError]
) -> tuple[int, float, float | None]:
    """The entry's votes, weight and threshold, checked."""
    votes = entry.get("votes", 1)
    if isinstance(votes, bool) or votes not in range(1, MAX_VOTES + 1, 2):
        raise fail(f"votes: expected an odd whole number from 1 to {MAX_VOTES} (a majority)")
    weight = entry.get("weight", 1.0)
    threshold = entry.get("threshold")
    if isinstance(weight, bool) or not isinstance(weight, int | float) or weight < 0:
        raise fail("weight: expected a number >= 0")
    if threshold is not None and (
        isinstance(threshold, bool)
        or not isinstance(threshold, int | float)
        or not 0 <= threshold <= 1
    ):
        raise fail("threshold: expected a number from 0 to 1")
    return votes, float(weight), None if threshold is None else float(threshold)


def _parse_entry(
    entry: Any, known: tuple[str, ...], fail: Callable[..., PromptevalError]
) -> Assertion:
    entry = _expanded(entry, known)
    if not isinstance(entry, Mapping) or not isinstance(entry.get("type"), str):
        raise fail("expected a mapping with a 'type' (or {type_name: value})")
    _check_kind(entry, known, fail)
    kind, value = entry["type"], entry.get("value")
    _check_value(kind, value, fail)
    _check_trajectory(kind, entry, fail)
    _check_file(kind, value, fail)
    if kind == "json_field":
        value = _parse_field(value, fail)
    votes, weight, threshold = _numbers(entry, fail)
    return Assertion(
        kind,
        value,
        weight,
        threshold,
        bool(entry.get("include_prefill", False)),
        entry.get("input"),
        entry.get("mode", "exact"),
        votes,
    )


def _check_trajectory(
    kind: str, entry: Mapping[str, Any], fail: Callable[[str], PromptevalError]
) -> None:
    value = entry.get("value")
    if kind in ("tool_called", "tool_not_called") and (not isinstance(value, str) or not value):
        raise fail(f"{kind}: expected a tool's name")
    if kind == "tool_sequence":
        _check_sequence(value, entry.get("mode", "exact"), fail)
    if kind == "max_steps" and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise fail("max_steps: expected a whole number >= 1")
    wanted = entry.get("input")
    if wanted is not None:
        _check_input(wanted, fail)


def _check_sequence(value: Any, mode: Any, fail: Callable[[str], PromptevalError]) -> None:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise fail("tool_sequence: expected a list of tool names")
    if mode not in SEQUENCE_MODES:
        raise fail(
            f"tool_sequence: mode {mode!r}{suggestion(str(mode), SEQUENCE_MODES)}; known: "
            + ", ".join(SEQUENCE_MODES)
        )


def _check_input(wanted: Any, fail: Callable[[str], PromptevalError]) -> None:
    """A tool call's expected ``input``: a mapping whose regexes RE2 can run."""
    if not isinstance(wanted, Mapping):
        raise fail("tool_called: input: expected a mapping of the arguments the call holds")
    for source in _regexes(wanted):
        try:
            pattern(source)
        except PatternError as exc:
            raise fail(f"tool_called: input: {exc}") from None


def _check_file(kind: str, value: Any, fail: Callable[[str], PromptevalError]) -> None:
    """A path (a glob for the ``*exists`` two) within the repository; ``file_matches``
    takes ``{path: P, regex: R}``."""
    if kind not in FILE_TYPES:
        return
    if kind == "file_matches":
        path, what = _file_matches_path(value, fail), "file_matches: path"
    else:
        path, what = value, kind
    glob = kind in ("file_exists", "file_not_exists")
    text = path if isinstance(path, str) else ""
    parts = text.split("/")
    if {"", ".", ".."} & {*parts} or (not glob and any(c in text for c in "*?[")):
        raise fail(
            f"{what}: expected a {'glob' if glob else 'file'}'s path within the repository "
            f"(relative, no '..'{'' if glob else ', no wildcard'}), got {path!r:.80}"
        )
    if glob:
        from pytest_prompteval.sandbox.filestate import glob_pattern  # a repository's files

        try:
            pattern(glob_pattern(text))
        except PatternError as exc:
            raise fail(f"{kind}: glob {path!r}: {exc}") from None


def _file_matches_path(value: Any, fail: Callable[[str], PromptevalError]) -> Any:
    """``file_matches``' keys and regex checked; its path, to check as the others' are."""
    if not isinstance(value, Mapping):
        raise fail("file_matches: expected {path: FILE, regex: PATTERN}")
    for key in value:
        if key not in FILE_MATCH_KEYS:
            raise fail(
                f"file_matches: unknown key {key!r}{suggestion(str(key), FILE_MATCH_KEYS)}; "
                f"allowed: {', '.join(FILE_MATCH_KEYS)}"
            )
    if not isinstance(value.get("regex"), str):
        raise fail("file_matches: regex: expected a regular expression")
    try:
        pattern(value["regex"])
    except PatternError as exc:
        raise fail(f"file_matches: regex: {exc}") from None
    return value.get("path")


def file_job(assertion: Assertion) -> dict[str, str]:
    """What the verdict's sandbox checks for a file assertion."""
    value = assertion.value
    if assertion.type == "file_matches":
        return {"type": assertion.type, "path": value["path"], "regex": value["regex"]}
    return {"type": assertion.type, "path": value}


def _regexes(value: Any) -> Iterator[str]:
    if isinstance(value, Mapping):
        if set(value) == {"regex"}:
            yield str(value["regex"])
            return
        for item in value.values():
            yield from _regexes(item)
    elif isinstance(value, list):
        for item in value:
            yield from _regexes(item)


def _calls_shown(trajectory: Trajectory) -> str:
    calls = [f"{c.name}({_shown(c.input)})" for c in trajectory.calls]
    return ", ".join(calls) or "no tool calls"


def _in_order(wanted: Sequence[str], made: Sequence[str]) -> bool:
    rest = iter(made)
    return all(name in rest for name in wanted)


def _step_of_call(trajectory: Trajectory, index: int | None) -> int | None:
    """The step that made the ``index``-th tool call of the conversation."""
    if index is None:
        return None
    made = 0
    for step in trajectory.steps:
        made += len(step.calls)
        if index < made:
            return step.number
    return None


def _breaking_call(kind: str, mode: str | None, value: Any, names: Sequence[str]) -> int | None:
    """The first call that breaks a trajectory assertion, when one call does: a forbidden
    call, the first call off an exact sequence, the first outside a subset."""
    if kind == "tool_not_called":
        return names.index(value) if value in names else None
    if kind == "tool_sequence" and mode == "exact":
        pairs = enumerate(zip(names, value, strict=False))
        off = next((i for i, (made, wanted) in pairs if made != wanted), None)
        if off is not None:
            return off
        return len(value) if len(names) > len(value) else None
    if kind == "tool_sequence" and mode == "subset":
        return next((i for i, name in enumerate(names) if name not in value), None)
    return None


#: tool_sequence's modes: whether the calls made fit the names wanted
_SEQUENCE_CHECKS: dict[str | None, Callable[[Sequence[str], Sequence[str]], bool]] = {
    "exact": lambda wanted, made: list(made) == list(wanted),
    "in_order": _in_order,
    "any_order": lambda wanted, made: sorted(made) == sorted(wanted),
    "subset": lambda wanted, made: set(made) <= set(wanted),
    "superset": lambda wanted, made: set(wanted) <= set(made),
}


def check_trajectory(assertion: Assertion, trajectory: Trajectory) -> Checked:
    """A trajectory assertion on an agent's conversation: the reason names what was
    expected and the calls made."""
    kind, value = assertion.type, assertion.value
    names = [c.name for c in trajectory.calls]
    if kind == "tool_called":
        found = [
            c
            for c in trajectory.calls
            if c.name == value
            and (assertion.input is None or input_matches(assertion.input, c.input))
        ]
        wanted = (
            value if assertion.input is None else f"{value} with input {_shown(assertion.input)}"
        )
        passed, reason = bool(found), f"a call to {wanted}"
    elif kind == "tool_not_called":
        passed, reason = value not in names, f"no call to {value}"
    elif kind == "tool_sequence":
        mode = assertion.mode
        passed = _SEQUENCE_CHECKS.get(mode, _SEQUENCE_CHECKS["superset"])(value, names)
        reason = f"calls {', '.join(value)} ({mode})"
    else:
        steps = len(trajectory.steps)
        passed, reason = steps <= value, f"{steps} steps <= {value}"
        return Checked(
            kind,
            passed,
            float(passed),
            assertion.weight,
            reason if passed else f"expected: {reason}",
            step=None if passed else value + 1,  # the first step over
        )
    if passed:
        return Checked(kind, True, 1.0, assertion.weight, reason)
    return Checked(
        kind,
        False,
        0.0,
        assertion.weight,
        f"expected {reason}; made: {_calls_shown(trajectory)}",
        step=_step_of_call(trajectory, _breaking_call(kind, assertion.mode, value, names)),
    )


def base_type(kind: str) -> str:
    """The check a ``not_<type>`` turns round (the type itself for the others)."""
    return kind[4:] if kind in NEGATED_TYPES else kind


def _check_value(kind: str, value: Any, fail: Callable[[str], PromptevalError]) -> None:
    named, kind = kind, base_type(kind)
    _check_text_value(named, kind, value, fail)
    if kind == "json_schema" or (kind == "contains_json" and value is not None):
        _check_schema_value(named, value, fail)
    if (
        kind == "topics"
        and value is not None
        and not (isinstance(value, list) and all(isinstance(v, str) for v in value))
    ):
        raise fail("topics: expected a list of topic names, or nothing for the case's own")


def _check_text_value(
    named: str, kind: str, value: Any, fail: Callable[[str], PromptevalError]
) -> None:
    """The value of a type that takes a string, strings, a pattern or a limit."""
    if kind in STRING_TYPES and (not isinstance(value, str) or not value):
        raise fail(f"{named}: expected a non-empty string value")
    if kind in LIST_TYPES and (
        not isinstance(value, list) or not value or not all(isinstance(v, str) and v for v in value)
    ):
        raise fail(f"{named}: expected a non-empty list of non-empty strings")
    if kind in PATTERN_TYPES:
        _check_pattern(named, value, fail)
    if kind in LIMIT_TYPES and (
        isinstance(value, bool) or not isinstance(value, int | float) or value < 0
    ):
        raise fail(f"{kind}: expected a number >= 0")


def _check_pattern(named: str, value: Any, fail: Callable[[str], PromptevalError]) -> None:
    if not isinstance(value, str):
        raise fail(f"{named}: expected a regular expression")
    try:
        pattern(value)
    except PatternError as exc:
        raise fail(f"{named}: {exc}") from None


def _check_schema_value(named: str, value: Any, fail: Callable[[str], PromptevalError]) -> None:
    import jsonschema  # slow to import: only for suites that use it

    if not isinstance(value, Mapping):
        raise fail(f"{named}: expected a JSON schema (a mapping)")
    try:
        jsonschema.Draft202012Validator.check_schema(dict(value))
    except jsonschema.SchemaError as exc:
        raise fail(f"{named}: invalid schema: {exc.message}") from None
    _check_schema(value, fail)


def _is_json_value(value: Any) -> bool:
    if value is None or isinstance(value, str | int | float):  # bool is an int
        return True
    if isinstance(value, list):
        return all(_is_json_value(v) for v in value)
    if isinstance(value, Mapping):
        return all(isinstance(k, str) and _is_json_value(v) for k, v in value.items())
    return False


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def field_name(path: Sequence[str]) -> str:
    """A field as tables and messages show it: dotted (``items.0.sku``) when every key can
    be written so, else a JSON Pointer."""
    if path and all(key and "." not in key and not key.startswith("/") for key in path):
        return ".".join(path)
    return "".join("/" + key.replace("~", "~0").replace("/", "~1") for key in path)


def _parse_field(value: Any, fail: Callable[[str], PromptevalError]) -> FieldCheck:
    """``{path: P, equals|in|matches|approx: V[, tolerance: T]}``: P a JSON Pointer
    (``/items/0/sku``) or dotted (``items.0.sku``)."""
    if not isinstance(value, Mapping):
        raise fail(f"json_field: expected {{path: FIELD, {'|'.join(FIELD_CHECKS)}: VALUE}}")
    for key in value:
        if key not in FIELD_KEYS:
            raise fail(
                f"json_field: unknown key {key!r}{suggestion(str(key), FIELD_KEYS)}; allowed: "
                + ", ".join(FIELD_KEYS)
            )
    path = _field_path(value.get("path"), fail)
    check, expected = _field_check(value, fail)
    tolerance = value.get("tolerance")
    if tolerance is not None and (check != "approx" or not _is_number(tolerance) or tolerance < 0):
        raise fail("json_field: tolerance: expected a number >= 0, beside approx")
    return FieldCheck(
        path, field_name(path), check, expected, None if tolerance is None else float(tolerance)
    )


def _field_path(where: Any, fail: Callable[[str], PromptevalError]) -> tuple[str, ...]:
    if not isinstance(where, str) or not where:
        raise fail("json_field: path: expected a JSON Pointer (/a/0/b) or a dotted path (a.0.b)")
    if where.startswith("/"):
        path = tuple(k.replace("~1", "/").replace("~0", "~") for k in where[1:].split("/"))
    else:
        path = tuple(where.split("."))
        if "" in path:
            raise fail(f"json_field: path {where!r}: an empty key; write a JSON Pointer for it")
    return path


def _field_check(
    value: Mapping[str, Any], fail: Callable[[str], PromptevalError]
) -> tuple[str, Any]:
    """The one comparison a field check names, and the value it compares with."""
    checks = [k for k in FIELD_CHECKS if k in value]
    if len(checks) != 1:
        raise fail(f"json_field: give exactly one of {', '.join(FIELD_CHECKS)}")
    (check,) = checks
    expected = value[check]
    if not _is_json_value(expected):
        raise fail(
            f"json_field: {check}: {expected!r} is no JSON value (quote a date or a time in YAML)"
        )
    if check == "in" and (not isinstance(expected, list) or not expected):
        raise fail("json_field: in: expected a non-empty list of values")
    if check == "matches":
        if not isinstance(expected, str):
            raise fail("json_field: matches: expected a regular expression")
        try:
            pattern(expected)
        except PatternError as exc:
            raise fail(f"json_field: matches: {exc}") from None
    if check == "approx" and not _is_number(expected):
        raise fail("json_field: approx: expected a number")
    return check, expected


def _shown(value: Any) -> str:
    """A JSON value as JSON (``"urgent"``, ``null``, ``true``), cut to a line."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 80 else text[:77] + "..."


def _same(a: Any, b: Any) -> bool:
    """JSON equality: ``true`` is not ``1``, ``1`` is ``1.0``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return type(a) is type(b) and bool(a == b)


def _resolve(document: Any, path: Sequence[str]) -> tuple[bool, Any]:
    """(True, the field's value), or (False, why it is not there)."""
    node = document
    for depth, key in enumerate(path):
        parent = field_name(path[:depth]) or "the top level"
        if isinstance(node, dict):
            if key not in node:
                return False, f"missing: {parent} has no {key!r}"
            node = node[key]
        elif isinstance(node, list):
            if not key.isdigit() or (key != "0" and key.startswith("0")):
                return False, f"missing: {parent} is an array, {key!r} is no index"
            if int(key) >= len(node):
                return False, f"missing: {parent} has {len(node)} items, no [{key}]"
            node = node[int(key)]
        else:
            return False, f"missing: {parent} is {_shown(node)}, not an object or array"
    return True, node


def check_field(field: FieldCheck, document: Any) -> tuple[bool, str]:
    found, value = _resolve(document, field.path)
    if not found:
        return False, f"{field.name}: {value}"
    expected = field.expected
    if field.check == "equals":
        passed, wanted = _same(value, expected), _shown(expected)
    elif field.check == "in":
        passed = any(_same(value, option) for option in expected)
        wanted = f"one of {_shown(expected)}"
    elif field.check == "matches":
        passed = isinstance(value, str) and pattern(expected).search(value) is not None
        wanted = f"a string matching /{expected}/"
    else:
        number = _is_number(value)
        if field.tolerance is None:  # as pytest.approx: relative 1e-6
            passed = number and math.isclose(value, expected, rel_tol=1e-6, abs_tol=1e-12)
            wanted = f"{expected} ± 1e-6 relative"
        else:
            passed = number and abs(value - expected) <= field.tolerance
            wanted = f"{expected} ± {field.tolerance:g}"
    if passed:
        return True, f"{field.name} = {_shown(value)}"
    return False, f"{field.name}: expected {wanted}, got {_shown(value)}"


#: validators whose "expected X, got Y" says it all; the others add jsonschema's message
_PLAIN_VALIDATORS = frozenset(
    {"const", "enum", "type", "pattern", "format", "minimum", "maximum", "exclusiveMinimum",
     "exclusiveMaximum", "multipleOf", "minLength", "maxLength", "minItems", "maxItems",
     "minProperties", "maxProperties"}
)  # fmt: skip


def schema_failure(errors: Sequence[Any]) -> str:
    """The most relevant of a document's schema errors: the field path, what the schema
    expected there and what the answer has, then how many more there are."""
    from jsonschema.exceptions import best_match

    error = best_match(errors)
    path = [str(k) for k in error.absolute_path]
    where = field_name(path) or "the top level"
    required = error.validator_value if error.validator == "required" else []
    missing = [k for k in required if k not in error.instance]
    if missing:  # the field is the missing one, not the object that lacks it
        text = f"{field_name([*path, missing[0]])}: expected a value (required), got none"
    elif error.validator is None:  # a false schema
        text = f"{where}: {error.message}"
    else:
        text = (
            f"{where}: expected {error.validator} {_shown(error.validator_value)}, got "
            f"{_shown(error.instance)}"
        )
        if error.validator not in _PLAIN_VALIDATORS:
            text += f" ({error.message})"
    more = len(errors) - 1
    return text + (f" (+{more} more schema errors)" if more else "")


#: keywords whose value is one subschema, a mapping of them, a list of them
_SUBSCHEMA = frozenset(
    {"additionalProperties", "propertyNames", "if", "then", "else", "not", "contains", "items",
     "unevaluatedItems", "unevaluatedProperties", "contentSchema"}
)  # fmt: skip
_SUBSCHEMA_MAPS = frozenset(
    {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
)
_SUBSCHEMA_LISTS = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
#: draft 2020-12's vocabularies (core, applicator, unevaluated, validation, meta-data,
#: format, content), and draft 7's ``definitions`` that ``$ref`` still reaches
SCHEMA_KEYWORDS = _SUBSCHEMA | _SUBSCHEMA_MAPS | _SUBSCHEMA_LISTS | frozenset(
    {"$schema", "$id", "$ref", "$anchor", "$dynamicRef", "$dynamicAnchor", "$vocabulary",
     "$comment", "type", "const", "enum", "multipleOf", "maximum", "exclusiveMaximum", "minimum",
     "exclusiveMinimum", "maxLength", "minLength", "pattern", "maxItems", "minItems",
     "uniqueItems", "maxContains", "minContains", "maxProperties", "minProperties", "required",
     "dependentRequired", "title", "description", "default", "deprecated", "readOnly",
     "writeOnly", "examples", "format", "contentEncoding", "contentMediaType"}
)  # fmt: skip


def _subschemas(node: Mapping[str, Any]) -> Iterator[Any]:
    """The schemas directly inside ``node``, by keyword: the names under ``properties`` and
    the values of ``const`` or ``enum`` are data, not schemas."""
    for key, value in node.items():
        if key in _SUBSCHEMA:
            yield from value if isinstance(value, list) else (value,)
        elif key in _SUBSCHEMA_MAPS and isinstance(value, Mapping):
            yield from value.values()
        elif key in _SUBSCHEMA_LISTS and isinstance(value, list):
            yield from value


def _check_schema(schema: Any, fail: Callable[..., PromptevalError]) -> None:
    """Every keyword at every level is draft 2020-12's (jsonschema ignores one it does not
    know, so ``cosnt`` would disable its check silently; ``x-`` names are the project's own
    annotations). A schema's ``pattern`` and ``patternProperties`` run on RE2
    (``schema_validator``): one RE2 cannot run is an error at its line.
    ``unevaluatedProperties`` would run them on Python's ``re`` (inside jsonschema), so it may
    not meet ``patternProperties``."""
    patterns: list[tuple[str, int | None]] = []
    keyed, unevaluated = False, []
    todo = [schema]
    seen: set[int] = set()  # a YAML alias shares a node: each is looked at once
    for node in todo:  # grows as it goes: every schema, outermost first
        if not isinstance(node, Mapping) or id(node) in seen:
            continue  # true and false are schemas too
        seen.add(id(node))
        _check_keywords(node, fail)
        if isinstance(node.get("pattern"), str):
            patterns.append((node["pattern"], line_of(node, "pattern")))
        properties = node.get("patternProperties")
        if isinstance(properties, Mapping) and properties:
            patterns += [(str(k), line_of(properties, k)) for k in properties]
            keyed = True
        if "unevaluatedProperties" in node:
            unevaluated.append(line_of(node, "unevaluatedProperties"))
        todo.extend(_subschemas(node))
    for source, line in patterns:
        try:
            pattern(source)
        except PatternError as exc:
            raise fail(f"json_schema: pattern {source!r}: {exc}", line) from None
    if keyed and unevaluated:
        raise fail(
            "json_schema: unevaluatedProperties cannot be used with patternProperties "
            "(patterns run on RE2; jsonschema would match these on Python's re)",
            unevaluated[0],
        )


def _check_keywords(node: Mapping[str, Any], fail: Callable[..., PromptevalError]) -> None:
    for key in node:
        if key not in SCHEMA_KEYWORDS and not key.startswith("x-"):
            raise fail(
                f"json_schema: unknown keyword {key!r}{suggestion(key, SCHEMA_KEYWORDS)} "
                "(draft 2020-12; an unknown keyword checks nothing; name your own "
                "annotations x-...)",
                line_of(node, key),
            )


@functools.cache
def schema_validator() -> Any:
    """Draft 2020-12 with ``pattern``, ``patternProperties`` and ``additionalProperties`` on
    RE2: jsonschema runs them on Python's ``re``, which a hostile answer can hang."""
    import jsonschema
    from jsonschema import validators

    base = jsonschema.Draft202012Validator
    additional = base.VALIDATORS["additionalProperties"]

    def pattern_(validator: Any, source: str, instance: Any, schema: Any) -> Iterator[Any]:
        if validator.is_type(instance, "string") and not pattern(source).search(instance):
            yield jsonschema.ValidationError(f"{instance!r:.200} does not match {source!r}")

    def pattern_properties(
        validator: Any, properties: Mapping[str, Any], instance: Any, schema: Any
    ) -> Iterator[Any]:
        if not validator.is_type(instance, "object"):
            return
        for source, subschema in properties.items():
            for key, value in instance.items():
                if pattern(source).search(key):
                    yield from validator.descend(value, subschema, path=key, schema_path=source)

    def additional_properties(
        validator: Any, allowed: Any, instance: Any, schema: Any
    ) -> Iterator[Any]:
        sources = schema.get("patternProperties", {})
        if validator.is_type(instance, "object") and sources:
            instance = {
                k: v for k, v in instance.items() if not any(pattern(s).search(k) for s in sources)
            }
            schema = {k: v for k, v in schema.items() if k != "patternProperties"}
        yield from additional(validator, allowed, instance, schema)

    return validators.extend(  # type: ignore[no-untyped-call]
        base,
        {
            "pattern": pattern_,
            "patternProperties": pattern_properties,
            "additionalProperties": additional_properties,
        },
    )


def parse_json(text: str) -> Any:
    """The JSON in a response: the whole text, else its first ```json fenced block."""
    try:
        return json.loads(text)
    except ValueError:
        match = _FENCE.search(text)
        if match is None:
            raise
        return json.loads(match.group(1))


@dataclass(frozen=True)
class Observed:
    """What an assertion may look at."""

    text: str
    prefill: str
    output_tokens: int
    latency_ms: float | None
    cost_usd: float | None


def _text_check(kind: str, value: Any, text: str) -> tuple[bool, str]:
    """A check of the answer's text: whether it holds, and what it is (said positively)."""
    if kind == "contains":
        return value in text, f"contains {value!r}"
    if kind == "icontains":
        return value.lower() in text.lower(), f"contains {value!r} (any case)"
    if kind == "equals":
        return text.strip() == value.strip(), f"equals {value!r}"
    if kind == "starts_with":
        return text.lstrip().startswith(value), f"starts with {value!r}"
    if kind == "regex":
        return pattern(value).search(text) is not None, f"matches /{value}/"
    fold = kind.startswith("i")  # the lists: (i)contains_any, (i)contains_all
    haystack = text.lower() if fold else text
    found = [v for v in value if (v.lower() if fold else v) in haystack]
    which = "any" if kind.endswith("any") else "all"
    passed = bool(found) if which == "any" else len(found) == len(value)
    return passed, f"contains {which} of {_shown(value)}" + (" (any case)" if fold else "")


def _negated(reason: str) -> str:
    """``contains 'x'`` -> ``does not contain 'x'``: what a ``not_<type>`` expects."""
    verb, _, rest = reason.partition(" ")
    return f"does not {verb[:-2] if verb.endswith('ches') else verb[:-1]} {rest}"


#: where ``contains_json`` tries a value, after the whole answer and its fenced block: an
#: answer of a million ``[`` is read a bounded number of times
MAX_JSON_STARTS = 64


def _json_in(text: str) -> Iterator[Any]:
    """The JSON values in an answer: the answer itself or its first ```json block, else each
    value that starts at a ``{`` or ``[`` (at most MAX_JSON_STARTS tries)."""
    try:
        yield parse_json(text)
        return
    except (ValueError, RecursionError):
        pass
    decoder, start = json.JSONDecoder(), 0
    for _ in range(MAX_JSON_STARTS):
        starts = [i for i in (text.find("{", start), text.find("[", start)) if i >= 0]
        if not starts:
            return
        try:
            value, start = decoder.raw_decode(text, min(starts))
        except (ValueError, RecursionError):
            start = min(starts) + 1
            continue
        yield value


def _contains_json(text: str, schema: Any) -> tuple[bool, str]:
    failures = []
    for document in _json_in(text):
        if schema is None:
            return True, "contains JSON"
        errors = list(schema_validator()(dict(schema)).iter_errors(document))
        if not errors:
            return True, "contains JSON matching the schema"
        failures.append(errors)
    if failures:
        return False, f"schema: {schema_failure(failures[0])}"
    return False, "no JSON found"


def _check_json(assertion: Assertion, text: str) -> Checked:
    kind, value = assertion.type, assertion.value
    base = base_type(kind)
    field = value.name if base == "json_field" else None
    if base == "contains_json":
        passed, reason = _contains_json(text, value)
    else:
        try:
            document = parse_json(text)
        except ValueError as exc:
            passed, reason = False, f"not JSON: {exc}"
        else:
            if base == "is_json":
                passed, reason = True, "is JSON"
            elif base == "json_field":
                passed, reason = check_field(value, document)
            else:
                errors = list(schema_validator()(dict(value)).iter_errors(document))
                passed = not errors
                reason = "matches the schema" if passed else f"schema: {schema_failure(errors)}"
    if base != kind:  # not_is_json, not_contains_json
        passed = not passed
        wanted = "is not JSON" if base == "is_json" else "contains no JSON"
        reason = wanted if passed else f"expected: {wanted}"
    # the reason says what was expected and what came
    return Checked(kind, passed, float(passed), assertion.weight, reason, field)


def check_simple(assertion: Assertion, seen: Observed) -> Checked | None:
    """Assertions that need nothing but the response; None for the others."""
    kind, value = assertion.type, assertion.value
    text = seen.prefill + seen.text if assertion.include_prefill else seen.text
    base = base_type(kind)
    passed: bool
    if base in JSON_TYPES:
        return _check_json(assertion, text)
    if base in NEGATABLE:
        passed, reason = _text_check(base, value, text)
        if base != kind:
            passed, reason = not passed, _negated(reason)
    elif kind == "max_length":
        passed, reason = len(text) <= value, f"length {len(text)} <= {value}"
    elif kind == "min_length":
        passed, reason = len(text) >= value, f"length {len(text)} >= {value}"
    elif kind == "max_tokens":
        passed, reason = seen.output_tokens <= value, f"{seen.output_tokens} tokens <= {value}"
    elif kind == "max_latency_ms":
        latency = seen.latency_ms or 0.0
        passed, reason = latency <= value, f"latency {latency:.0f} ms <= {value}"
    elif kind == "max_cost_usd":
        if seen.cost_usd is None:
            return Checked(kind, False, 0.0, assertion.weight, "cost unknown: model not priced")
        passed, reason = seen.cost_usd <= value, f"cost ${seen.cost_usd:.6f} <= ${value}"
    else:
        return None
    return Checked(
        kind,
        passed,
        1.0 if passed else 0.0,
        assertion.weight,
        reason if passed else f"expected: {reason}",
    )


def scored(assertion: Assertion, score: float, default_threshold: float, reason: str) -> Checked:
    threshold = assertion.threshold if assertion.threshold is not None else default_threshold
    passed = score >= threshold
    return Checked(
        assertion.type,
        passed,
        score,
        assertion.weight,
        f"{reason} (score {score:.2f} {'>=' if passed else '<'} {threshold:.2f})",
    )


def custom_score(name: str, result: Any) -> tuple[float, dict[str, float]]:
    if isinstance(result, Score):
        value, dims = result.value, dict(result.dimensions)
    elif isinstance(result, int | float) and not isinstance(result, bool):
        value, dims = float(result), {}
    else:
        raise PromptevalError(
            f"scorer {name!r} returned {type(result).__name__}; expected a number in [0, 1] "
            "or a pytest_prompteval Score"
        )
    if not 0.0 <= value <= 1.0:
        raise PromptevalError(f"scorer {name!r} returned {value}, outside [0, 1]")
    return value, dims


def combine(main: float | None, checks: Sequence[Checked]) -> float:
    """The item's score: the main scorer (weight 1; None: the item has none) and the
    assertions, by weight; assertions all of weight 0 count alike."""
    scores = [(c.score, c.weight) for c in checks] + ([] if main is None else [(main, 1.0)])
    total = sum(w for _, w in scores)
    if not total:
        return statistics.fmean(s for s, _ in scores)
    return sum(s * w for s, w in scores) / total
