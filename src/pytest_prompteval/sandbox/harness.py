"""Inside the sandbox: a sample is two processes, the judge and the candidate.

The judge (this module's ``run``) hands the code to the candidate's process (forked by the
zygote, ``zygote.py``, whose memory never held the tests), which compiles it and says whether
it did before any of it runs (the compiler's word, not the code's), and runs the tests,
calling the candidate's functions through ``remote.py``: the candidate's process executes
the code and answers calls with data. Only the judge writes to ``out`` (a pipe the
candidate never holds; and the judge is not dumpable, so the candidate cannot reach it
through /proc or ptrace either): one JSON event a line, written at the end (or when the
server's SIGTERM says time is up), so that what finished before a timeout is known:
``{"phase": "syntax"|"load", ...}``, ``{"test": i, "passed": bool, ...}`` for assert and
check tests, ``{"test": i, "output": value}`` for io tests, ``{"test": i, "stdout": text}``
for a program's stdin tests, ``{"property": ...}``,
``{"done": true, "cpu": seconds}`` (``{"done": true}`` when the code did not compile or load:
the server waits for a last event).

An io test's expected value never reaches the sandbox: its output is compared by pytest (a
program's printed text too). A program (a case whose tests are ``stdin``) is compiled but not
run at load: the candidate runs it once per test, its input on stdin (``sys.stdin`` and
descriptor 0), what it prints to ``sys.stdout`` captured up to ``PROGRAM_OUTPUT`` bytes.
When the candidate's process dies, the judge ends the same way (exit code or signal, as the
zygote reports it), so a sample reads as it did when both were one process.
"""

from __future__ import annotations

import builtins
import contextlib
import copy
import errno
import hashlib
import importlib
import io
import json
import linecache
import os
import random
import signal
import sys
import threading
import time
import types
from typing import IO, Any, NamedTuple

from pytest_prompteval.sandbox.remote import (
    Channel,
    Gone,
    WireError,
    describe,
    kind_of,
    message_of,
    rebuild,
)

CANDIDATE = "<candidate>"
SHADOWS = frozenset(vars(builtins))
TICKS = os.sysconf("SC_CLK_TCK")
#: Not imported for a candidate's module that names them: they open a browser or print.
SIDE_EFFECTS = frozenset({"antigravity", "this", "idlelib", "turtledemo", "__main__"})


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a running process and of the children it has reaped
    (work done in a child that is then waited for counts too); 0 once it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
    except OSError:
        return 0.0
    return sum(int(f) for f in fields[11:15]) / TICKS


def normalise(value: Any) -> Any:
    """Compare results as JSON would see them: tuples are lists."""
    if isinstance(value, tuple | list):
        return [normalise(v) for v in value]
    if isinstance(value, dict):
        return {k: normalise(v) for k, v in value.items()}
    return value


#: Outputs longer than this as JSON travel as a digest of their canonical form.
OUTPUT_CHARS = 100_000

_JUDGE_PID = 0
#: Whether the judge imported a module on a candidate's word (see ``_imported``).
_RETIRE = False


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


def stdout_lines(text: str) -> list[str]:
    """A program's output as APPS compares it: each line stripped, empty lines dropped."""
    return [line for line in (raw.strip() for raw in text.splitlines()) if line]


def wire_stdout(text: str) -> dict[str, Any]:
    """A program's output as the event carries it: the text, or a digest of its lines when
    large."""
    if len(text) > OUTPUT_CHARS:
        lines = "\n".join(stdout_lines(text))
        return {"stdout_digest": hashlib.sha256(lines.encode(errors="replace")).hexdigest()}
    return {"stdout": text}


def _emit(out: IO[str], event: dict[str, Any]) -> None:
    if os.getpid() != _JUDGE_PID:
        return  # a process the tests forked: not the judge's voice
    out.write(json.dumps(event, default=repr) + "\n")  # flushed at the end, or on SIGTERM


def _keep_lines(source: str, name: str) -> None:
    """The source where tracebacks look for lines."""
    linecache.cache[name] = (len(source), None, source.splitlines(True), name)


def _compile(source: str, name: str) -> Any:
    _keep_lines(source, name)
    # not inheriting this module's ``from __future__ import annotations`` (dataclasses)
    return compile(source, name, "exec", dont_inherit=True)


#: A judge's compiled tests, by source: the samples of a case share them.
_TESTS: dict[tuple[str, str], Any] = {}


def _compile_test(source: str, name: str) -> Any:
    code = _TESTS.get((source, name))
    if code is None:
        if len(_TESTS) >= 256:
            _TESTS.clear()
        return _TESTS.setdefault((source, name), _compile(source, name))
    _keep_lines(source, name)  # another test of the same name may have run since
    return code


def reseed(seed: int) -> None:
    """The same random numbers for every sample: a test that draws its inputs unseeded
    (five of HumanEval's do) gives every sample the same ones, whichever server runs it and
    whatever the judge ran before (it serves sample after sample); a verdict never depends
    on the schedule. The judge's seed is the run's (in the job), never the candidate's to
    know: code drawing in step with a test would know inputs the test never passed it."""
    random.seed(seed)
    numpy_random = sys.modules.get("numpy.random")
    if numpy_random is not None:
        with contextlib.suppress(Exception):
            numpy_random.seed(seed % 2**32)


def _syntax_error(exc: SyntaxError | ValueError) -> str:
    line = f" (line {exc.lineno})" if isinstance(exc, SyntaxError) else ""
    return f"{exc}{line}"[:500]


def _load(source: str, name: str) -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": name}
    exec(_compile(source, name), namespace)
    return namespace


def _test_namespace(module: dict[str, Any], setup: str) -> dict[str, Any]:
    """What a test's code sees: the candidate's module (as its own tests would, MBPP's and
    HumanEval's run beside the code), then the case's setup."""
    namespace = dict(module)
    namespace["__builtins__"] = builtins  # the judge's own, whatever the module says
    if setup:
        exec(_compile_test(setup, "<setup>"), namespace)
    return namespace


def _run_test(test: dict[str, Any], namespace: dict[str, Any], candidate: Any) -> None:
    if "check" in test:
        exec(_compile_test(test["check"], "<check>"), namespace)
        if "check" in namespace:  # HumanEval's; without one the source is a script (MBPP+)
            namespace["check"](candidate)
        return None
    if "unittest" in test:
        exec(_compile_test(test["unittest"], "<unittest>"), namespace)
        _run_unittest(namespace, test["method"])
        return None
    statement = test["assert"].strip()
    if not statement.startswith("assert"):
        statement = f"assert {statement}"
    exec(_compile_test(statement, "<assert>"), namespace)
    return None


def _run_unittest(namespace: dict[str, Any], name: str) -> None:
    """One test method of the module's ``TestCase`` class, with its fixtures; its first
    failure or error is raised again here (the candidate's end too, which unittest would
    record as one more error)."""
    import unittest

    class Outcome(unittest.TestResult):
        first: BaseException | None = None

        def _keep(self, err: Any) -> None:
            if self.first is None or isinstance(err[1], Gone):
                self.first = err[1]

        def addError(self, test: Any, err: Any) -> None:
            self._keep(err)

        def addFailure(self, test: Any, err: Any) -> None:
            self._keep(err)

        def addSubTest(self, test: Any, subtest: Any, err: Any) -> None:
            if err is not None:
                self._keep(err)

    owner, _, method = name.partition(".")
    cls = namespace.get(owner)
    if not (isinstance(cls, type) and issubclass(cls, unittest.TestCase)):
        raise AssertionError(f"the tests define no TestCase class {owner!r}")
    outcome = Outcome()
    unittest.TestSuite([cls(method)]).run(outcome)
    if outcome.first is not None:
        raise outcome.first


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
    except Gone:
        raise
    except BaseException as exc:
        event = {"property": True, "passed": False, "kind": kind_of(exc)}
        _emit(out, {**event, "message": message_of(exc)})


class Pipes(NamedTuple):
    """The judge's ends of what joins it to the candidate's process (see ``zygote.py``)."""

    read: int  # the candidate's answers
    write: int  # the judge's requests
    code: int  # the candidate's code, written once
    status: int  # from the zygote: the candidate's pid, then how it ended


#: The most a program may print in one run (more fails its test as a resource limit).
PROGRAM_OUTPUT = 4 << 20
#: The first line the judge writes before the code: how the candidate runs it.
MODULE, PROGRAM = "module", "program"


class _Printed(io.RawIOBase):
    """A program's stdout: kept up to ``PROGRAM_OUTPUT`` bytes, then refused."""

    def __init__(self) -> None:
        self.data = bytearray()

    def writable(self) -> bool:
        return True

    def write(self, chunk: Any) -> int:
        if len(self.data) + len(chunk) > PROGRAM_OUTPUT:
            raise OSError(errno.EFBIG, f"the program printed more than {PROGRAM_OUTPUT:,} bytes")
        self.data += chunk
        return len(chunk)


def _feed(fd: int, data: bytes) -> None:
    """Write a program's input into its stdin pipe; a program that stops reading ends it
    (its end closed: EPIPE)."""
    view = memoryview(data)
    with contextlib.suppress(OSError):
        while view:
            view = view[os.write(fd, view) :]
    os.close(fd)


def _program(compiled: Any) -> Any:
    """The function the judge calls for each stdin test: run the program on that input (a
    fresh ``__main__`` each time), its printed text back."""

    def run(stdin: str) -> str:
        read, write = os.pipe()
        feeder = threading.Thread(target=_feed, args=(write, stdin.encode(errors="replace")))
        feeder.start()
        kept = os.dup(0)
        os.dup2(read, 0)  # ``open(0)`` and ``os.read(0, ...)`` read the input too
        os.close(read)
        printed = _Printed()
        streams = sys.stdin, sys.stdout
        out = io.TextIOWrapper(io.BufferedWriter(printed), encoding="utf-8", errors="replace")
        sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8")
        sys.stdout = out
        reseed(0)
        namespace = {"__name__": "__main__", "__builtins__": builtins}
        try:
            exec(compiled, namespace)
            out.flush()
        except SystemExit as exc:  # exit() after the answer is how many programs end
            out.flush()
            if exc.code not in (None, 0):
                raise RuntimeError(f"the program exited with status {exc.code!r}") from None
        finally:
            # what the run kept (``f = open(0)`` beside a function: a cycle) goes now, not
            # when a later collection closes descriptor 0 under the next run
            namespace.clear()
            sys.stdin, sys.stdout = streams
            os.dup2(kept, 0)  # the pipe's last read end closed: the feeder ends
            os.close(kept)
            feeder.join()
        return printed.data.decode(errors="replace")

    return run


def candidate(code: str, channel: Channel) -> None:
    """The candidate's process: compile the code and say whether it did (before any of it
    runs: what it says then is the compiler's), run it, then answer the judge's calls. A
    program is not run at load: the judge calls ``program`` once per input."""
    mode, _, code = code.partition("\n")
    module = types.ModuleType("__candidate__")
    sys.modules[module.__name__] = module  # where dataclasses and pickle look for it
    namespace = module.__dict__
    try:
        compiled = _compile(code, CANDIDATE)
    except (SyntaxError, ValueError) as exc:
        channel.send({"syntax": _syntax_error(exc)})
        return
    except BaseException as exc:
        channel.send({"syntax": None})
        channel.send({"loaded": False, "err": describe(exc)})
        return
    channel.send({"syntax": None})
    if mode == PROGRAM:
        channel.send({"loaded": True, "globals": channel.export({PROGRAM: _program(compiled)})})
        channel.serve_forever()
        return
    reseed(0)  # the code's own draws: the same for every sample, and no secret
    try:
        exec(compiled, namespace)
    except BaseException as exc:
        channel.send({"loaded": False, "err": describe(exc)})
        return
    channel.send({"loaded": True, "globals": channel.export(namespace)})
    channel.serve_forever()


def _start(code: str, pipes: Pipes, mode: str) -> int:
    """Hand the code to the candidate's process, after the line saying how to run it; its
    pid, from the zygote (0 if none)."""
    # any str gets through (a lone surrogate: the candidate's compiler says it is no source)
    with contextlib.suppress(OSError), os.fdopen(pipes.code, "wb") as sink:
        sink.write(f"{mode}\n{code}".encode(errors="surrogatepass"))
    line = _status_line(pipes.status)
    return int(line) if line.isdigit() else 0


def _status_line(fd: int) -> str:
    found = bytearray()
    while not found.endswith(b"\n"):
        try:
            chunk = os.read(fd, 1)
        except OSError:
            break
        if not chunk:
            break
        found += chunk
    return found.decode(errors="replace").strip()


def _end_as(pipes: Pipes, out: IO[str]) -> None:
    """End the judge the way the candidate's process ended (the zygote says how)."""
    out.flush()
    line = _status_line(pipes.status)
    status = int(line) if line.isdigit() else 9  # no word from the zygote: killed
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        signal.signal(number, signal.SIG_DFL)
        os.kill(os.getpid(), number)
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)


def _imported(name: str) -> Any:
    global _RETIRE
    if name in sys.modules:
        return sys.modules[name]
    if name.partition(".")[0] in SIDE_EFFECTS:
        return None
    # a module's import may change the judge: it judges no other sample after this one
    _RETIRE = True
    try:
        return importlib.import_module(name)
    except Exception:
        return None


def _module(channel: Channel, exported: Any) -> dict[str, Any]:
    """The candidate's module as the tests see it: its functions and classes as handles,
    its plain values as values, the modules it imported as the judge's own; never a name
    that would shadow a built-in the tests use (``abs``, ``all``, ``sorted``)."""
    if type(exported) is not dict:
        raise WireError("the candidate's module came malformed")
    namespace: dict[str, Any] = {"__name__": "__candidate__"}
    for name, data in exported.items():
        if type(name) is not str or name.startswith("__") or name in SHADOWS:
            continue  # the message is the candidate's: it may name anything
        if type(data) is dict and list(data) == ["module"] and type(data["module"]) is str:
            module = _imported(data["module"])
            if module is not None:
                namespace[name] = module
        else:
            namespace[name] = channel.decode(data)
    return namespace


def run(job: dict[str, Any], out: IO[str], pipes: Pipes) -> None:
    """The judge. The candidate's process is forked by the zygote, whose memory never held
    a job: it cannot read the tests, or another sample's code, to answer them."""
    global _JUDGE_PID
    _JUDGE_PID = os.getpid()
    reseed(int(job.get("seed", 0)))
    pid = _start(job["code"], pipes, PROGRAM if job.get("program") else MODULE)
    channel = Channel(pipes.read, pipes.write, peer="the candidate's process", guarded=True)

    def stopped(*_: object) -> None:
        # The server's time is up: what finished is known to it all the same.
        with contextlib.suppress(Exception):
            out.flush()
        os._exit(1)

    # Events are written in one go at the end (each flush would wake the server); a
    # timeout sends SIGTERM first, so that the tests that finished are not lost.
    signal.signal(signal.SIGTERM, stopped)
    try:
        _judge(job, pid, channel, out)
    except Gone:
        _end_as(pipes, out)


def _last(**fields: Any) -> dict[str, Any]:
    """The sample's last event (the server waits for one), however it ended: a judge that
    imported a module on a candidate's word asks to retire in it, even when the code then
    did not load (the import may have changed it for the next sample)."""
    return {"done": True, **fields, **({"retire": True} if _RETIRE else {})}


def _judge(job: dict[str, Any], pid: int, channel: Channel, out: IO[str]) -> None:
    entry_point = job["entry_point"]
    try:
        compiled = channel.receive()
        syntax = None if compiled == {"syntax": None} else compiled.get("syntax", "no answer")
    except Gone:
        raise
    except BaseException as exc:
        syntax = message_of(exc)
    if syntax is not None:
        _emit(out, {"phase": "syntax", "ok": False, "message": str(syntax)[:500]})
        _emit(out, _last())
        return
    _emit(out, {"phase": "syntax", "ok": True})
    try:
        loaded = channel.receive()
        if loaded.get("loaded") is not True:
            raise rebuild(loaded.get("err"))
        namespace = _module(channel, loaded.get("globals"))
    except Gone:
        raise
    except BaseException as exc:
        failed = {"phase": "load", "ok": False, "kind": kind_of(exc)}
        _emit(out, {**failed, "message": message_of(exc)})
        _emit(out, _last())
        return
    if job.get("program"):
        entry_point = PROGRAM  # the candidate's runner of the program, its only name
    if entry_point not in namespace:
        message = f"the code defines no {entry_point!r}"
        _emit(out, {"phase": "load", "ok": False, "kind": "error", "message": message})
        _emit(out, _last())
        return
    candidate = namespace[entry_point]
    _emit(out, {"phase": "load", "ok": True})
    started, cpu = time.perf_counter(), time.process_time() + cpu_seconds(pid)
    setup = str(job.get("setup") or "")
    for index, test in enumerate(job["tests"]):
        event: dict[str, Any] = {"test": index}
        try:
            if "args" in test:
                event.update(wire_output(candidate(*test["args"])))
            elif "stdin" in test:
                printed = candidate(test["stdin"])
                if type(printed) is not str:
                    raise TypeError("the program's output came back as no text")
                event.update(wire_stdout(printed))
            else:
                _run_test(test, _test_namespace(namespace, setup), candidate)
                event["passed"] = True
        except Gone:
            raise
        except BaseException as exc:
            event.update(passed=False, kind=kind_of(exc), message=message_of(exc))
        _emit(out, event)
    if job.get("properties") and job.get("reference"):
        reference = _load(job["reference"], "<reference>").get(entry_point)
        _properties(job, candidate, reference, out)
    seconds = time.perf_counter() - started
    _emit(out, _last(seconds=seconds, cpu=time.process_time() + cpu_seconds(pid) - cpu))
