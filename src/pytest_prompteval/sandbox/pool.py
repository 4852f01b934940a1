"""A pool of warm sandbox servers that runs jobs ahead of the items that report them.

Its servers are a ``SandboxProvider``'s code sandboxes: as many as the provider runs at
once, made no faster than its creation rate. Each worker thread owns one and takes jobs
from one queue: an item's own job goes before the jobs queued ahead for later items, which
run in the order of the items that need them (their ``rank``), then in the order they were
queued. A server holds the job it runs and the next one (``depth``), so an item's own job
can wait behind one job already handed to each server. ``stop()`` drops what is queued
ahead and not yet handed over (``-x``); ``close()`` ends the servers.
"""

from __future__ import annotations

import itertools
import os
import queue
import threading
from collections import deque
from collections.abc import Sequence
from concurrent.futures import Future
from typing import Any

from pytest_prompteval.sandbox.client import Limits, SampleReport, SandboxUnavailable
from pytest_prompteval.sandbox.provider import CodeSandbox, Pacing, SandboxProvider

NOW, AHEAD = 0, 1

Task = tuple[int, int, int, "dict[str, Any] | None", "Limits | None", "Future[SampleReport] | None"]
Sent = tuple[dict[str, Any], Limits, "Future[SampleReport]"]
#: Jobs each server holds: the one it runs and the next, so it never waits for us.
DEPTH = 2


def _hypothesis(job: dict[str, Any]) -> bool:
    return bool(job.get("properties"))


class SandboxPool:
    def __init__(
        self,
        sandboxes: SandboxProvider,
        hidden: Sequence[str | os.PathLike[str]] = (),
        depth: int = DEPTH,
        pacing: Pacing | None = None,
    ):
        self.sandboxes = sandboxes
        self.workers = max(1, sandboxes.concurrency)
        self.depth = max(1, depth)
        self.hidden = hidden
        self._pacing = pacing or Pacing(sandboxes.creation_rate)
        self._queue: queue.PriorityQueue[Task] = queue.PriorityQueue()
        self._order = itertools.count()
        self._threads: list[threading.Thread] = []
        self._boxes: list[CodeSandbox] = []
        self._lock = threading.Lock()
        self._stopped = False
        self._warm: bool | None = None  # start the servers at once (with hypothesis?)
        self.unavailable: SandboxUnavailable | None = None

    def warm(self, hypothesis: bool = False) -> None:
        """Start the servers now, before their first job."""
        self._warm = hypothesis
        self._spawn()

    def _spawn(self) -> None:
        with self._lock:
            if self._threads:
                return
            for index in range(self.workers):
                thread = threading.Thread(
                    target=self._work, name=f"prompteval-sandbox-{index}", daemon=True
                )
                self._threads.append(thread)
                thread.start()

    def _box(self) -> CodeSandbox:
        """A server of the provider's, made when its creation rate allows."""
        self._pacing.wait()
        box = self.sandboxes.code_sandbox(self.hidden)
        with self._lock:
            self._boxes.append(box)
        return box

    def submit(
        self, job: dict[str, Any], limits: Limits, priority: int = NOW, rank: int = 0
    ) -> Future[SampleReport]:
        future: Future[SampleReport] = Future()
        if self.unavailable is not None:
            future.set_exception(self.unavailable)
            return future
        if priority == AHEAD and self._stopped:
            future.cancel()
            return future
        self._spawn()
        self._queue.put((priority, rank, next(self._order), job, limits, future))
        return future

    def run(self, job: dict[str, Any], limits: Limits) -> SampleReport:
        """Run one job now (before anything queued ahead) and wait for it."""
        return self.submit(job, limits).result()

    def _take(self, block: bool) -> Task | None:
        try:
            return self._queue.get(block=block)
        except queue.Empty:
            return None

    def _work(self) -> None:
        """Keep ``depth`` jobs on the server: it starts the next as soon as it answers
        one, without waiting for this thread (which needs the GIL, held by the items)."""
        box = self._box()
        if self._warm is not None:
            try:
                box.start(self._warm)
            except SandboxUnavailable as exc:  # the first job's error says it
                self.unavailable = exc
            except OSError:
                pass  # the first job starts it again, and reports what fails
        sent: deque[Sent] = deque()  # on the server, oldest first
        held: Sent | None = None  # waits for the server to be idle (a restart)
        closing = False
        while True:
            if held is None and not closing and len(sent) < self.depth:
                task = self._take(block=not sent)
                if task is not None and task[5] is None:
                    closing = True
                elif task is not None:
                    _, _, _, job, limits, future = task
                    assert job is not None and limits is not None and future is not None
                    if not future.set_running_or_notify_cancel():
                        continue
                    held = (job, limits, future)
            if held is not None and (not sent or box.ready_for(_hypothesis(held[0]))):
                self._send(box, held, sent)
                held = None
                continue
            if sent:
                self._receive(box, sent)
            elif closing:
                return

    def _send(self, box: CodeSandbox, task: Sent, sent: deque[Sent]) -> None:
        job, limits, future = task
        if self.unavailable is not None:  # said once; every later job fails at once with it
            future.set_exception(self.unavailable)
            return
        try:
            box.send(job, limits, hypothesis=_hypothesis(job))
        except SandboxUnavailable as exc:
            self.unavailable = exc
            future.set_exception(exc)
        except BaseException as exc:
            future.set_exception(exc)
        else:
            sent.append(task)

    def _receive(self, box: CodeSandbox, sent: deque[Sent]) -> None:
        _, _, future = sent.popleft()
        try:
            future.set_result(box.receive())
        except BaseException as exc:
            future.set_exception(exc)
        if box.outstanding < len(sent):  # the server was lost: the jobs behind go again
            again = list(sent)
            sent.clear()
            for task in again:
                self._send(box, task, sent)

    def stop(self) -> None:
        """Queue nothing more ahead and drop what is queued ahead (items' own jobs stay)."""
        self._stopped = True
        kept = []
        while True:
            try:
                task = self._queue.get_nowait()
            except queue.Empty:
                break
            if task[0] == AHEAD and task[5] is not None:
                task[5].cancel()
            else:
                kept.append(task)
        for task in kept:
            self._queue.put(task)

    def close(self) -> None:
        self.stop()
        for _ in self._threads:
            self._queue.put((2, 0, next(self._order), None, None, None))
        for thread in self._threads:
            thread.join()
        for box in self._boxes:
            box.close()
        self._threads, self._boxes = [], []
