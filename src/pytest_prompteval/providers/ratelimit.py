"""Adapting to the API's rate limits, together with every other process of the run.

The provider retries a 429 or 529 (after the ``retry-after`` asked); this gate decides how
many calls a process starts, and when:

- pacing before the limit is hit: the ``anthropic-ratelimit-{requests,tokens,input-tokens,
  output-tokens}-limit`` and ``-remaining`` headers of each answer give what is left; the
  calls started since and the refill (limit per minute) give an estimate now, and a new call
  starts only while the estimate leaves a margin of one call. Until the first answer of a
  process comes back, one call at a time: it tells the limits before a burst can exceed them;
- a 429/529 halves the calls allowed in flight (never below one; once for the calls that
  were in flight together) and pauses new calls for the ``retry-after`` the API asked for;
  successes regain what the cut took one call each, then grow the limit by 1/limit each
  (additive increase), up to ``--prompteval-concurrency``. The pause and the pacing hold
  back a real limit; the cut is brief, so that a few stray refusals do not slow a run;
- when a header says nothing is left, new calls wait for its ``-reset``;
- a pause is written to a small file under a lock that every xdist worker of the run reads,
  so N workers do not each spend the whole limit; each worker paces on its share.
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from pytest_prompteval.core.filelock import lock_exclusive

#: calls in flight at most by default: at 0.2-2 s a call, enough to keep a run short; the
#: pacing keeps it within the API's announced limits.
DEFAULT_CONCURRENCY = 32
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
    """Until when to hold new calls, if a rate-limit header says nothing is left (kinds that
    announce their ``-limit`` are paced by the refill instead)."""
    until = None
    for kind in KINDS:
        if _number(headers.get(f"anthropic-ratelimit-{kind}-limit")):
            continue
        remaining = headers.get(f"anthropic-ratelimit-{kind}-remaining")
        if remaining is not None and remaining.strip() == "0":
            reset = _reset_at(headers.get(f"anthropic-ratelimit-{kind}-reset"), now)
            candidate = reset if reset is not None else now + 1.0
            until = candidate if until is None else max(until, candidate)
    return until


def retry_after_header(headers: Mapping[str, str]) -> float | None:
    """Seconds from ``retry-after-ms`` or ``retry-after``, if either is a number."""
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value:
            try:
                seconds = float(value) * scale
            except ValueError:
                continue
            if math.isfinite(seconds):
                return max(0.0, seconds)
    return None


def retry_after(headers: Mapping[str, str]) -> float:
    asked = retry_after_header(headers)
    return 1.0 if asked is None else asked


def _number(value: str | None) -> float | None:
    try:
        number = float(value) if value is not None else None
    except ValueError:
        return None
    return number if number is not None and math.isfinite(number) and number >= 0 else None


@dataclass(frozen=True)
class Ticket:
    """A started call: its place in the order of starts, and when it started."""

    seq: int
    at: float


@dataclass
class Bucket:
    """One kind of limit as the process sees it: an estimate of what is left at ``at``."""

    per_second: float
    capacity: float
    left: float
    at: float
    cost: float  # what one call spends: 1 request, or its tokens (a running mean)

    def refill(self, now: float) -> None:
        if now > self.at:
            self.left = min(self.capacity, self.left + (now - self.at) * self.per_second)
            self.at = now

    def wait(self, now: float) -> float:
        """Seconds until one more call leaves a call's margin (or, where the bucket holds
        less than two calls, until it is full)."""
        self.refill(now)
        need = min(2 * self.cost, self.capacity) - self.left
        return need / self.per_second if need > 0 else 0.0


@dataclass
class Pacer:
    """Starts calls no faster than the limits the API announces. Pure: times are passed in.

    ``share``: this process's part of the limit (1/N for one of N xdist workers);
    ``safety``: the part of the announced rate used, so that timing noise does not exceed it.
    """

    share: float = 1.0
    safety: float = 0.95
    buckets: dict[str, Bucket] = field(default_factory=dict)
    started: int = 0
    _seen: dict[str, int] = field(default_factory=dict)  # newest ticket each kind came from
    _held: dict[str, float] = field(default_factory=dict)  # the most each kind was seen to hold
    _open: set[int] = field(default_factory=set)  # calls started and not finished

    def wait(self, now: float) -> float:
        return max((b.wait(now) for b in self.buckets.values()), default=0.0)

    def start(self, now: float) -> Ticket:
        for bucket in self.buckets.values():
            bucket.refill(now)
            bucket.left -= bucket.cost
        self.started += 1
        self._open.add(self.started)
        return Ticket(self.started, now)

    def finish(self, ticket: Ticket) -> None:
        self._open.discard(ticket.seq)

    def observe(
        self,
        ticket: Ticket,
        headers: Mapping[str, str],
        now: float,
        costs: Mapping[str, float] | None = None,
    ) -> None:
        """An answer to the call ``ticket`` came back with these headers; ``costs``: what it
        spent of each token kind (None for a refused call)."""
        for kind in KINDS:
            prefix = f"anthropic-ratelimit-{kind}"
            limit = _number(headers.get(f"{prefix}-limit"))
            remaining = _number(headers.get(f"{prefix}-remaining"))
            if not limit or remaining is None or self._seen.get(kind, 0) > ticket.seq:
                continue
            self._seen[kind] = ticket.seq
            old = self.buckets.get(kind)
            cost = 1.0 if kind == "requests" else (old.cost if old else 1.0)
            spent = (costs or {}).get(kind)
            if spent:
                cost = spent if old is None else 0.8 * cost + 0.2 * spent
            per_second = limit / 60 * self.safety * self.share
            # A token bucket may hold less than a minute's limit: what it is seen to hold
            # bounds what a pause can refill.
            self._held[kind] = max(remaining + cost, self._held.get(kind, 0.0))
            capacity = self._held[kind] * self.share
            # Not counted in ``remaining``, at worst: the calls started after this one, and
            # those started before it but not answered yet (they may reach the API late).
            since = self.started - ticket.seq + sum(1 for seq in self._open if seq < ticket.seq)
            left = remaining * self.share - since * cost + (now - ticket.at) * per_second
            self.buckets[kind] = Bucket(per_second, capacity, min(capacity, left), now, cost)


class RateGate:
    def __init__(
        self,
        limit: int,
        shared: Path | None = None,
        clock: Callable[[], float] = time.time,
        share: float | None = None,
    ):
        self.ceiling = max(1, limit)
        self.limit = float(self.ceiling)
        self.in_flight = 0
        if share is None:
            share = 1 / max(1, int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1))
        self.pacer = Pacer(share)
        self.probing = True  # until the first answer: one call at a time
        self._cut_after = 0  # calls started up to this one do not cut the limit again
        self._regain = 0.0  # the limit before the last cut: regained one call per success
        self.shared = shared
        self.clock = clock
        self._paused_until = 0.0
        self._shared_until = 0.0
        self._read_at = float("-inf")
        self._cond = threading.Condition()
        self._reading = threading.Lock()
        self._first_waiting = 0  # calls an item waits on now, waiting for a place
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

    def _admit(self, until: float) -> Ticket | float:
        """Under the lock: a ticket for a call starting now, or the seconds to wait (0 when
        only the calls in flight hold it back: a release wakes it)."""
        now = self.clock()
        wait = max(until - now, self.pacer.wait(now))
        if wait <= 0 and self.in_flight < (1 if self.probing else int(self.limit)):
            self.in_flight += 1
            return self.pacer.start(now)
        return max(wait, 0.0)

    def try_acquire(self) -> Ticket | float:
        until = self.paused_until()
        with self._cond:
            return self._admit(until)

    def acquire(self, first: bool = False) -> Ticket:
        """A place for a call. ``first``: the call an item waits on now, which takes the
        next place before the calls sent ahead for later items (else, while the first
        answer is awaited and one call goes at a time, the item waits a round behind them)."""
        with self._cond:
            self._first_waiting += first
        try:
            while True:
                until = self.paused_until()  # not under the lock: it may read the shared file
                with self._cond:
                    if first or not self._first_waiting:
                        got = self._admit(until)
                        if isinstance(got, Ticket):
                            return got
                    else:
                        got = 0.5  # a release or the first call's admission wakes it
                    self._cond.wait(timeout=min(max(got, 0.005), 0.5))
        finally:
            if first:
                with self._cond:
                    self._first_waiting -= 1
                    self._cond.notify_all()

    def release(self, ticket: Ticket) -> None:
        with self._cond:
            self.in_flight -= 1
            self.pacer.finish(ticket)
            self.probing = False
            self._cond.notify_all()

    def limited(self, ticket: Ticket, headers: Mapping[str, str]) -> None:
        """A 429/529 came back: slow down, pause as asked."""
        now = self.clock()
        with self._cond:
            # Once per window, as TCP does: calls already in flight when the limit was cut
            # say nothing new when they are refused too.
            if ticket.seq > self._cut_after:
                self._regain = self.limit
                self.limit = max(1.0, self.limit / 2)
                self._cut_after = self.pacer.started
            self.pacer.observe(ticket, headers, now)
        self.pause(now + retry_after(headers))

    def succeeded(
        self,
        ticket: Ticket,
        headers: Mapping[str, str],
        input_tokens: int = 0,
        output_tokens: int = 0,
    ) -> None:
        now = self.clock()
        costs = {
            "tokens": float(input_tokens + output_tokens),
            "input-tokens": float(input_tokens),
            "output-tokens": float(output_tokens),
        }
        with self._cond:
            step = 1.0 if self.limit < self._regain else 1 / self.limit
            self.limit = min(float(self.ceiling), self.limit + step)
            self.pacer.observe(ticket, headers, now, costs)
        until = pause_from_headers(headers, now)
        if until is not None:
            self.pause(until)
