"""A code case's fields, validated once into a ``CodeSpec``: what the sandbox gets, and what
``measure`` compares with.

A case is a code case when it has ``entry_point``, ``tests`` or ``kind: code``. Its fields:

- ``entry_point``: the function under test (none for a program, whose tests are all
  ``stdin``); ``language``: ``python`` (the only one yet);
- ``tests``: a list of ``{assert: "f(1) == 2"}``, ``{check: "def check(candidate): ..."}``
  (HumanEval style; source without a ``check`` function runs as a script),
  ``{args: [...], expected: ...}`` (``expected_any: [...]``: any of these; neither: the
  reference's output on the same arguments), ``{stdin: "...", stdout: "..."}`` (the code is
  a program, run once per test with that input; APPS style) or ``{unittest: "..."}`` (a
  ``unittest.TestCase`` module; each test method counts as one test) entries, each with
  ``tag: basic`` (default) or ``tag: edge``;
- ``test_setup``: Python source run before each assert, check and unittest test, in its
  namespace (MBPP's ``test_setup_code`` and imports);
- ``atol``: numbers in io outputs match within this absolute tolerance (and 1e-7 relative,
  as evalplus compares);
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

import ast
import functools
import hashlib
import importlib.util
import json
import math
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
TEST_KINDS = ("assert", "check", "args", "stdin", "unittest")
KINDS_TEXT = "assert, check, args, stdin or unittest"
#: The keys a test entry may have, by kind.
TEST_FIELDS = {
    "assert": ("assert", "tag"),
    "check": ("check", "tag"),
    "args": ("args", "expected", "expected_any", "tag"),
    "stdin": ("stdin", "stdout", "tag"),
    "unittest": ("unittest", "tag"),
}


@dataclass(frozen=True)
class CodeTest:
    """One entry of a code case's ``tests:``, its kind decided once."""

    #: one of TEST_KINDS
    kind: str
    #: assert, check and unittest: Python source text; args: the list of arguments;
    #: stdin: the program's input
    body: Any
    tag: str = "basic"
    #: an args test's expected return value, a stdin test's expected output (compared
    #: here, never sent to the sandbox)
    expected: Any = None
    #: how an args test's output is compared: with ``expected``, with any of
    #: ``expected`` (a list), or with the reference's output
    compare: str = "value"
    #: a unittest test: ``Class.test_method``
    method: str = ""

    def wire(self) -> dict[str, Any]:
        """The test as the sandbox's harness reads it."""
        wired = {self.kind: self.body, "tag": self.tag}
        if self.method:
            wired["method"] = self.method
        return wired


@dataclass(frozen=True)
class CodeSpec:
    entry_point: str
    tests: tuple[CodeTest, ...]
    prompt: str = ""
    reference: str | None = None
    properties: dict[str, Any] | None = None
    timeout: float | None = None
    language: str = "python"
    #: source run before each assert, check and unittest test, in its namespace
    setup: str = ""
    #: absolute tolerance for numbers in io outputs (0: exact)
    atol: float = 0.0

    @property
    def program(self) -> bool:
        """The code is a program fed its tests' stdin, not a module whose function is called."""
        return any(t.kind == "stdin" for t in self.tests)

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
            "setup": self.setup,
            "program": self.program,
        }

    @property
    def tests_total(self) -> int:
        """The listed tests, and the property test as one more edge test."""
        return len(self.tests) + (self.properties is not None)


def is_code_case(case: Case) -> bool:
    """``entry_point``, ``kind: code``, or code tests (a program's have no entry point: a
    forgotten ``kind`` must not make its tests silently ignored)."""
    raw = case.raw
    return (
        "entry_point" in raw or raw.get("kind") == "code" or ("tests" in raw and "kind" not in raw)
    )


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

    entry = raw.get("entry_point", "")
    if "entry_point" in raw and (not isinstance(entry, str) or not entry.isidentifier()):
        raise fail("entry_point", "the name of the function under test")
    parsed = _parse_tests(case, entry, fail)
    setup, atol, reference, properties, timeout = _options(case, fail)
    prompt = case.input.get("prompt", "")
    return CodeSpec(
        entry_point=entry,
        tests=tuple(parsed),
        prompt=prompt if isinstance(prompt, str) else "",
        reference=_full(reference, prompt if isinstance(prompt, str) else "", entry),
        properties=properties,
        timeout=timeout,
        setup=setup,
        atol=float(atol),
    )


def _parse_tests(case: Case, entry: str, fail: Any) -> list[CodeTest]:
    """The case's tests: a function's, or stdin tests only (a program's)."""
    tests = case.raw.get("tests")
    if not isinstance(tests, list) or not tests:
        raise fail("tests", f"a list of test entries, each one of {KINDS_TEXT}")
    parsed: list[CodeTest] = []
    for i, test in enumerate(tests):
        parsed += _parse_test(case, i, test, fail)
    program = [t.kind == "stdin" for t in parsed]
    if any(program) and not all(program):
        raise fail("tests", "stdin tests only (a program), or none (a function's tests)")
    if not entry and not all(program):
        raise fail("entry_point", "the name of the function under test (a program: stdin tests)")
    return parsed


def _options(case: Case, fail: Any) -> tuple[str, Any, str | None, Any, Any]:
    """The case's test_setup, atol, reference, properties and timeout, checked in that order
    (after its language)."""
    raw = case.raw
    language = raw.get("language", "python")
    if language != "python":
        raise fail("language", "python (the only language the sandbox runs yet)")
    setup = raw.get("test_setup", "")
    if not isinstance(setup, str):
        raise fail("test_setup", "Python source run before each test")
    atol = raw.get("atol", 0)
    if isinstance(atol, bool) or not isinstance(atol, int | float) or not 0 <= atol < math.inf:
        raise fail("atol", "an absolute tolerance, a number >= 0")
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
    return setup, atol, reference, properties, timeout


def _parse_test(case: Case, i: int, test: Any, fail: Any) -> list[CodeTest]:
    """One entry of ``tests:``; a unittest entry gives one test per test method."""
    line = line_of(test)
    kinds = [k for k in TEST_KINDS if isinstance(test, Mapping) and k in test]
    if len(kinds) != 1:
        raise fail(f"tests[{i}]", f"exactly one of {KINDS_TEXT}", line)
    kind = kinds[0]
    check_keys(test, TEST_FIELDS[kind], case.path, f"case {case.id!r}, tests[{i}]: ")
    tag = test.get("tag", "basic")
    if tag not in TAGS:
        raise fail(f"tests[{i}].tag", "basic or edge", line)
    body = test[kind]
    if kind == "args":
        return [_args_test(case, f"tests[{i}]", test, tag, fail)]
    if not isinstance(body, str):
        raise fail(
            f"tests[{i}]", f"{kind}: Python source text" if kind != "stdin" else "stdin: text", line
        )
    return _source_tests(kind, f"tests[{i}]", test, tag, fail)


def _args_test(case: Case, at: str, test: Mapping[str, Any], tag: str, fail: Any) -> CodeTest:
    """A call with ``args``, compared with ``expected``, any of ``expected_any`` or the
    reference solution's output."""
    body, line = test["args"], line_of(test)
    if not isinstance(body, list):
        raise fail(at, "args: a list of arguments", line)
    if "expected" in test and "expected_any" in test:
        raise fail(at, "expected or expected_any, not both", line)
    if "expected_any" in test:
        accepted = test["expected_any"]
        if not isinstance(accepted, list) or not accepted:
            raise fail(f"{at}.expected_any", "a list of accepted values", line)
        return CodeTest("args", body, tag, accepted, "any")
    if "expected" in test:
        return CodeTest("args", body, tag, test["expected"])
    if "reference" not in case.raw:
        raise fail(
            at,
            "args: a list of arguments, and expected (or a reference solution, whose "
            "output it must then equal)",
            line,
        )
    return CodeTest("args", body, tag, compare="reference")


def _source_tests(
    kind: str, at: str, test: Mapping[str, Any], tag: str, fail: Any
) -> list[CodeTest]:
    """A stdin, check, unittest or other source test; a unittest module gives one test per
    test method."""
    body, line = test[kind], line_of(test)
    if kind == "stdin":
        if not isinstance(test.get("stdout"), str):
            raise fail(at, "stdout: the text the program must print", line)
        return [CodeTest(kind, body, tag, test["stdout"])]
    if kind == "check" and not _tests_something(body):
        raise fail(
            at,
            "check: a def check(candidate), or statements that test (this source defines neither)",
            line,
        )
    if kind == "unittest":
        methods = test_methods(body)
        if isinstance(methods, str):
            raise fail(
                at,
                f"unittest: a module defining unittest.TestCase classes ({methods})",
                line,
            )
        return [CodeTest(kind, body, tag, method=m) for m in methods]
    return [CodeTest(kind, body, tag)]


_DEFINITIONS = (
    ast.Import,
    ast.ImportFrom,
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.Assign,
    ast.AnnAssign,
)


def _tests_something(source: str) -> bool:
    """Whether a check test's source defines ``check`` or runs a statement of its own (a
    script): a misspelt ``def chek(candidate)`` would otherwise pass without testing. Source
    that does not parse is left to fail in the sandbox, as it always has."""
    try:
        body = ast.parse(source).body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return True
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == "check":
            return True
        docstring = isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        if not isinstance(node, _DEFINITIONS) and not docstring:
            return True
    return False


def test_methods(source: str) -> list[str] | str:
    """The ``Class.test_method`` names unittest's loader would find in ``source`` (classes
    deriving from a ``TestCase``, in their order; methods sorted by name, inherited ones
    from the module's own classes too), or why there are none."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return f"{type(exc).__name__}: {exc}"[:200]
    found: list[str] = []
    methods: dict[str, set[str]] = {}
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        bases = [
            b.attr if isinstance(b, ast.Attribute) else getattr(b, "id", "") for b in node.bases
        ]
        if not any(b.endswith("TestCase") or b in methods for b in bases):
            continue
        own = {
            f.name
            for f in node.body
            if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef) and f.name.startswith("test")
        }
        methods[node.name] = own.union(*(methods.get(b, set()) for b in bases))
        found += [f"{node.name}.{name}" for name in sorted(methods[node.name])]
    return found or "no test methods found"


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
