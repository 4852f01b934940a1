"""Inside the sandboxed process: compile the candidate, run the tests, stream results.

Every line written to ``out`` is one JSON event, flushed at once, so that what finished
before a timeout or a crash is known to the server:
``{"phase": "syntax"|"load", ...}``, ``{"test": i, "passed": bool, ...}`` for assert and
check tests, ``{"test": i, "output": value}`` for io tests, ``{"property": ...}``,
``{"done": true, "cpu": seconds}``.

An io test's expected value never reaches this process: the candidate's output is sent
back and compared by pytest, so code that writes a forged event can claim only an output.
Assert and check tests (and property tests) run here, beside the candidate: their verdicts
are only as trustworthy as any in-process test (see the README's guarantees).
"""

from __future__ import annotations

import copy
import hashlib
import json
import linecache
import os
import time
import traceback
from typing import IO, Any

CANDIDATE = "<candidate>"


def _message(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip()
    if isinstance(exc, AssertionError):
        frames = traceback.extract_tb(exc.__traceback__)
        lines = [f.line for f in frames if f.line and f.filename.startswith("<")]
        if lines:
            text = f"AssertionError: {lines[-1]}" + (f" ({exc})" if str(exc) else "")
    return text[:500]


def _kind(exc: BaseException) -> str:
    if isinstance(exc, MemoryError | RecursionError) or (
        isinstance(exc, OSError) and exc.errno in (11, 12, 27)  # EAGAIN (fork), ENOMEM, EFBIG
    ):
        return "resource"
    return "assert" if isinstance(exc, AssertionError) else "error"


def normalise(value: Any) -> Any:
    """Compare results as JSON would see them: tuples are lists."""
    if isinstance(value, tuple | list):
        return [normalise(v) for v in value]
    if isinstance(value, dict):
        return {k: normalise(v) for k, v in value.items()}
    return value


#: Outputs longer than this as JSON travel as a digest of their canonical form.
OUTPUT_CHARS = 100_000

_SAMPLE_PID = 0


def canonical(value: Any) -> str:
    """One text per JSON-equal value (dict keys as JSON turns them into strings)."""
    return json.dumps(json.loads(json.dumps(normalise(value))), sort_keys=True)


def wire_output(value: Any) -> dict[str, Any]:
    """An io test's output as the event carries it: the JSON value, or a digest when
    large; ``repr`` when it is not JSON (it then equals no expected value)."""
    try:
        text = json.dumps(normalise(value))
    except (TypeError, ValueError, RecursionError):
        return {"output_repr": repr(value)[:500]}
    if len(text) > OUTPUT_CHARS:
        return {"output_digest": hashlib.sha256(canonical(value).encode()).hexdigest()}
    return {"output": json.loads(text)}


def _emit(out: IO[str], event: dict[str, Any]) -> None:
    if os.getpid() != _SAMPLE_PID:
        return  # a process the candidate forked runs on through the harness: not its voice
    out.write(json.dumps(event, default=repr) + "\n")
    out.flush()


def _compile(source: str, name: str) -> Any:
    """Compile, keeping the source where tracebacks look for lines."""
    linecache.cache[name] = (len(source), None, source.splitlines(True), name)
    return compile(source, name, "exec")


def _load(source: str, name: str) -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": name}
    exec(_compile(source, name), namespace)
    return namespace


def _run_test(
    test: dict[str, Any], entry_point: str, candidate: Any, module: dict[str, Any]
) -> None:
    if "check" in test:
        # HumanEval runs the test in the candidate's module: it may use the helpers there.
        namespace = dict(module)
        exec(_compile(test["check"], "<check>"), namespace)
        namespace["check"](candidate)
        return None
    statement = test["assert"].strip()
    if not statement.startswith("assert"):
        statement = f"assert {statement}"
    exec(_compile(statement, "<assert>"), {entry_point: candidate})
    return None


def _strategies(spec: dict[str, Any]) -> Any:
    from hypothesis import strategies as st

    vocabulary = {
        name: getattr(st, name)
        for name in (
            "integers",
            "floats",
            "booleans",
            "text",
            "characters",
            "lists",
            "tuples",
            "sampled_from",
            "just",
            "none",
            "dictionaries",
            "one_of",
            "sets",
        )
    }
    if "file" in spec:
        return _load(spec["file"], "<strategies>")["strategies"]()
    return [eval(expr, {"__builtins__": {}}, vocabulary) for expr in spec["args"]]


def _properties(job: dict[str, Any], candidate: Any, reference: Any, out: IO[str]) -> None:
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import strategies as st

    spec = job["properties"]
    strategies = _strategies(spec)

    @settings(
        max_examples=int(spec.get("examples", 100)),
        database=None,
        deadline=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
        phases=(Phase.explicit, Phase.generate, Phase.shrink),  # "explain" costs seconds
    )
    @given(st.tuples(*strategies))
    def same_as_reference(args: tuple[Any, ...]) -> None:
        expected = reference(*copy.deepcopy(args))
        actual = candidate(*copy.deepcopy(args))
        assert normalise(actual) == normalise(expected), (
            f"{job['entry_point']}(*{list(args)!r}) returned {actual!r}, the reference {expected!r}"
        )

    try:
        same_as_reference()
        _emit(out, {"property": True, "passed": True})
    except BaseException as exc:
        _emit(
            out, {"property": True, "passed": False, "kind": _kind(exc), "message": _message(exc)}
        )


def run(job: dict[str, Any], out: IO[str]) -> None:
    global _SAMPLE_PID
    _SAMPLE_PID = os.getpid()
    code, entry_point = job["code"], job["entry_point"]
    try:
        compiled = _compile(code, CANDIDATE)
    except (SyntaxError, ValueError) as exc:
        line = f" (line {exc.lineno})" if isinstance(exc, SyntaxError) else ""
        _emit(out, {"phase": "syntax", "ok": False, "message": f"{exc}{line}"[:500]})
        return
    _emit(out, {"phase": "syntax", "ok": True})
    namespace: dict[str, Any] = {"__name__": "__candidate__"}
    try:
        exec(compiled, namespace)
        candidate = namespace[entry_point]
    except KeyError:
        _emit(
            out,
            {
                "phase": "load",
                "ok": False,
                "kind": "error",
                "message": f"the code defines no {entry_point!r}",
            },
        )
        return
    except BaseException as exc:
        _emit(out, {"phase": "load", "ok": False, "kind": _kind(exc), "message": _message(exc)})
        return
    _emit(out, {"phase": "load", "ok": True})
    started, cpu = time.perf_counter(), time.process_time()
    for index, test in enumerate(job["tests"]):
        event: dict[str, Any] = {"test": index}
        try:
            if "args" in test:
                event.update(wire_output(candidate(*copy.deepcopy(test["args"]))))
            else:
                _run_test(test, entry_point, candidate, namespace)
                event["passed"] = True
        except BaseException as exc:
            event.update(passed=False, kind=_kind(exc), message=_message(exc))
        _emit(out, event)
    if job.get("properties") and job.get("reference"):
        reference = _load(job["reference"], "<reference>").get(entry_point)
        _properties(job, candidate, reference, out)
    _emit(
        out,
        {
            "done": True,
            "seconds": time.perf_counter() - started,
            "cpu": time.process_time() - cpu,
        },
    )
