"""Record/replay in front of every provider.

Each response is a JSON file named by ``Request.key(sample)``: a hash of the whole request
and the sample index, so every sample is an independent recording and any change to the
request (prompt text, model, parameters) misses the old one. Each also holds a label (case,
prompt version and file digest, model, time) saying what it was made for. Files are written
atomically and hold no headers or keys, so they are safe to commit and diff.

Only valid answers are kept: a call made with a ``check`` (a judge verdict's schema) whose
answer fails it is not written, and a recording that fails it is asked for again (or, in
replay-only mode, is an error saying so).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_prompteval.core.errors import ApiError, PromptevalError, display
from pytest_prompteval.core.paths import (
    write_atomically,
)
from pytest_prompteval.core.request import Request
from pytest_prompteval.core.response import Response
from pytest_prompteval.providers.base import CallContext, Provider
from pytest_prompteval.providers.budget import Budget
from pytest_prompteval.providers.labels import Label, label_for, why_missing
from pytest_prompteval.providers.recording_file import (
    Recording,
    UnreadableRecording,
    load,
    parse,
    read_all,
    recording_text,
)

if TYPE_CHECKING:  # only with --prompteval-trusted-recordings
    from pytest_prompteval.providers.trusted import TrustedRecordings

MODES = ("none", "new", "all")
#: Conversations walked ahead at once, per call the concurrency allows: more walks than
#: calls keep every place busy while a walk runs its tools or waits for its turn, and the
#: last conversations do not run alone at the end, a step at a time, with places idle.
WALKS_PER_CALL = 4
#: Why an answer cannot be used (a verdict that misses its schema), or None when it can.
Check = Callable[[Response], str | None]


class MissingRecording(PromptevalError):
    kind = "missing_recording"


class InvalidRecording(MissingRecording):
    """A recording that fails its check, in replay-only mode: there is no valid answer."""


@dataclass(frozen=True)
class Fetched:
    """A response as the store got it: replayed or called, and from which recording (named
    apart from an item's outcome, which is passed, failed or errored)."""

    response: Response
    replayed: bool
    recording: Path
    #: why the answer failed its check: then it was not recorded
    rejected: str | None = None
    #: with trusted recordings, for one the trusted ref does not have: "replayed", or how
    #: the answer asked for again compares ("asked again: same answer" / "...: different")
    unverified: str | None = None


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
        self._walkers: ThreadPoolExecutor | None = None
        #: sample keys a message batch answered with an error: their items fail with it
        self.batch_failures: dict[str, str] = {}
        self._inflight: dict[str, Future[Fetched]] = {}
        self._kept: dict[str, Fetched] = {}  # see ``get(keep=True)``
        self._labels: list[tuple[Label, int]] | None = None  # read on the first miss
        #: recordings read as a trusted ref has them; ``strict``: one the ref does not have
        #: fails its item instead of being replayed (gates mode without a key)
        self.trusted: TrustedRecordings | None = None
        self.strict = False

    def path_for(self, key: str) -> Path:
        return self.root / f"{key}.json"

    def start_pool(self, concurrency: int) -> None:
        """Let ``prefetch`` send up to ``concurrency`` calls at once, ahead of the items, and
        ``submit`` walk up to ``WALKS_PER_CALL`` times as many conversations."""
        if concurrency > 1 and self.mode != "none" and self._pool is None:
            self._pool = ThreadPoolExecutor(concurrency, thread_name_prefix="prompteval-call")
            self._walkers = ThreadPoolExecutor(
                WALKS_PER_CALL * concurrency, thread_name_prefix="prompteval-walk"
            )

    def prefetch(self, request: Request, context: CallContext) -> bool:
        """Start the call for this sample in the background, if it is one to make; whether
        getting the sample waits on a call (one in flight, or to make)."""
        if self.mode == "none":
            return False
        key = request.key(context.sample)
        with self._lock:
            if key in self._inflight:
                return True
            if key in self._recorded or (self.mode != "all" and self._replays(self.path_for(key))):
                return False  # a replay needs no head start
            if self._pool is not None:
                try:
                    self._inflight[key] = self._pool.submit(self._fetch, request, context)
                except RuntimeError:  # the pool shut down meanwhile (a stop)
                    return False
            return True

    def submit(self, task: Callable[[], None]) -> Future[None] | None:
        """Run ``task`` (a conversation walked ahead of its item) on a walker, if there are
        any. A walk holds no call's place: each of its steps is a call of the pool
        (``prefetch``), queued behind the calls already asked for, so conversations advance
        a step each in turn and none waits for a whole conversation to free a place."""
        if self._walkers is None:
            return None
        try:
            return self._walkers.submit(task)
        except RuntimeError:  # the walkers shut down meanwhile (a stop)
            return None

    def keep(self, request: Request, sample: int, fetched: Fetched) -> None:
        """The next plain ``get`` of this sample takes ``fetched`` as it is."""
        with self._lock:
            self._kept[request.key(sample)] = fetched

    def stop(self) -> None:
        """Start no more calls (``-x``, a stop, the end): drop what has not started."""
        walkers = self._walkers
        if walkers is not None:
            walkers.shutdown(wait=False, cancel_futures=True)
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        if walkers is not None:  # a walk waiting on a cancelled call ends with it
            walkers.shutdown(wait=True)
            self._walkers = None

    def get(
        self,
        request: Request,
        context: CallContext,
        check: Check | None = None,
        answers: Request | None = None,
        keep: bool = False,
    ) -> Fetched:
        """The sample's response: from a call already in flight for it (started ahead, or
        by another thread asking for the same sample), else fetched here. ``check``: an
        answer it rejects is not recorded (``rejected`` says why), a recording it rejects is
        asked for again. ``answers``: the request this call answers when it is not the one
        sent (a retry told what was wrong): the valid answer is recorded under its key.
        ``keep``: the next plain ``get`` of this sample takes what this one fetched as it is
        (a code sample run ahead reads the answer its item reads again)."""
        key = (answers or request).key(context.sample)
        if check is None and answers is None:
            with self._lock:
                kept = self._kept.pop(key, None)
            if kept is not None:
                return kept
        fetched = self._get(key, request, context, check, answers)
        if keep:
            self.keep(answers or request, context.sample, fetched)
        return fetched

    def _get(
        self,
        key: str,
        request: Request,
        context: CallContext,
        check: Check | None,
        answers: Request | None,
    ) -> Fetched:
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
                result: Fetched = future.result()  # its error, if any, is this item's error
                return result
            finally:
                self._forget(key, future)
        try:
            fetched = self._fetch(request, context, check, answers)
        except BaseException as exc:
            future.set_exception(exc)
            raise
        else:
            future.set_result(fetched)
            return fetched
        finally:
            self._forget(key, future)

    def _forget(self, key: str, future: Future[Fetched]) -> None:
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
        return not self._replays(self.path_for(key))

    def _replays(self, path: Path) -> bool:
        """Whether a recording answers without a call: with trusted recordings, one the ref
        has, or (replay-only) one it does not have, replayed as unverified."""
        if self.trusted is None:
            return path.exists()
        return self.trusted.at_ref(path) or (self.mode == "none" and path.exists())

    def record(self, request: Request, context: CallContext, response: Response) -> None:
        """Keep a response obtained elsewhere (a message batch) as this sample's recording."""
        key = request.key(context.sample)
        self.write(self.path_for(key), key, request, context, response)
        with self._lock:
            self._recorded.add(key)

    def _fetch(
        self,
        request: Request,
        context: CallContext,
        check: Check | None = None,
        answers: Request | None = None,
    ) -> Fetched:
        asked = answers or request
        key = asked.key(context.sample)
        if key in self.batch_failures:
            raise ApiError(self.batch_failures[key])
        path = self.path_for(key)
        fresh = self.mode == "all" and key not in self._recorded
        what = "judge verdict" if context.purpose == "judge" else "recording"
        unverified = None if fresh else self._unverified(path, key, asked, context)
        if not fresh and self._replays(path):
            response = self._replay(path, key, asked)
            invalid = check(response) if check is not None else None
            if invalid is None:
                replayed = key not in self._recorded
                return Fetched(
                    response, replayed, path, unverified=None if unverified is None else "replayed"
                )
            if self.mode == "none":
                raise InvalidRecording(
                    f"the {what} for case {context.case.id!r} with prompt "
                    f"{context.prompt.version!r} is not a valid answer ({invalid}); run with "
                    "--prompteval-record=new to ask again",
                    path,
                )
            # mode "new": asked for again, as if it were missing
        if self.mode == "none":
            raise MissingRecording(self._missing(what, asked, context, path))
        if self.budget is not None:
            self.budget.check()
        response = self.provider.complete(request, context)
        if self.budget is not None:
            self.budget.charge(response, request.model)
        invalid = check(response) if check is not None else None
        if invalid is None:
            self.write(path, key, asked, context, response)
            with self._lock:
                self._recorded.add(key)
        if unverified is not None:
            same = unverified.text == response.text
            compared = f"asked again: {'same' if same else 'different'} answer"
            return Fetched(response, False, path, invalid, compared)
        return Fetched(response, replayed=False, recording=path, rejected=invalid)

    def _unverified(
        self, path: Path, key: str, asked: Request, context: CallContext
    ) -> Response | None:
        """A recording in the checkout that the trusted ref does not have: its answer, to be
        replayed as unverified or compared with the one asked for again."""
        if self.trusted is None or self.trusted.at_ref(path) or not path.exists():
            return None
        if self.mode == "none" and self.strict:
            from pytest_prompteval.providers.trusted import UnverifiedRecording  # loaded: trusted

            raise UnverifiedRecording(
                f"recording for case {context.case.id!r} with prompt {context.prompt.version!r} "
                f"is not at {self.trusted.ref} (added or renamed by this change): not replayed "
                "in gates mode; with ANTHROPIC_API_KEY it is asked for again and compared",
                path,
            )
        try:
            return self.read(path, key, asked)
        except UnreadableRecording:
            if self.mode == "none":
                raise
            return None  # asked for again all the same

    def _replay(self, path: Path, key: str, asked: Request) -> Response:
        if self.trusted is not None and self.trusted.at_ref(path):
            return parse(self.trusted.content(path), path, key, asked).response
        return self.read(path, key, asked)

    def _missing(self, what: str, request: Request, context: CallContext, path: Path) -> str:
        where = (
            f"no {what} for case {context.case.id!r} with prompt {context.prompt.version!r}, "
            f"sample {context.sample}"
        )
        why = why_missing(self._known_labels(), request, context)
        if why:
            return f"{where}: {why}; run with --prompteval-record=new"
        unavailable = self.provider.unavailable
        if unavailable is None:
            return f"{where} ({display(path)}). Replay-only mode: run with --prompteval-record=new"
        return (
            f"{where} ({display(path)}). Replay-only mode, as {self.provider.name} cannot "
            f"answer: {unavailable}; then run with --prompteval-record=new to record it"
        )

    def _known_labels(self) -> list[tuple[Label, int]]:
        """The labels of the recordings there are, read once (only replay-only mode, which
        writes nothing, asks)."""
        with self._lock:
            if self._labels is None:
                self._labels = [
                    (r.label, r.sample)
                    for _, r in read_all(self.root)
                    if isinstance(r, Recording) and r.label is not None
                ]
            return self._labels

    @staticmethod
    def read(path: Path, key: str | None = None, asked: Request | None = None) -> Response:
        """The response recorded at ``path``, checked: a regular file of bounded size, plain
        JSON of the right types, and (given ``key``) made for this very request."""
        return load(path, key, asked).response

    def write(
        self,
        path: Path,
        key: str,
        request: Request,
        context: CallContext,
        response: Response,
    ) -> None:
        text = recording_text(
            key,
            context.sample,
            self.provider.label,
            request,
            response,
            label_for(request, context),
            self.note,
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(path, text)
