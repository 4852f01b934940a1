"""A sample's metrics from its run: tests passed by tag, the seed's partial correctness,
exact match and semantic equivalence with the reference, and the error class."""

from __future__ import annotations

import functools
import hashlib
import json
import types
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pytest_prompteval.sandbox import SampleReport
from pytest_prompteval.sandbox.harness import canonical, stdout_lines
from pytest_prompteval.scoring.code.spec import CodeSpec, CodeTest


def _normalised(code: str) -> tuple[Any, ...] | None:
    """What the code compiles to, positions aside (comments and layout are gone, as are
    redundant parentheses), or None when it does not compile: the compiler does in C what
    comparing syntax trees did in Python at a third of a sample's cost."""
    try:
        return _shape(compile(code, "<sample>", "exec", dont_inherit=True))
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return None


def _shape(code: types.CodeType) -> tuple[Any, ...]:
    return (
        code.co_name,
        code.co_argcount,
        code.co_posonlyargcount,
        code.co_kwonlyargcount,
        code.co_flags,
        code.co_code,
        code.co_names,
        code.co_varnames,
        code.co_freevars,
        code.co_cellvars,
        tuple(_constant(c) for c in code.co_consts),
    )


def _constant(value: Any) -> Any:
    """A constant with its type: ``True`` is not ``1``, nor ``-0.0`` ``0.0``."""
    if isinstance(value, types.CodeType):
        return _shape(value)
    if isinstance(value, tuple | frozenset):
        items = [_constant(v) for v in value]
        return type(value).__name__, tuple(
            items if isinstance(value, tuple) else sorted(map(repr, items))
        )
    return type(value).__name__, repr(value)


_reference_shape = functools.lru_cache(maxsize=1024)(_normalised)


@dataclass
class Metrics:
    syntax_ok: bool = False
    compiles: bool = False
    tests_passed: int = 0
    tests_total: int = 0
    basic: tuple[int, int] = (0, 0)
    edge: tuple[int, int] = (0, 0)
    exact_match: bool = False
    semantic_equivalence: bool | None = None
    error_class: str | None = None
    first_failure: str | None = None
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def functional(self) -> bool:
        return self.error_class is None and self.tests_passed == self.tests_total

    @property
    def partial(self) -> float:
        """The seed's partial correctness: syntax 0.2, compiles 0.2, basic tests 0.3 x share
        passed, edge tests 0.3 x share passed; a kind of test the case does not have gives
        its 0.3 to the other (all edge or all basic: that kind counts 0.6), so a solution
        passing every test scores 1."""
        shares = [passed / total for passed, total in (self.basic, self.edge) if total]
        tests = 0.6 * sum(shares) / len(shares) if shares else 0.0
        return 0.2 * self.syntax_ok + 0.2 * self.compiles + tests


def _close(out: Any, exp: Any, atol: float) -> bool:
    """Equal, numbers within ``atol`` + 1e-7 x the expected one (numpy's allclose with
    evalplus's rtol); booleans are never numbers here."""
    if isinstance(out, bool) or isinstance(exp, bool):
        return type(out) is type(exp) and out == exp
    if isinstance(out, int | float) and isinstance(exp, int | float):
        return bool(out == exp or abs(out - exp) <= atol + 1e-7 * abs(exp))
    if isinstance(out, list) and isinstance(exp, list):
        return len(out) == len(exp) and all(
            _close(o, e, atol) for o, e in zip(out, exp, strict=True)
        )
    if isinstance(out, dict) and isinstance(exp, dict):
        return out.keys() == exp.keys() and all(_close(out[k], exp[k], atol) for k in out)
    return bool(out == exp)


def _output_matches(event: Mapping[str, Any], expected: str, atol: float = 0.0) -> bool:
    """Whether an io test's output event carries the value whose canonical text is given
    (within ``atol`` for numbers)."""
    if "output_digest" in event:
        return bool(event["output_digest"] == hashlib.sha256(expected.encode()).hexdigest())
    if "output" in event:
        try:
            if canonical(event["output"]) == expected:
                return True
            return atol > 0 and _close(event["output"], json.loads(expected), atol)
        except (TypeError, ValueError, RecursionError):
            return False
    return False


@functools.lru_cache(maxsize=65536)
def _canonical_expected(text: str) -> str:
    return canonical(json.loads(text))


def _canonical(value: Any) -> str:
    return _canonical_expected(json.dumps(value, default=repr))


def args_key(test: CodeTest) -> str:
    """What an args test's reference output is kept under: its arguments (a spec cut down to
    some of its tests finds them all the same)."""
    return json.dumps(test.body, sort_keys=True, default=repr)


def _accepted(test: CodeTest, reference: Mapping[str, str] | None) -> list[str]:
    """The canonical texts an args test's output may equal."""
    if test.compare == "any":
        return [_canonical(v) for v in test.expected]
    if test.compare == "reference":
        found = (reference or {}).get(args_key(test))
        return [] if found is None else [found]
    return [_canonical(test.expected)]


def _io_event(
    spec: CodeSpec,
    index: int,
    event: dict[str, Any] | None,
    reference: Mapping[str, str] | None,
) -> dict[str, Any] | None:
    """An io test's event turned into a verdict: the output compared here, with the
    expected value the sample never saw."""
    test = spec.tests[index]
    if event is None or ("passed" in event and not event["passed"]):
        return event
    accepted = _accepted(test, reference)
    if any(_output_matches(event, text, spec.atol) for text in accepted):
        return {**event, "passed": True}
    shown = event.get("output", event.get("output_repr", "a large value"))
    if not accepted:
        wanted = ", and the reference gave no value to compare with"
    else:
        wanted = f", expected {test.expected if test.compare != 'reference' else accepted[0]!r}"
    return {
        **event,
        "passed": False,
        "kind": "assert",
        "message": f"AssertionError: {spec.entry_point}(*{test.body!r}) returned {shown!r}"[:300]
        + wanted[:200],
    }


def _number(token: str) -> float | None:
    try:
        return float(token)
    except ValueError:
        return None


def stdout_matches(printed: str, expected: str) -> bool:
    """APPS's comparison of a program's output: the lines, each stripped and empty ones
    dropped, are equal; else, line by line, their whitespace-separated tokens are, numbers
    within numpy's allclose tolerance (1e-5 relative, 1e-8 absolute)."""
    got, wanted = stdout_lines(printed), stdout_lines(expected)
    if got == wanted:
        return True
    if len(got) != len(wanted):
        return False
    for line, other in zip(got, wanted, strict=True):
        tokens, others = line.split(), other.split()
        if len(tokens) != len(others):
            return False
        for token, want in zip(tokens, others, strict=True):
            if token == want:
                continue
            a, b = _number(token), _number(want)
            if a is None or b is None or not (a == b or abs(a - b) <= 1e-8 + 1e-5 * abs(b)):
                return False
    return True


def _stdout_event(test: CodeTest, event: dict[str, Any] | None) -> dict[str, Any] | None:
    """A stdin test's event turned into a verdict: the printed text compared here."""
    if event is None or ("passed" in event and not event["passed"]):
        return event
    if "stdout_digest" in event:
        lines = "\n".join(stdout_lines(test.expected)).encode(errors="replace")
        matched = event["stdout_digest"] == hashlib.sha256(lines).hexdigest()
    else:
        printed = event.get("stdout")
        matched = isinstance(printed, str) and stdout_matches(printed, test.expected)
    if matched:
        return {**event, "passed": True}
    shown = event.get("stdout", "a large output")
    return {
        **event,
        "passed": False,
        "kind": "assert",
        "message": f"AssertionError: the program printed {shown!r}"[:300]
        + f", expected {test.expected!r}"[:200],
    }


def reference_outputs(spec: CodeSpec, run: SampleReport) -> dict[str, str]:
    """The reference's outputs on the io tests, as canonical text by their arguments."""
    found = {}
    for index, event in run.tests.items():
        if index < len(spec.tests) and spec.tests[index].kind == "args" and "output" in event:
            try:
                found[args_key(spec.tests[index])] = canonical(event["output"])
            except (TypeError, ValueError, RecursionError):
                continue
    return found


@dataclass
class _Tally:
    """Tests passed and run by tag, and each tag's first failure (its kind, its line)."""

    counts: dict[str, list[int]] = field(default_factory=lambda: {"basic": [0, 0], "edge": [0, 0]})
    first: dict[str, tuple[Any, str]] = field(default_factory=dict)

    def add(self, tag: str, passed: bool, failure: tuple[Any, str] | None) -> None:
        self.counts[tag][0] += passed
        self.counts[tag][1] += 1
        if failure is not None and not passed:
            self.first.setdefault(tag, failure)

    def pair(self, tag: str) -> tuple[int, int]:
        return self.counts[tag][0], self.counts[tag][1]


def _event(
    spec: CodeSpec,
    index: int,
    event: Any,
    reference: Mapping[str, str] | None,
    compared: list[bool],
) -> Any:
    """Test ``index``'s outcome as a test event; an args test's match with the reference's
    output goes in ``compared``."""
    test = spec.tests[index]
    if test.kind == "args":
        known = None if reference is None else reference.get(args_key(test))
        if known is not None:
            compared.append(event is not None and _output_matches(event, known, spec.atol))
        return _io_event(spec, index, event, reference)
    if test.kind == "stdin":
        return _stdout_event(test, event)
    return event


def _tally(
    spec: CodeSpec, run: SampleReport, reference: Mapping[str, str] | None, compared: list[bool]
) -> _Tally:
    tally = _Tally()
    for i, test in enumerate(spec.tests):
        event = _event(spec, i, run.tests.get(i), reference, compared)
        passed = bool(event and event.get("passed") is True)
        message = f"test {i} ({test.tag}): {event.get('message')}" if event else ""
        tally.add(test.tag, passed, (event.get("kind"), message) if event else None)
    prop = run.property_check
    if spec.properties is not None:
        passed = bool(prop and prop.get("passed") is True)
        failure = None if prop is None else (prop.get("kind"), f"property: {prop.get('message')}")
        tally.add("edge", passed, failure)
    return tally


def _exact_match(spec: CodeSpec, code: str) -> bool:
    shape = _reference_shape(spec.reference) if spec.reference is not None else None
    if code == spec.reference:  # identical samples: the one compile is the reference's
        return shape is not None
    return shape is not None and _normalised(code) == shape


def measure(
    spec: CodeSpec, code: str, run: SampleReport, reference: Mapping[str, str] | None = None
) -> Metrics:
    """The metrics of one run; ``reference``: the reference's io outputs (for semantic
    equivalence), when known."""
    m = Metrics(tests_total=spec.tests_total)
    syntax, load = run.phase("syntax"), run.phase("load")
    m.syntax_ok = bool(syntax and syntax.get("ok") is True)
    m.compiles = bool(load and load.get("ok") is True)
    compared: list[bool] = []
    tally = _tally(spec, run, reference, compared)
    m.basic, m.edge = tally.pair("basic"), tally.pair("edge")
    m.tests_passed = m.basic[0] + m.edge[0]
    if spec.reference is not None:
        m.exact_match = _exact_match(spec, code)
        if run.property_check is not None:
            compared.append(run.property_check.get("passed") is True)
        m.semantic_equivalence = all(compared) if compared else None
    first_basic, first_edge = tally.first.get("basic"), tally.first.get("edge")
    m.error_class, m.first_failure = _classify(run, syntax, load, first_basic, first_edge)
    if m.error_class is None and m.tests_passed < m.tests_total:
        m.error_class, m.first_failure = "runtime", "the sample ended before all tests ran"
    return m


def _classify(
    run: SampleReport, syntax: Any, load: Any, basic: Any, edge: Any
) -> tuple[str | None, str | None]:
    died = _died(run, syntax, load)
    if died is not None:
        return died
    if basic is not None:
        return _failed_test(basic, "logic")
    if edge is not None:
        return _failed_test(edge, "edge_case")
    return None, None


def _died(run: SampleReport, syntax: Any, load: Any) -> tuple[str, str] | None:
    """Why the sample stopped before its tests could tell, or None."""
    if run.crashed:
        return "runtime", run.crashed
    if syntax is not None and syntax.get("ok") is not True:
        return "syntax", f"SyntaxError: {syntax.get('message')}"
    if run.timed_out or run.signal == 24:  # SIGXCPU: the CPU-time limit
        return "timeout", f"no answer within {run.seconds:.1f} s"
    if load is not None and load.get("ok") is not True:
        kind = "resource_limit" if load.get("kind") == "resource" else "runtime"
        return kind, f"loading the code: {load.get('message')}"
    if syntax is None or load is None or run.signal is not None:
        why = f"killed by signal {run.signal}" if run.signal else "no result"
        return "resource_limit" if run.signal else "runtime", f"the sample died: {why}"
    return None


def _failed_test(failure: tuple[Any, str], wrong: str) -> tuple[str, str]:
    """A failed test's error class: a limit, an error, else the answer was ``wrong``."""
    kind, message = failure
    if kind == "resource":
        return "resource_limit", message
    return ("runtime" if kind == "error" else wrong), message
