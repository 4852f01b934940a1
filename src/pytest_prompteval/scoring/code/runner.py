"""The code runner (named apart from the scorers, which turn an answer into a score): a
case's calibration (its reference run once), samples queued ahead in the sandbox pool, one
run per distinct code, and a sample's score from its run.

Samples run in a pool of warm sandbox servers (``sandbox/pool.py``); ``CodeRunner.ahead``
queues an upcoming item's sample as soon as its answer is there, and ``score`` picks up the
run (or runs it at once, before anything queued ahead).
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import CancelledError, Future, ThreadPoolExecutor
from dataclasses import dataclass, field

from pytest_prompteval.core.cases import Case
from pytest_prompteval.sandbox import SampleReport
from pytest_prompteval.sandbox.client import Limits, SandboxUnavailable
from pytest_prompteval.sandbox.pool import AHEAD, NOW, SandboxPool
from pytest_prompteval.sandbox.provider import NamespaceSandboxes, SandboxProvider
from pytest_prompteval.scoring.code.extract import extract_code
from pytest_prompteval.scoring.code.measure import Metrics, measure, reference_outputs
from pytest_prompteval.scoring.code.spec import CodeSpec
from pytest_prompteval.scoring.score import Score

CALIBRATION = (10.0, 0.25)  # CPU timeout = factor x reference CPU time, at least this


def _within(run: SampleReport, timeout: float) -> bool:
    """The run ended on its own, in less CPU time than ``timeout``."""
    return not (run.timed_out or run.crashed) and run.cpu is not None and run.cpu <= timeout


RunKey = tuple[str, str, Limits]


def _run_key(spec: CodeSpec, code: str, limits: Limits) -> RunKey:
    return (spec.digest, code, limits)


@dataclass(frozen=True)
class ReferenceRun:
    """What running the reference taught: the timeout, and its io outputs."""

    timeout: float
    outputs: dict[str, str] = field(default_factory=dict)


class CodeRunner:
    def __init__(
        self,
        default_timeout: float = 3.0,
        memory_mb: int = 512,
        sandboxes: SandboxProvider | None = None,
        hidden: Sequence[str | os.PathLike[str]] = (),
    ):
        """``sandboxes``: where samples run (this machine's namespaces by default)."""
        self.sandbox = SandboxPool(sandboxes or NamespaceSandboxes(), hidden)
        self.default_timeout = default_timeout
        self.memory_mb = memory_mb
        self._calibrations: dict[tuple[str, str], Future[ReferenceRun]] = {}
        # One run per distinct code (and tests and limits): samples with the same code get
        # its verdict (temperature 0, or a model that repeats itself, runs once).
        self._runs: dict[RunKey, Future[SampleReport]] = {}
        self._lock = threading.Lock()
        self._feeder: ThreadPoolExecutor | None = None
        self._refused = False
        self._stopped = False

    def calibration(self, case: Case, spec: CodeSpec) -> ReferenceRun:
        """Run the reference once per case: the timeout is 10 x its CPU time (between the
        floor and the default), CPU time so that load does not move verdicts."""
        while True:
            try:
                return self._calibrating(case, spec).result()
            except CancelledError:  # queued ahead and dropped by a stop: run it now
                continue

    def _calibrating(
        self, case: Case, spec: CodeSpec, priority: int = NOW, rank: int = 0
    ) -> Future[ReferenceRun]:
        """The case's calibration, started (not waited for) if it is not yet: no thread
        blocks on it, so the calibrations of the cases ahead run side by side."""
        key = (str(case.path), case.id)
        with self._lock:
            future = self._calibrations.get(key)
            if future is not None:
                return future
            future = self._calibrations[key] = Future()
        if spec.reference is None:
            future.set_result(ReferenceRun(self._timeout(spec, self.default_timeout)))
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
        future: Future[ReferenceRun],
        done: Future[SampleReport],
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

    def _calibrate(self, spec: CodeSpec, run: SampleReport) -> ReferenceRun:
        timeout = self.default_timeout
        if run.cpu is not None:
            factor, floor = CALIBRATION
            timeout = min(self.default_timeout, max(floor, factor * run.cpu))
        calibration = ReferenceRun(self._timeout(spec, timeout), reference_outputs(spec, run))
        if spec.reference is not None and _within(run, calibration.timeout):
            # a sample whose code is the reference's would run the same, within its limit;
            # kept before the calibration resolves, so samples queued on it find the run
            same = Future[SampleReport]()
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

    def _queue(
        self, spec: CodeSpec, code: str, calibrated: Future[ReferenceRun], rank: int
    ) -> None:
        if calibrated.cancelled() or calibrated.exception() is not None:
            return  # the item calibrates again, or reports the error
        limits = Limits(calibrated.result().timeout, self.memory_mb)
        key = _run_key(spec, code, limits)
        with self._lock:
            if key not in self._runs:
                self._runs[key] = self.sandbox.submit(spec.job(code), limits, AHEAD, rank)

    def run(self, case: Case, spec: CodeSpec, code: str) -> tuple[SampleReport, Limits]:
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
