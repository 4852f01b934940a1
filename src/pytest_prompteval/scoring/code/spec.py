"""A code case's fields, validated once into a ``CodeSpec``: what the sandbox gets, and what
``measure`` compares with.

A case is a code case when it has ``entry_point`` (or ``kind: code``). Its fields:

- ``entry_point``: the function under test; ``language``: ``python`` (the only one yet);
- ``tests``: a list of ``{assert: "f(1) == 2"}``, ``{check: "def check(candidate): ..."}``
  (HumanEval style) or ``{args: [...], expected: ...}`` entries, each with ``tag: basic``
  (default) or ``tag: edge``;
- ``reference``: a correct solution (full code), for exact match, semantic equivalence,
  property tests and the timeout calibration;
- ``properties``: ``{args: ["integers(-5, 5)", "lists(integers())"], examples: 100}`` (any
  of hypothesis' integers, floats, booleans, text, characters, lists, tuples, sets,
  dictionaries, sampled_from, just, none, one_of) or ``{file: strategies.py}`` defining
  ``strategies()``: the candidate must give the reference's result on generated inputs;
- ``timeout``: CPU seconds per sample (default: 10 x the reference's own CPU time, between
  0.25 s and the ini ``prompteval_code_timeout``, 3 s; that limit when there is no reference).
  CPU time, not wall-clock time, so that a busy machine gives the same verdicts.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pytest_prompteval.core.cases import Case
from pytest_prompteval.core.errors import PromptevalError
from pytest_prompteval.core.paths import read_inside
from pytest_prompteval.core.patterns import SPACE, escape, pattern
from pytest_prompteval.core.schema import check_keys
from pytest_prompteval.core.yamlload import line_of

TAGS = ("basic", "edge")
TEST_KINDS = ("assert", "check", "args")


@dataclass(frozen=True)
class CodeTest:
    """One entry of a code case's ``tests:``, its kind decided once."""

    #: one of TEST_KINDS
    kind: str
    #: assert and check: Python source text; args: the list of arguments
    body: Any
    tag: str = "basic"
    #: an args test's expected return value (compared here, never sent to the sandbox)
    expected: Any = None

    def wire(self) -> dict[str, Any]:
        """The test as the sandbox's harness reads it."""
        return {self.kind: self.body, "tag": self.tag}


@dataclass(frozen=True)
class CodeSpec:
    entry_point: str
    tests: tuple[CodeTest, ...]
    prompt: str = ""
    reference: str | None = None
    properties: dict[str, Any] | None = None
    timeout: float | None = None
    language: str = "python"

    @functools.cached_property
    def digest(self) -> str:
        """What identifies the job apart from the code: samples' runs are looked up by it."""
        text = json.dumps(self.job(""), sort_keys=True, default=repr)
        return hashlib.sha256(text.encode()).hexdigest()

    def job(self, code: str) -> dict[str, Any]:
        """What the sandbox gets: an io test's expected value stays here (``measure``
        compares), and the reference goes only where property tests need it."""
        return {
            "code": code,
            "entry_point": self.entry_point,
            "tests": [t.wire() for t in self.tests],
            "reference": self.reference if self.properties else None,
            "properties": self.properties,
        }

    @property
    def tests_total(self) -> int:
        """The listed tests, and the property test as one more edge test."""
        return len(self.tests) + (self.properties is not None)


def is_code_case(case: Case) -> bool:
    return "entry_point" in case.raw or case.raw.get("kind") == "code"


#: The longest CPU time a case's ``timeout:`` may give a sample (a sample that sleeps is
#: ended at 3 times it plus 2 s): a case file may not keep a run busy without end.
MAX_CASE_TIMEOUT = 300


def parse_code_spec(case: Case) -> CodeSpec:
    """Validate a code case's fields; errors name file, line, case and field."""
    raw = case.raw

    def fail(key: str, expected: str, line: int | None = None) -> PromptevalError:
        return PromptevalError(
            f"case {case.id!r}, field {key!r}: expected {expected}",
            case.path,
            line or line_of(raw, key) or case.line,
        )

    entry = raw.get("entry_point")
    if not isinstance(entry, str) or not entry.isidentifier():
        raise fail("entry_point", "the name of the function under test")
    language = raw.get("language", "python")
    if language != "python":
        raise fail("language", "python (the only language the sandbox runs yet)")
    tests = raw.get("tests")
    if not isinstance(tests, list) or not tests:
        raise fail(
            "tests", "a list of {assert: ...}, {check: ...} or {args: [...], expected: ...} entries"
        )
    parsed = []
    for i, test in enumerate(tests):
        line = line_of(test)
        kinds = [k for k in TEST_KINDS if isinstance(test, Mapping) and k in test]
        if len(kinds) != 1:
            raise fail(f"tests[{i}]", "exactly one of assert, check or args", line)
        kind = kinds[0]
        if kind == "args" and (not isinstance(test["args"], list) or "expected" not in test):
            raise fail(f"tests[{i}]", "args: a list of arguments, and expected", line)
        if kind != "args" and not isinstance(test[kind], str):
            raise fail(f"tests[{i}]", f"{kind}: Python source text", line)
        tag = test.get("tag", "basic")
        if tag not in TAGS:
            raise fail(f"tests[{i}].tag", "basic or edge", line)
        parsed.append(CodeTest(kind, test[kind], tag, test.get("expected")))
    reference = raw.get("reference")
    if reference is not None and not isinstance(reference, str):
        raise fail("reference", "the source of a correct solution")
    properties = raw.get("properties")
    if properties is not None:
        properties = _parse_properties(case, properties, fail)
    timeout = raw.get("timeout")
    if timeout is not None and (
        isinstance(timeout, bool)
        or not isinstance(timeout, int | float)
        or not 0 < timeout <= MAX_CASE_TIMEOUT
    ):
        raise fail("timeout", f"seconds of CPU time, a number > 0 and at most {MAX_CASE_TIMEOUT}")
    prompt = case.input.get("prompt", "")
    return CodeSpec(
        entry_point=entry,
        tests=tuple(parsed),
        prompt=prompt if isinstance(prompt, str) else "",
        reference=_full(reference, prompt if isinstance(prompt, str) else "", entry),
        properties=properties,
        timeout=timeout,
    )


#: How to bring back hypothesis (a dependency of the plugin) when an environment lacks it.
CODE_EXTRA = "pip install hypothesis"


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _parse_properties(case: Case, spec: Any, fail: Any) -> dict[str, Any]:
    if not isinstance(spec, Mapping):
        raise fail("properties", "{args: [strategy, ...], examples: N} or {file: path.py}")
    if "reference" not in case.raw:
        raise fail("properties", "a reference solution to compare with (field reference)")
    check_keys(spec, ("args", "file", "examples"), case.path, f"case {case.id!r}, properties: ")
    examples = spec.get("examples", 100)
    if isinstance(examples, bool) or not isinstance(examples, int) or not 1 <= examples <= 10_000:
        raise fail("properties", "examples: a whole number from 1 to 10000")
    if not _installed("hypothesis"):
        raise fail("properties", f"hypothesis installed to run property tests: {CODE_EXTRA}")
    if "file" in spec:
        try:
            return {
                "file": read_inside(case.root or case.path.parent, spec["file"], case.path.parent),
                "examples": examples,
            }
        except PromptevalError as exc:
            raise fail("properties", f"a readable strategies file ({exc})") from None
    args = spec.get("args")
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise fail("properties", "args: a list of strategy expressions like 'integers(0, 9)'")
    return {"args": list(args), "examples": examples}


def _full(code: str | None, prompt: str, entry_point: str) -> str | None:
    """A body-only solution (HumanEval's canonical ones) completes the prompt."""
    if code is None:
        return None
    return code if defines(code, entry_point) or not prompt else prompt + code


def defines(code: str, entry_point: str) -> bool:
    """Whether the code has a ``def`` of the entry point (a method's or nested one too)."""
    return _definition(entry_point).search(code) is not None


def _definition(entry_point: str) -> Any:
    return pattern(rf"(?m)^{SPACE}*(?:async{SPACE}+)?def{SPACE}+{escape(entry_point)}{SPACE}*\(")
