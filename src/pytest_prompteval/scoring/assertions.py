"""``assert:`` entries of cases and prompt versions: parsed and checked at collection,
evaluated per response. Each gives a score in [0, 1] and a pass/fail against its threshold.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_prompteval.core.errors import PromptevalError
from pytest_prompteval.core.patterns import SPACE, PatternError, pattern
from pytest_prompteval.core.result import CheckResult
from pytest_prompteval.core.schema import suggestion
from pytest_prompteval.core.yamlload import line_of
from pytest_prompteval.scoring.score import Score

_FENCE = pattern(rf"(?s)```(?:json)?{SPACE}*\n(.*?)```")

STRING_TYPES = ("contains", "not_contains", "icontains", "equals", "judge")
PATTERN_TYPES = ("regex", "not_regex")
LIMIT_TYPES = ("max_length", "min_length", "max_tokens", "max_latency_ms", "max_cost_usd")
BUILTIN_TYPES = (*STRING_TYPES, *PATTERN_TYPES, *LIMIT_TYPES, "is_json", "json_schema", "topics")
OPTIONS = ("type", "value", "weight", "threshold", "include_prefill")


@dataclass(frozen=True)
class Assertion:
    type: str
    value: Any = None
    weight: float = 1.0
    threshold: float | None = None
    include_prefill: bool = False


@dataclass(frozen=True)
class Checked:
    type: str
    passed: bool
    score: float
    weight: float
    reason: str

    def result(self) -> CheckResult:
        return CheckResult(self.type, self.passed, round(self.score, 6), self.weight, self.reason)


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
    result = []
    for index, entry in enumerate(entries):
        entry_line = line_of(entry, None) or line

        def fail(message: str, _line: int | None = entry_line, _i: int = index) -> PromptevalError:
            return PromptevalError(f"{owner}, assert[{_i}]: {message}", path, _line)

        if isinstance(entry, Mapping) and "type" not in entry:
            # shorthand: {contains: "x"}; the one key naming a known type is the type
            short = [k for k in entry if k not in OPTIONS]
            named = [k for k in short if k in known] if len(short) > 1 else short
            if len(named) == 1:
                entry = {**entry, "type": named[0], "value": entry[named[0]]}
                del entry[named[0]]
        if not isinstance(entry, Mapping) or not isinstance(entry.get("type"), str):
            raise fail("expected a mapping with a 'type' (or {type_name: value})")
        extra = [k for k in entry if k not in OPTIONS]
        if extra:
            raise fail(f"unknown option(s) {', '.join(extra)}; allowed: {', '.join(OPTIONS)}")
        kind = entry["type"]
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
        _check_value(kind, value, fail)
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
        result.append(
            Assertion(
                kind,
                value,
                float(weight),
                None if threshold is None else float(threshold),
                bool(entry.get("include_prefill", False)),
            )
        )
    return result


def _check_value(kind: str, value: Any, fail: Callable[[str], PromptevalError]) -> None:
    if kind in STRING_TYPES and (not isinstance(value, str) or not value):
        raise fail(f"{kind}: expected a non-empty string value")
    if kind in PATTERN_TYPES:
        if not isinstance(value, str):
            raise fail(f"{kind}: expected a regular expression")
        try:
            pattern(value)
        except PatternError as exc:
            raise fail(f"{kind}: {exc}") from None
    if kind in LIMIT_TYPES and (
        isinstance(value, bool) or not isinstance(value, int | float) or value < 0
    ):
        raise fail(f"{kind}: expected a number >= 0")
    if kind == "json_schema":
        import jsonschema  # slow to import: only for suites that use it

        if not isinstance(value, Mapping):
            raise fail("json_schema: expected a JSON schema (a mapping)")
        try:
            jsonschema.Draft202012Validator.check_schema(dict(value))
        except jsonschema.SchemaError as exc:
            raise fail(f"json_schema: invalid schema: {exc.message}") from None
        _check_schema_patterns(value, fail)
    if (
        kind == "topics"
        and value is not None
        and not (isinstance(value, list) and all(isinstance(v, str) for v in value))
    ):
        raise fail("topics: expected a list of topic names, or nothing for the case's own")


#: schema keywords whose values are data, not schemas: a "pattern" key in them is no pattern
_SCHEMA_DATA = frozenset({"const", "enum", "default", "examples"})


def _check_schema_patterns(schema: Any, fail: Callable[..., PromptevalError]) -> None:
    """A schema's ``pattern`` and ``patternProperties`` run on RE2 (``schema_validator``): one
    RE2 cannot run is an error at its line. ``unevaluatedProperties`` would run them on
    Python's ``re`` (inside jsonschema), so it may not meet ``patternProperties``."""
    found: dict[str, list[tuple[str, int | None]]] = {"pattern": [], "keyed": [], "unevaluated": []}

    def walk(node: Any) -> None:
        if isinstance(node, list):
            for child in node:
                walk(child)
        if not isinstance(node, Mapping):
            return
        if isinstance(node.get("pattern"), str):
            found["pattern"].append((node["pattern"], line_of(node, "pattern")))
        properties = node.get("patternProperties")
        if isinstance(properties, Mapping):
            found["keyed"] += [(str(k), line_of(properties, k)) for k in properties]
        if "unevaluatedProperties" in node:
            found["unevaluated"].append(("", line_of(node, "unevaluatedProperties")))
        for key, child in node.items():
            if key not in _SCHEMA_DATA:
                walk(child)

    walk(schema)
    for source, line in found["pattern"] + found["keyed"]:
        try:
            pattern(source)
        except PatternError as exc:
            raise fail(f"json_schema: pattern {source!r}: {exc}", line) from None
    if found["keyed"] and found["unevaluated"]:
        raise fail(
            "json_schema: unevaluatedProperties cannot be used with patternProperties "
            "(patterns run on RE2; jsonschema would match these on Python's re)",
            found["unevaluated"][0][1],
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


def check_simple(assertion: Assertion, seen: Observed) -> Checked | None:
    """Assertions that need nothing but the response; None for the others."""
    kind, value = assertion.type, assertion.value
    text = seen.prefill + seen.text if assertion.include_prefill else seen.text
    passed: bool
    if kind == "contains":
        passed, reason = value in text, f"contains {value!r}"
    elif kind == "not_contains":
        passed, reason = value not in text, f"does not contain {value!r}"
    elif kind == "icontains":
        passed, reason = value.lower() in text.lower(), f"contains {value!r} (any case)"
    elif kind == "equals":
        passed, reason = text.strip() == value.strip(), f"equals {value!r}"
    elif kind == "regex":
        passed, reason = pattern(value).search(text) is not None, f"matches /{value}/"
    elif kind == "not_regex":
        passed, reason = pattern(value).search(text) is None, f"does not match /{value}/"
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
    elif kind in ("is_json", "json_schema"):
        try:
            document = parse_json(text)
        except ValueError as exc:
            return Checked(kind, False, 0.0, assertion.weight, f"not JSON: {exc}")
        if kind == "is_json":
            passed, reason = True, "is JSON"
        else:
            errors = list(schema_validator()(dict(value)).iter_errors(document))
            passed = not errors
            reason = "matches the schema" if passed else f"schema: {errors[0].message}"
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


def combine(main: float, checks: Sequence[Checked]) -> float:
    """The item's score: the main scorer (weight 1) and the assertions, by weight."""
    total = 1.0 + sum(c.weight for c in checks)
    return (main + sum(c.score * c.weight for c in checks)) / total
