"""Code-generation cases: extract the code from the answer, run it against the case's tests
in the sandbox, and score it with the seed's accuracy metrics.

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

Samples run in a pool of warm sandbox servers (``sandbox/pool.py``); ``CodeScorer.ahead``
queues an upcoming item's sample as soon as its answer is there, and ``score`` picks up the
run (or runs it at once, before anything queued ahead).
"""

from __future__ import annotations

import ast
import contextlib
import functools
import hashlib
import importlib.util
import json
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import CancelledError, Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from pytest_prompteval.core.cases import Case
from pytest_prompteval.core.errors import PromptevalError
from pytest_prompteval.core.paths import read_inside
from pytest_prompteval.core.patterns import SPACE, escape, pattern
from pytest_prompteval.core.schema import check_keys
from pytest_prompteval.core.yamlload import line_of
from pytest_prompteval.sandbox import SampleRun
from pytest_prompteval.sandbox.client import Limits, SandboxUnavailable
from pytest_prompteval.sandbox.harness import canonical
from pytest_prompteval.sandbox.pool import AHEAD, NOW, SandboxPool
from pytest_prompteval.scoring.score import Score

TAGS = ("basic", "edge")
TEST_KINDS = ("assert", "check", "args")
# on RE2: with Python's ``re`` an unclosed fence or a run of blank lines took quadratic time
_FENCE = pattern(r"(?s)```[ \t]*([\pL\pN_+-]*)[^\n]*\n(.*?)(?:```|\z)")
CALIBRATION = (10.0, 0.25)  # CPU timeout = factor x reference CPU time, at least this


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
    return code if _defines(code, entry_point) or not prompt else prompt + code


def _defines(code: str, entry_point: str) -> bool:
    return _definition(entry_point).search(code) is not None


def _definition(entry_point: str) -> Any:
    return pattern(rf"(?m)^{SPACE}*(?:async{SPACE}+)?def{SPACE}+{escape(entry_point)}{SPACE}*\(")


def extract_code(text: str, prefill: str, spec: CodeSpec) -> tuple[str, str]:
    """The code in an answer, and which rule found it:

    1. ``fenced``: the first fenced block that defines the entry point, else the first
       python (or untagged) block;
    2. ``prefill``: the prefill ended inside code (it contains ``def`` or an open fence):
       prefill + answer, with a closing fence cut off;
    3. ``completion``: no definition of the entry point: the answer completes the case's
       prompt (HumanEval style), so the code is prompt + answer;
    4. ``whole``: the answer as it stands.
    Code that does not define the entry point but whose case has a prompt (imports and
    helpers) gets the prompt in front.
    """
    blocks = [(lang.lower(), body) for lang, body in _FENCE.findall(prefill + text)]
    if blocks:
        python = [b for lang, b in blocks if lang in ("", "python", "py", "python3")]
        defining = [b for b in python if _defines(b, spec.entry_point)]
        code, rule = (defining or python or [blocks[0][1]])[0], "fenced"
    elif prefill.strip() and ("def " in prefill or prefill.rstrip().endswith(":")):
        code, rule = prefill + text, "prefill"
    elif not _defines(text, spec.entry_point) and spec.prompt:
        code, rule = spec.prompt + text, "completion"
    else:
        code, rule = text, "whole"
    if not _defines(code, spec.entry_point) and spec.prompt and rule != "completion":
        code = spec.prompt + code
    return code, rule


def _parses(code: str) -> bool:
    try:
        ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


@functools.lru_cache(maxsize=4096)
def _normalised(code: str) -> str | None:
    try:
        return ast.unparse(ast.parse(code))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


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


def _output_matches(event: Mapping[str, Any], expected: str) -> bool:
    """Whether an io test's output event carries the value whose canonical text is given."""
    if "output_digest" in event:
        return bool(event["output_digest"] == hashlib.sha256(expected.encode()).hexdigest())
    if "output" in event:
        try:
            return canonical(event["output"]) == expected
        except (TypeError, ValueError, RecursionError):
            return False
    return False


@functools.lru_cache(maxsize=65536)
def _canonical_expected(text: str) -> str:
    return canonical(json.loads(text))


def _expected(test: CodeTest) -> str:
    return _canonical_expected(json.dumps(test.expected, default=repr))


def _io_event(
    entry_point: str, test: CodeTest, event: dict[str, Any] | None
) -> dict[str, Any] | None:
    """An io test's event turned into a verdict: the output compared here, with the
    expected value the sample never saw."""
    if event is None or ("passed" in event and not event["passed"]):
        return event
    if _output_matches(event, _expected(test)):
        return {**event, "passed": True}
    shown = event.get("output", event.get("output_repr", "a large value"))
    return {
        **event,
        "passed": False,
        "kind": "assert",
        "message": f"AssertionError: {entry_point}(*{test.body!r}) returned {shown!r}"[:300]
        + f", expected {test.expected!r}"[:200],
    }


def reference_outputs(spec: CodeSpec, run: SampleRun) -> dict[int, str]:
    """The reference's outputs on the io tests, as canonical text by test index."""
    found = {}
    for index, event in run.tests.items():
        if index < len(spec.tests) and spec.tests[index].kind == "args" and "output" in event:
            try:
                found[index] = canonical(event["output"])
            except (TypeError, ValueError, RecursionError):
                continue
    return found


def measure(
    spec: CodeSpec, code: str, run: SampleRun, reference: Mapping[int, str] | None = None
) -> Metrics:
    """The metrics of one run; ``reference``: the reference's io outputs (for semantic
    equivalence), when known."""
    m = Metrics(tests_total=spec.tests_total)
    syntax, load = run.phase("syntax"), run.phase("load")
    m.syntax_ok = bool(syntax and syntax.get("ok") is True)
    m.compiles = bool(load and load.get("ok") is True)
    results = run.tests
    tally = {"basic": [0, 0], "edge": [0, 0]}
    first_basic = first_edge = None
    compared = []
    for i, test in enumerate(spec.tests):
        event = results.get(i)
        if test.kind == "args":
            if reference is not None and i in reference:
                compared.append(event is not None and _output_matches(event, reference[i]))
            event = _io_event(spec.entry_point, test, event)
        passed = bool(event and event.get("passed") is True)
        tally[test.tag][0] += passed
        tally[test.tag][1] += 1
        m.tests_passed += passed
        if event and not passed:
            failure = (event.get("kind"), f"test {i} ({test.tag}): {event.get('message')}")
            if test.tag == "basic" and first_basic is None:
                first_basic = failure
            elif test.tag == "edge" and first_edge is None:
                first_edge = failure
    prop = run.property_check
    if spec.properties is not None:
        passed = bool(prop and prop.get("passed") is True)
        tally["edge"][0] += passed
        tally["edge"][1] += 1
        m.tests_passed += passed
        if prop is not None and not passed and first_edge is None:
            first_edge = (prop.get("kind"), f"property: {prop.get('message')}")
    m.basic, m.edge = (tally["basic"][0], tally["basic"][1]), (tally["edge"][0], tally["edge"][1])
    if spec.reference is not None:
        if code == spec.reference:  # parsing it is enough (unparsing costs ~1 ms)
            m.exact_match = _parses(code)
        else:
            normal = _normalised(code)
            m.exact_match = normal is not None and normal == _normalised(spec.reference)
        if prop is not None:
            compared.append(prop.get("passed") is True)
        m.semantic_equivalence = all(compared) if compared else None
    m.error_class, m.first_failure = _classify(run, syntax, load, first_basic, first_edge)
    if m.error_class is None and m.tests_passed < m.tests_total:
        m.error_class, m.first_failure = "runtime", "the sample ended before all tests ran"
    return m


def _classify(
    run: SampleRun, syntax: Any, load: Any, basic: Any, edge: Any
) -> tuple[str | None, str | None]:
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
    for failure in (basic, edge):
        if failure is not None:
            kind, message = failure
            if kind == "resource":
                return "resource_limit", message
            if kind == "error":
                return "runtime", message
            return ("logic" if failure is basic else "edge_case"), message
    return None, None


def _within(run: SampleRun, timeout: float) -> bool:
    """The run ended on its own, in less CPU time than ``timeout``."""
    return not (run.timed_out or run.crashed) and run.cpu is not None and run.cpu <= timeout


RunKey = tuple[str, str, Limits]


def _run_key(spec: CodeSpec, code: str, limits: Limits) -> RunKey:
    return (spec.digest, code, limits)


@dataclass(frozen=True)
class Calibration:
    """What running the reference taught: the timeout, and its io outputs."""

    timeout: float
    outputs: dict[int, str] = field(default_factory=dict)


class CodeScorer:
    def __init__(
        self,
        default_timeout: float = 3.0,
        memory_mb: int = 512,
        workers: int | None = None,
        unsafe: bool = False,
        hidden: Sequence[str | os.PathLike[str]] = (),
    ):
        self.sandbox = SandboxPool(workers, unsafe, hidden=hidden)
        self.default_timeout = default_timeout
        self.memory_mb = memory_mb
        self._calibrations: dict[tuple[str, str], Future[Calibration]] = {}
        # One run per distinct code (and tests and limits): samples with the same code get
        # its verdict (temperature 0, or a model that repeats itself, runs once).
        self._runs: dict[RunKey, Future[SampleRun]] = {}
        self._lock = threading.Lock()
        self._feeder: ThreadPoolExecutor | None = None
        self._refused = False
        self._stopped = False

    def calibration(self, case: Case, spec: CodeSpec) -> Calibration:
        """Run the reference once per case: the timeout is 10 x its CPU time (between the
        floor and the default), CPU time so that load does not move verdicts."""
        while True:
            try:
                return self._calibrating(case, spec).result()
            except CancelledError:  # queued ahead and dropped by a stop: run it now
                continue

    def _calibrating(
        self, case: Case, spec: CodeSpec, priority: int = NOW, rank: int = 0
    ) -> Future[Calibration]:
        """The case's calibration, started (not waited for) if it is not yet: no thread
        blocks on it, so the calibrations of the cases ahead run side by side."""
        key = (str(case.path), case.id)
        with self._lock:
            future = self._calibrations.get(key)
            if future is not None:
                return future
            future = self._calibrations[key] = Future()
        if spec.reference is None:
            future.set_result(Calibration(self._timeout(spec, self.default_timeout)))
            return future
        run = self.sandbox.submit(
            spec.job(spec.reference), Limits(self.default_timeout, self.memory_mb), priority, rank
        )
        run.add_done_callback(lambda done: self._calibrated(key, spec, future, done))
        return future

    def _timeout(self, spec: CodeSpec, measured: float) -> float:
        return float(spec.timeout) if spec.timeout is not None else measured

    def _calibrated(
        self,
        key: tuple[str, str],
        spec: CodeSpec,
        future: Future[Calibration],
        done: Future[SampleRun],
    ) -> None:
        """The reference's run is done: resolve the case's calibration (whatever happens
        here, or items waiting for it would wait forever)."""
        if done.cancelled():
            with self._lock:
                if self._calibrations.get(key) is future:
                    del self._calibrations[key]
            future.cancel()
            return
        try:
            calibration = self._calibrate(spec, done.result())
        except BaseException as exc:
            future.set_exception(exc)
        else:
            future.set_result(calibration)

    def _calibrate(self, spec: CodeSpec, run: SampleRun) -> Calibration:
        timeout = self.default_timeout
        if run.cpu is not None:
            factor, floor = CALIBRATION
            timeout = min(self.default_timeout, max(floor, factor * run.cpu))
        calibration = Calibration(self._timeout(spec, timeout), reference_outputs(spec, run))
        if spec.reference is not None and _within(run, calibration.timeout):
            # a sample whose code is the reference's would run the same, within its limit;
            # kept before the calibration resolves, so samples queued on it find the run
            same = Future[SampleRun]()
            same.set_result(run)
            limits = Limits(calibration.timeout, self.memory_mb)
            with self._lock:
                self._runs.setdefault(_run_key(spec, spec.reference, limits), same)
        return calibration

    def timeout_for(self, case: Case, spec: CodeSpec) -> float:
        return self.calibration(case, spec).timeout

    def _limits(self, case: Case, spec: CodeSpec) -> Limits:
        return Limits(self.timeout_for(case, spec), self.memory_mb)

    def ahead(
        self,
        case: Case,
        spec: CodeSpec,
        answer: Callable[[], tuple[str, str]],
        rank: int = 0,
        waits: bool = True,
    ) -> None:
        """Queue this item's sample once ``answer()`` (text, prefill) is there and its
        case's calibration is done; ``rank``: the item's place in the run; ``waits``:
        whether ``answer()`` waits on a call (then a thread waits for it; a recording is read
        here, as the item would, with no thread to contend with for the interpreter).
        Errors are left for the item to report."""
        if self._stopped:
            return
        calibrating = self._calibrating(case, spec, AHEAD, rank)

        def feed() -> None:
            text, prefill = answer()
            code, _ = extract_code(text, prefill, spec)
            calibrating.add_done_callback(lambda done: self._queue(spec, code, done, rank))

        if not waits:
            # whatever reading it raises, the item raises again and reports (as the thread
            # that reads an answer a call brings leaves it to the item)
            with contextlib.suppress(Exception):
                feed()
            return
        if self._feeder is None:
            self._feeder = ThreadPoolExecutor(
                2 * self.sandbox.workers + 2, thread_name_prefix="prompteval-code"
            )
        self._feeder.submit(feed)

    def _queue(self, spec: CodeSpec, code: str, calibrated: Future[Calibration], rank: int) -> None:
        if calibrated.cancelled() or calibrated.exception() is not None:
            return  # the item calibrates again, or reports the error
        limits = Limits(calibrated.result().timeout, self.memory_mb)
        key = _run_key(spec, code, limits)
        with self._lock:
            if key not in self._runs:
                self._runs[key] = self.sandbox.submit(spec.job(code), limits, AHEAD, rank)

    def run(self, case: Case, spec: CodeSpec, code: str) -> tuple[SampleRun, Limits]:
        """The sample's run: the one queued ahead or already made for the same code, else
        one now."""
        limits = self._limits(case, spec)
        key = _run_key(spec, code, limits)
        with self._lock:
            future = self._runs.get(key)
            if future is None or future.cancelled():
                future = self._runs[key] = self.sandbox.submit(spec.job(code), limits)
        try:
            run = future.result()
        except SandboxUnavailable as exc:
            if self._refused:  # said once, in the first code item's error
                raise SandboxUnavailable("the code sandbox is unavailable (see above)") from None
            self._refused = True
            raise exc from None
        if run.crashed:  # the sandbox's fault, not the code's: the next sample tries again
            with self._lock:
                if self._runs.get(key) is future:
                    del self._runs[key]
        return run, limits

    def score(self, case: Case, spec: CodeSpec, text: str, prefill: str) -> tuple[Score, Metrics]:
        code, rule = extract_code(text, prefill, spec)
        run, limits = self.run(case, spec, code)
        m = measure(spec, code, run, self.calibration(case, spec).outputs)
        dimensions = {
            "functional_correctness": float(m.functional),
            "test_pass_rate": m.tests_passed / m.tests_total if m.tests_total else 0.0,
            "partial_correctness": m.partial,
            "exact_match": float(m.exact_match),
        }
        if m.semantic_equivalence is not None:
            dimensions["semantic_equivalence"] = float(m.semantic_equivalence)
        m.details = {
            "code": code,
            "extraction": rule,
            "timeout_s": limits.timeout,
            "run_seconds": round(run.seconds, 4),
        }
        return Score(value=round(m.partial, 6), dimensions=dimensions), m

    def stop(self) -> None:
        """``-x`` or a stop: nothing more runs ahead."""
        self._stopped = True
        self.sandbox.stop()
        if self._feeder is not None:
            self._feeder.shutdown(wait=False, cancel_futures=True)

    def close(self) -> None:
        if self._feeder is not None:
            self._feeder.shutdown(wait=True, cancel_futures=True)
            self._feeder = None
        self.sandbox.close()
