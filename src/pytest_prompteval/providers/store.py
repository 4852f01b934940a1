"""Record/replay in front of every provider.

Each response is a JSON file named by ``Request.key(sample)``: a hash of the whole request
and the sample index, so every sample is an independent recording and any change to the
request (prompt text, model, parameters) misses the old one. Files are written atomically,
hold no headers or keys, and are byte-identical for identical content, so they are safe to
commit and diff.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_prompteval.core.errors import ApiError, PromptevalError, display
from pytest_prompteval.core.request import Request
from pytest_prompteval.core.response import Response
from pytest_prompteval.providers.base import CallContext, Provider
from pytest_prompteval.providers.budget import Budget

MODES = ("none", "new", "all")
FORMAT = 1


class MissingRecording(PromptevalError):
    kind = "missing_recording"


@dataclass(frozen=True)
class Outcome:
    response: Response
    replayed: bool
    recording: Path


class Store:
    def __init__(self, root: Path, mode: str, provider: Provider, note: str | None = None):
        if mode not in MODES:
            raise PromptevalError(f"record mode {mode!r}: expected one of {', '.join(MODES)}")
        self.root = root
        self.mode = mode
        self.provider = provider
        self.note = note
        self._recorded: set[str] = set()  # re-recorded in this process (mode "all")
        self._lock = threading.Lock()
        self.budget: Budget | None = None
        self._pool: ThreadPoolExecutor | None = None
        #: sample keys a message batch answered with an error: their items fail with it
        self.batch_failures: dict[str, str] = {}
        self._inflight: dict[str, Future[Outcome]] = {}

    def path_for(self, key: str) -> Path:
        return self.root / f"{key}.json"

    def start_pool(self, concurrency: int) -> None:
        """Let ``prefetch`` send up to ``concurrency`` calls at once, ahead of the items."""
        if concurrency > 1 and self.mode != "none" and self._pool is None:
            self._pool = ThreadPoolExecutor(concurrency, thread_name_prefix="prompteval-call")

    def prefetch(self, request: Request, context: CallContext) -> None:
        """Start the call for this sample in the background, if it is one to make."""
        if self._pool is None:
            return
        key = request.key(context.sample)
        path = self.path_for(key)
        with self._lock:
            if key in self._inflight or key in self._recorded:
                return
            if self.mode != "all" and path.exists():
                return  # a replay needs no head start
            self._inflight[key] = self._pool.submit(self._fetch, request, context)

    def stop(self) -> None:
        """Start no more calls (``-x``, a stop, the end): drop what has not started."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def get(self, request: Request, context: CallContext) -> Outcome:
        """The sample's response: from a call already in flight for it (started ahead, or
        by another thread asking for the same sample), else fetched here."""
        key = request.key(context.sample)
        with self._lock:
            future = self._inflight.get(key)
            mine = future is None or future.cancelled()
            if mine:
                future = Future()
                future.set_running_or_notify_cancel()
                self._inflight[key] = future
        assert future is not None
        if not mine:
            try:
                result: Outcome = future.result()  # its error, if any, is this item's error
                return result
            finally:
                self._forget(key, future)
        try:
            outcome = self._fetch(request, context)
        except BaseException as exc:
            future.set_exception(exc)
            raise
        else:
            future.set_result(outcome)
            return outcome
        finally:
            self._forget(key, future)

    def _forget(self, key: str, future: Future[Outcome]) -> None:
        with self._lock:
            if self._inflight.get(key) is future:
                del self._inflight[key]

    def needs_call(self, request: Request, sample: int) -> bool:
        """Whether getting this sample would call the provider (not replay it)."""
        if self.mode == "none":
            return False
        key = request.key(sample)
        if self.mode == "all" and key not in self._recorded:
            return True
        return not self.path_for(key).exists()

    def record(self, request: Request, sample: int, response: Response) -> None:
        """Keep a response obtained elsewhere (a message batch) as this sample's recording."""
        key = request.key(sample)
        self.write(self.path_for(key), key, request, sample, response)
        with self._lock:
            self._recorded.add(key)

    def _fetch(self, request: Request, context: CallContext) -> Outcome:
        key = request.key(context.sample)
        if key in self.batch_failures:
            raise ApiError(self.batch_failures[key])
        path = self.path_for(key)
        fresh = self.mode == "all" and key not in self._recorded
        if not fresh and path.exists():
            return Outcome(self.read(path), replayed=key not in self._recorded, recording=path)
        if self.mode == "none":
            what = "judge verdict" if context.purpose == "judge" else "recording"
            raise MissingRecording(
                f"no {what} for case {context.case.id!r} with prompt "
                f"{context.prompt.version!r}, sample {context.sample} ({display(path)}). "
                "Replay-only mode: set ANTHROPIC_API_KEY (or name a provider) and run with "
                "--prompteval-record=new to record it"
            )
        if self.budget is not None:
            self.budget.check()
        response = self.provider.complete(request, context)
        if self.budget is not None:
            self.budget.charge(response, request.model)
        self.write(path, key, request, context.sample, response)
        with self._lock:
            self._recorded.add(key)
        return Outcome(response, replayed=False, recording=path)

    @staticmethod
    def read(path: Path) -> Response:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return Response.from_json(data["response"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise PromptevalError(
                f"unreadable recording ({type(exc).__name__}: {exc}); delete it to record again",
                path,
            ) from None

    def write(
        self, path: Path, key: str, request: Request, sample: int, response: Response
    ) -> None:
        record: dict[str, Any] = {
            "format": FORMAT,
            "key": key,
            "sample": sample,
            "origin": self.provider.label,
            "request": request.to_api(),
            "response": response.to_json(),
        }
        if self.note:
            record["note"] = self.note
        text = json.dumps(record, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
