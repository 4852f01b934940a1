"""Adapting to the API's rate limits, together with every other process of the run.

The SDK still retries a 429 or 529 itself (obeying ``retry-after``); this gate decides how
many calls a process starts at all:

- additive increase, multiplicative decrease: each 429/529 halves the calls allowed in
  flight (never below one) and pauses new calls for the ``retry-after`` the API asked for;
  each success lets the limit grow back by 1/limit, up to ``--prompteval-concurrency``;
- the ``anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-remaining`` and
  ``-reset`` headers: when one says nothing is left, new calls wait for its reset;
- a pause is written to a small file under a lock that every xdist worker of the run reads,
  so N workers do not each spend the whole limit.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path

from pytest_prompteval.core.filelock import lock_exclusive

LIMITED = (429, 529)
READ_EVERY = 0.1
KINDS = ("requests", "tokens", "input-tokens", "output-tokens")


def _reset_at(value: str | None, now: float) -> float | None:
    """An RFC 3339 reset time as a time.time() value."""
    if not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def pause_from_headers(headers: Mapping[str, str], now: float) -> float | None:
    """Until when to hold new calls, if a rate-limit header says nothing is left."""
    until = None
    for kind in KINDS:
        remaining = headers.get(f"anthropic-ratelimit-{kind}-remaining")
        if remaining is not None and remaining.strip() == "0":
            reset = _reset_at(headers.get(f"anthropic-ratelimit-{kind}-reset"), now)
            candidate = reset if reset is not None else now + 1.0
            until = candidate if until is None else max(until, candidate)
    return until


def retry_after(headers: Mapping[str, str]) -> float:
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value:
            try:
                return max(0.0, float(value) * scale)
            except ValueError:
                continue
    return 1.0


class RateGate:
    def __init__(
        self, limit: int, shared: Path | None = None, clock: Callable[[], float] = time.time
    ):
        self.ceiling = max(1, limit)
        self.limit = float(self.ceiling)
        self.in_flight = 0
        self.shared = shared
        self.clock = clock
        self._paused_until = 0.0
        self._shared_until = 0.0
        self._read_at = float("-inf")
        self._cond = threading.Condition()
        self._reading = threading.Lock()
        if shared is not None:
            shared.touch()

    # -- the pause shared by the run's processes ------------------------------------------

    def _shared_pause(self, until: float | None = None) -> float:
        if self.shared is None:
            return 0.0
        with self.shared.open("r+") as handle:
            lock_exclusive(handle, "rate-limit sharing")
            text = handle.read().strip()
            current = float(json.loads(text)["paused_until"]) if text else 0.0
            if until is not None and until > current:
                handle.seek(0)
                handle.truncate()
                handle.write(json.dumps({"paused_until": until}))
                current = until
            return current

    def paused_until(self) -> float:
        # Other processes' pauses are read at most every READ_EVERY seconds, by one thread
        # while the others go on with the last value: the file is cheap, but not free.
        now = self.clock()
        stale = now - self._read_at >= READ_EVERY or now < self._read_at
        if stale and self._reading.acquire(blocking=False):
            try:
                self._shared_until, self._read_at = self._shared_pause(), now
            finally:
                self._reading.release()
        return max(self._paused_until, self._shared_until)

    def pause(self, until: float) -> None:
        with self._cond:
            self._paused_until = max(self._paused_until, until)
            self._shared_pause(until)
            self._cond.notify_all()

    # -- calls ---------------------------------------------------------------------------

    def acquire(self) -> None:
        while True:
            until = self.paused_until()  # not under the lock: it may read the shared file
            with self._cond:
                wait = until - self.clock()
                if wait <= 0 and self.in_flight < int(self.limit):
                    self.in_flight += 1
                    return
                self._cond.wait(timeout=min(max(wait, 0.01), 0.5))

    def release(self) -> None:
        with self._cond:
            self.in_flight -= 1
            self._cond.notify_all()

    def limited(self, headers: Mapping[str, str]) -> None:
        """A 429/529 came back (the SDK may still retry it): slow down, pause as asked."""
        with self._cond:
            self.limit = max(1.0, self.limit / 2)
        self.pause(self.clock() + retry_after(headers))

    def succeeded(self, headers: Mapping[str, str]) -> None:
        with self._cond:
            self.limit = min(float(self.ceiling), self.limit + 1 / self.limit)
        until = pause_from_headers(headers, self.clock())
        if until is not None:
            self.pause(until)
