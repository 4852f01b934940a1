"""A pool of warm sandbox servers that runs jobs ahead of the items that report them.

Each worker thread owns one server (``Sandbox``) and takes jobs from one queue: an item's
own job goes before the jobs queued ahead for later items, and jobs run in the order they
were queued. ``stop()`` drops what is queued ahead (``-x``); ``close()`` ends the servers.
"""

from __future__ import annotations

import itertools
import os
import queue
import threading
from concurrent.futures import Future
from typing import Any

from pytest_prompteval.sandbox.client import Limits, SampleRun, Sandbox, SandboxUnavailable

NOW, AHEAD = 0, 1


def default_workers() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


Task = tuple[int, int, "dict[str, Any] | None", "Limits | None", "Future[SampleRun] | None"]


class SandboxPool:
    def __init__(self, workers: int | None = None, unsafe: bool = False):
        self.workers = max(1, workers or default_workers())
        self.unsafe = unsafe
        self._queue: queue.PriorityQueue[Task] = queue.PriorityQueue()
        self._order = itertools.count()
        self._threads: list[threading.Thread] = []
        self._boxes: list[Sandbox] = []
        self._lock = threading.Lock()
        self._stopped = False
        self.unavailable: SandboxUnavailable | None = None

    def _spawn(self) -> None:
        with self._lock:
            if self._threads:
                return
            for index in range(self.workers):
                box = Sandbox(self.unsafe)
                thread = threading.Thread(
                    target=self._work, args=(box,), name=f"prompteval-sandbox-{index}", daemon=True
                )
                self._boxes.append(box)
                self._threads.append(thread)
                thread.start()

    def submit(self, job: dict[str, Any], limits: Limits, priority: int = NOW) -> Future[SampleRun]:
        future: Future[SampleRun] = Future()
        if self.unavailable is not None:
            future.set_exception(self.unavailable)
            return future
        if priority == AHEAD and self._stopped:
            future.cancel()
            return future
        self._spawn()
        self._queue.put((priority, next(self._order), job, limits, future))
        return future

    def run(self, job: dict[str, Any], limits: Limits) -> SampleRun:
        """Run one job now (before anything queued ahead) and wait for it."""
        return self.submit(job, limits).result()

    def _work(self, box: Sandbox) -> None:
        while True:
            _, _, job, limits, future = self._queue.get()
            if job is None or limits is None or future is None:
                return
            if not future.set_running_or_notify_cancel():
                continue
            if self.unavailable is not None:
                future.set_exception(self.unavailable)
                continue
            try:
                future.set_result(box.run(job, limits, hypothesis=bool(job.get("properties"))))
            except SandboxUnavailable as exc:
                self.unavailable = exc  # say it once; the other jobs fail at once with it
                future.set_exception(exc)
            except BaseException as exc:
                future.set_exception(exc)

    def stop(self) -> None:
        """Queue nothing more ahead and drop what is queued ahead (items' own jobs stay)."""
        self._stopped = True
        kept = []
        while True:
            try:
                task = self._queue.get_nowait()
            except queue.Empty:
                break
            if task[0] == AHEAD and task[4] is not None:
                task[4].cancel()
            else:
                kept.append(task)
        for task in kept:
            self._queue.put(task)

    def close(self) -> None:
        self.stop()
        for _ in self._threads:
            self._queue.put((2, next(self._order), None, None, None))
        for thread in self._threads:
            thread.join()
        for box in self._boxes:
            box.close()
        self._threads, self._boxes = [], []
