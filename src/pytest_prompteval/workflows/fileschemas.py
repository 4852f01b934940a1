"""JSON Schemas of case files and prompt versions, for editors (yaml-language-server,
SchemaStore), generated from the names the loaders check: ``CASE_FIELDS`` and
``FILE_FIELDS`` (core/cases.py), ``PROMPT_FIELDS`` (core/prompts.py) and the assertion types
and options (scoring/assertions.py). A field the loaders learn and this table lacks, or the
other way round, stops the generation: the two cannot drift apart.

The schemas say what a file's shape must be (known fields, their types, the assertions);
what needs the project (its declared fields and scorers, regular expressions RE2 cannot
run, the files a case names) is left to collection and ``prompteval check-cases``.
Shipped as ``data/schemas/*.json``; ``python -m pytest_prompteval.workflows.fileschemas``
writes them again.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from pytest_prompteval.core.ablation import ABLATE_KEYS, ABLATION_FIELDS
from pytest_prompteval.core.cases import CASE_FIELDS, FILE_FIELDS, RESERVED_MARKERS
from pytest_prompteval.core.paths import NAME
from pytest_prompteval.core.prompts import EXTRA_BODY_PARAMS, PROMPT_FIELDS, TEMPLATE_FIELDS
from pytest_prompteval.scoring import assertions as a

KINDS = ("case", "prompt")
SHIPPED = Path(__file__).resolve().parents[1] / "data" / "schemas"
#: where SchemaStore (and an editor's settings) should apply each schema: narrow globs, the
#: plugin's default folders only
FILE_MATCH = {
    "case": ("**/prompt_cases/**/*.yaml", "**/prompt_cases/**/*.yml"),
    "prompt": ("**/prompts/*.yaml", "**/prompts/*.yml"),
}
_DRAFT = "http://json-schema.org/draft-07/schema#"

_ANY: dict[str, Any] = {}
_STRING = {"type": "string", "minLength": 1}
_TEXT = {"type": ["string", "null"]}
_STRINGS = {"type": ["array", "null"], "items": _STRING}
_MAPPING = {"type": "object"}
# the case-id rule (core/paths.py NAME); JSON Schema's patterns have no \A, \Z
_NAME_PATTERN = NAME.pattern.removesuffix(r"\Z") + "$"
_NAME = {"type": "string", "pattern": _NAME_PATTERN}
_MARKER = {"type": "string", "pattern": _NAME_PATTERN, "not": {"enum": sorted(RESERVED_MARKERS)}}
_LABEL = {**_MARKER, "type": ["string", "null"]}


def _number(low: float, high: float, integer: bool = False) -> dict[str, Any]:
    return {"type": ["integer" if integer else "number", "null"], "minimum": low, "maximum": high}


def _field(description: str, schema: Mapping[str, Any] = _ANY) -> dict[str, Any]:
    return {"description": description, **schema}


#: every case field: its description and, where collection checks it, its type
CASE_FIELD_SCHEMAS: dict[str, dict[str, Any]] = {
    "id": _field("Unique across all case files: letters, digits and _ . + -", _NAME),
    "input": _field("The request's data: sent as JSON after the user prompt", _MAPPING),
    "vars": _field(
        "Extra {placeholder} values for the prompt's templates", {"type": ["object", "null"]}
    ),
    "category": _field("A label; becomes a marker (-m)", _LABEL),
    "quality": _field("A label; becomes a marker (-m)", _LABEL),
    "difficulty": _field("beginner | intermediate | advanced (a marker)", _LABEL),
    "description": _field("What the case checks", _TEXT),
    "notes": _field("Free text for people"),
    "tags": _field("More markers", {"type": ["array", "null"], "items": _MARKER}),
    "expected_topics": _field("Topics the automatic scorer looks for", _STRINGS),
    "threshold": _field("Score the item needs to pass (ini prompteval_threshold)", _number(0, 1)),
    "samples": _field("Samples per prompt version (--prompteval-samples)", _number(1, 1000, True)),
    "min_pass": _field(
        "Samples that must pass: a count (4) or a share (0.8)", {"type": ["number", "string"]}
    ),
    "assert": _field("Assertions on the answer", {"$ref": "#/definitions/assertions"}),
    "audience": _field("The automatic scorer: whose expected_topics_by_audience apply"),
    "expected_topics_by_audience": _field("Topics per audience", {"type": ["object", "null"]}),
    "explanation_type": _field("Compiler Explorer's explain project: data for its templates"),
    "common_mistakes": _field("Compiler Explorer's explain project: data for its templates"),
    "key_terms": _field("Terms the completeness dimension looks for"),
    "review_template": _field("The judge's rubric for this case"),
    "kind": _field("code | repo (else inferred from entry_point / repo)"),
    "entry_point": _field("Code cases: the function under test", _STRING),
    "language": _field("Code cases: python"),
    "tests": _field(
        "Code cases: {assert: ...}, {check: ...}, {args: [...], expected: ...}, "
        "{stdin: ..., stdout: ...} or {unittest: ...}"
    ),
    "test_setup": _field("Code cases: source run before each assert, check and unittest", _TEXT),
    "atol": _field("Code cases: absolute tolerance for numbers in outputs", {"type": "number"}),
    "reference": _field("Code cases: a correct solution's source", _TEXT),
    "properties": _field("Code cases: property tests against the reference"),
    "timeout": _field("Seconds: CPU time per code sample, or per repository command"),
    "repo": _field("Repository cases: a folder of the project, or {git: PATH, ref: REF}"),
    "fail_to_pass": _field("Repository cases: tests the fix must make pass", _STRINGS),
    "pass_to_pass": _field("Repository cases: tests that must still pass", _STRINGS),
    "reference_patch": _field("Repository cases: a patch that resolves the task", _TEXT),
    "test_patch": _field("Repository cases: a patch adding the task's tests", _TEXT),
    "test_command": _field("Repository cases: the shell command that runs the tests", _TEXT),
    "memory_mb": _field("Repository cases: MiB for the sandbox", {"type": ["integer", "null"]}),
    "agent_may_change": _field("Repository cases: files the agent may change"),
    "environment": _field("Repository cases: the environment the tests run in"),
    "tools": _field("Agent cases: tools beyond the prompt version's", {"type": "array"}),
    "tool_results": _field("Agent cases: scripted tool results", {"type": "array"}),
    "turns": _field("Agent cases: user turns sent each time the model ends its turn"),
    "user_simulator": _field("Agent cases: a model playing the user"),
    "item_timeout": _field("Agent cases: seconds the tool calls may run in all"),
    "max_tool_calls": _field("Agent cases: tool calls one turn may ask for"),
}

PROMPT_FIELD_SCHEMAS: dict[str, dict[str, Any]] = {
    "system_prompt": _field("The system prompt's template ({placeholder}s)", _TEXT),
    "user_prompt": _field("The user turn's template", _TEXT),
    "assistant_prefill": _field("The start of the answer, sent as an assistant turn", _TEXT),
    "name": _field("A name for tables", _TEXT),
    "description": _field("What changed and why", _TEXT),
    "model_config": _field(
        "model plus messages.create's parameters (checked against the installed SDK)",
        {"$ref": "#/definitions/model_config"},
    ),
    "include_input": _field(
        "Send the case input as JSON after the user prompt (default true)", {"type": "boolean"}
    ),
    "assert": _field("Assertions on every case's answer", {"$ref": "#/definitions/assertions"}),
    "strategy": _field("How the answer is reached (best_of_n, refine, ...)"),
    "applies_to": _field("The cases this version runs: {markers: EXPR, ids: [PATTERN]}"),
    "tools": _field("Tool definitions, or the names of the project's Python tools"),
    "tool_choice": _field("Sent as is"),
    "max_steps": _field("Model calls per conversation (10)"),
    "model": _field(
        "Compiler Explorer's format: {name, max_tokens, ...} (read as model_config)",
        {"type": ["object", "null"]},
    ),
    "audience_levels": _field("Compiler Explorer's format: data for its templates"),
    "explanation_types": _field("Compiler Explorer's format: data for its templates"),
}


def _same_names(table: Mapping[str, Any], known: Collection[str], what: str) -> None:
    if set(table) != set(known):
        missing, extra = sorted(set(known) - set(table)), sorted(set(table) - set(known))
        raise RuntimeError(f"{what}: not described {missing}, no longer known {extra}")


def _assertion_value(kind: str) -> dict[str, Any]:
    """What ``parse_assertions`` accepts as an assertion's ``value``."""
    if kind in a.STRING_TYPES:
        return _STRING
    if kind in a.PATTERN_TYPES:
        return {"type": "string"}
    if kind in a.LIMIT_TYPES:
        return {"type": "number", "minimum": 0}
    if kind == "json_schema":
        return _MAPPING
    if kind == "json_field":
        return {"$ref": "#/definitions/json_field"}
    if kind == "topics":
        return {"type": ["array", "null"], "items": {"type": "string"}}
    if kind in ("tool_called", "tool_not_called"):
        return _STRING
    if kind == "tool_sequence":
        return {"type": "array", "items": _STRING}
    if kind == "max_steps":
        return {"type": "integer", "minimum": 1}
    if kind == "file_matches":
        return {
            "type": "object",
            "required": ["regex"],
            "properties": {key: {"type": "string"} for key in a.FILE_MATCH_KEYS},
            "additionalProperties": False,
        }
    if kind in a.FILE_TYPES:
        return _STRING
    return _ANY  # is_json


def _options(kind: str | None) -> dict[str, Any]:
    """The options an assertion of ``kind`` takes beside its value (None: a scorer)."""
    schemas: dict[str, Any] = {
        "weight": {"type": "number", "minimum": 0},
        "threshold": {"type": ["number", "null"], "minimum": 0, "maximum": 1},
        "include_prefill": {"type": "boolean"},
        "input": _MAPPING,
        "mode": {"enum": list(a.SEQUENCE_MODES)},
        "votes": {"enum": list(range(1, a.MAX_VOTES + 1, 2))},
    }
    names = [o for o in a.OPTIONS if o not in ("type", "value")]
    names += a.TYPE_OPTIONS.get(kind, ()) if kind else ()
    return {name: schemas[name] for name in names}


def _assertion(kind: str) -> list[dict[str, Any]]:
    """The long form ``{type: K, value: V, ...}`` and the short ``{K: V, ...}``."""
    options, value = _options(kind), _assertion_value(kind)
    needs_value = kind not in ("is_json", "topics")
    return [
        {
            "type": "object",
            "required": ["type", "value"] if needs_value else ["type"],
            "properties": {"type": {"const": kind}, "value": value, **options},
            "additionalProperties": False,
        },
        {
            "type": "object",
            "required": [kind],
            "properties": {kind: value, **options},
            "additionalProperties": False,
        },
    ]


def _scorer() -> list[dict[str, Any]]:
    """A project's scorer, by a name no built-in type has: it takes no value."""
    name = {"type": "string", "not": {"enum": list(a.BUILTIN_TYPES)}}
    options = _options(None)
    return [
        {
            "type": "object",
            "required": ["type"],
            "properties": {"type": name, "value": {"enum": [True, None]}, **options},
            "additionalProperties": False,
        },
        {
            "type": "object",
            "minProperties": 1,
            "propertyNames": {"not": {"enum": ["type", "value", *a.BUILTIN_TYPES]}},
            # one key names the scorer (true or nothing); the others are options
            "additionalProperties": {"enum": [True, None]},
            "properties": options,
        },
    ]


def _definitions() -> dict[str, Any]:
    # exactly one of equals, in, matches, approx
    field_checks = [
        {"required": [check], "not": {"anyOf": [{"required": [o]} for o in a.FIELD_CHECKS
                                                 if o != check]}}
        for check in a.FIELD_CHECKS
    ]  # fmt: skip
    return {
        "assertions": {
            "description": "Assertions: {type: T, value: V} or {T: V}; options weight, "
            "threshold, include_prefill (and votes, input, mode where the type takes them)",
            "type": ["array", "null"],
            "items": {
                "anyOf": [alt for kind in a.BUILTIN_TYPES for alt in _assertion(kind)] + _scorer()
            },
        },
        "json_field": {
            "type": "object",
            "required": ["path"],
            "properties": {
                "path": {**_STRING, "description": "a JSON Pointer (/a/0/b) or dotted (a.0.b)"},
                "equals": _ANY,
                "in": {"type": "array", "minItems": 1},
                "matches": {"type": "string"},
                "approx": {"type": "number"},
                "tolerance": {"type": "number", "minimum": 0},
            },
            "additionalProperties": False,
            "oneOf": field_checks,
        },
        "model_config": {
            "type": ["object", "null"],
            "properties": {
                "model": {"type": "string"},
                "max_tokens": {"type": "integer", "minimum": 1},
                **{name: {"type": "number"} for name in sorted(EXTRA_BODY_PARAMS)},
            },
            # the SDK's other parameters (stop_sequences, thinking, ...) vary with its version
        },
    }


def _described(kind: str) -> dict[str, str]:
    globs = ", ".join(FILE_MATCH[kind])
    what = "case file" if kind == "case" else "prompt version"
    return {
        "$schema": _DRAFT,
        "title": f"pytest-prompteval {what}",
        "description": f"A pytest-prompteval {what}. Applies to: {globs}. Fields a project "
        "declares (ini prompteval_case_fields / prompteval_prompt_fields) are added by "
        "`prompteval schema` run in the project.",
    }


def case_schema(declared: Collection[str] = ()) -> dict[str, Any]:
    _same_names(CASE_FIELD_SCHEMAS, CASE_FIELDS, "case fields")
    fields = {**CASE_FIELD_SCHEMAS, **{n: _field("Declared by the project") for n in declared}}
    case = {
        "type": "object",
        "required": ["id", "input"],
        "properties": dict(sorted(fields.items())),
        "additionalProperties": False,
    }
    top = {"description": _field("What the file's cases are about", _TEXT), "cases": {}}
    _same_names(top, FILE_FIELDS, "case file fields")
    top["cases"] = {"type": "array", "items": {"$ref": "#/definitions/case"}}
    return {
        **_described("case"),
        "type": "object",
        "required": ["cases"],
        "properties": top,
        "additionalProperties": False,
        "definitions": {"case": case, **_definitions()},
    }


def prompt_schema(declared: Collection[str] = ()) -> dict[str, Any]:
    _same_names(PROMPT_FIELD_SCHEMAS, PROMPT_FIELDS, "prompt fields")
    fields = {**PROMPT_FIELD_SCHEMAS, **{n: _field("Declared by the project") for n in declared}}
    version = {
        "type": "object",
        "properties": dict(sorted(fields.items())),
        "additionalProperties": False,
        "anyOf": [{"required": [key]} for key in TEMPLATE_FIELDS[:2]],
    }
    ablation = {
        "type": "object",
        "required": ["ablate"],
        "properties": {
            "ablate": {
                "type": "object",
                "required": list(ABLATE_KEYS),
                "properties": {"from": _STRING, "remove": {"type": ["string", "array"]}},
                "additionalProperties": False,
            },
            **{name: _TEXT for name in ABLATION_FIELDS if name != "ablate"},
        },
        "additionalProperties": False,
    }
    return {
        **_described("prompt"),
        "oneOf": [{"$ref": "#/definitions/version"}, {"$ref": "#/definitions/ablation"}],
        "definitions": {"version": version, "ablation": ablation, **_definitions()},
    }


def schema(kind: str, declared: Collection[str] = ()) -> dict[str, Any]:
    return case_schema(declared) if kind == "case" else prompt_schema(declared)


def render(kind: str, declared: Collection[str] = ()) -> str:
    """The schema as its file holds it."""
    return json.dumps(schema(kind, declared), indent=2, ensure_ascii=False) + "\n"


def shipped_path(kind: str) -> Path:
    return SHIPPED / f"{kind}.schema.json"


def write_shipped() -> list[Path]:
    SHIPPED.mkdir(parents=True, exist_ok=True)
    written = []
    for kind in KINDS:
        shipped_path(kind).write_text(render(kind), encoding="utf-8")
        written.append(shipped_path(kind))
    return written


if __name__ == "__main__":
    for path in write_shipped():
        print(f"wrote {path}")
