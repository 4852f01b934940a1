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

import json
import math
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_prompteval.core.errors import ApiError, PromptevalError, display
from pytest_prompteval.core.paths import (
    MAX_RECORDING_BYTES,
    read_bounded,
    write_atomically,
)
from pytest_prompteval.core.request import Request, canonical_json
from pytest_prompteval.core.response import Response
from pytest_prompteval.providers.base import CallContext, Provider
from pytest_prompteval.providers.budget import Budget
from pytest_prompteval.providers.labels import Label, label_for, why_missing
from pytest_prompteval.providers.trusted import TrustedRecordings, UnverifiedRecording

MODES = ("none", "new", "all")
FORMAT = 1
#: Why an answer cannot be used (a verdict that misses its schema), or None when it can.
Check = Callable[[Response], str | None]


class MissingRecording(PromptevalError):
    kind = "missing_recording"


class InvalidRecording(MissingRecording):
    """A recording that fails its check, in replay-only mode: there is no valid answer."""


class UnreadableRecording(PromptevalError):
    """A recording that is not what this plugin writes: its item errors, the run goes on."""

    kind = "unreadable_recording"


@dataclass(frozen=True)
class Outcome:
    response: Response
    replayed: bool
    recording: Path
    #: why the answer failed its check: then it was not recorded
    rejected: str | None = None
    #: with trusted recordings, for one the trusted ref does not have: "replayed", or how
    #: the answer asked for again compares ("asked again: same answer" / "...: different")
    unverified: str | None = None


@dataclass(frozen=True)
class Recording:
    key: str
    sample: int
    request: dict[str, Any]
    response: Response
    #: None for a recording made before labels
    label: Label | None


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
        self._kept: dict[str, Outcome] = {}  # see ``get(keep=True)``
        self._labels: list[tuple[Label, int]] | None = None  # read on the first miss
        #: recordings read as a trusted ref has them; ``strict``: one the ref does not have
        #: fails its item instead of being replayed (gates mode without a key)
        self.trusted: TrustedRecordings | None = None
        self.strict = False

    def path_for(self, key: str) -> Path:
        return self.root / f"{key}.json"

    def start_pool(self, concurrency: int) -> None:
        """Let ``prefetch`` send up to ``concurrency`` calls at once, ahead of the items."""
        if concurrency > 1 and self.mode != "none" and self._pool is None:
            self._pool = ThreadPoolExecutor(concurrency, thread_name_prefix="prompteval-call")

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
                self._inflight[key] = self._pool.submit(self._fetch, request, context)
            return True

    def submit(self, task: Callable[[], None]) -> Future[None] | None:
        """Run ``task`` (a conversation walked ahead of its item) on the pool, if there is
        one: it holds a worker for the whole walk, so the calls in flight stay within the
        concurrency."""
        if self._pool is None:
            return None
        try:
            return self._pool.submit(task)
        except RuntimeError:  # the pool shut down meanwhile (a stop)
            return None

    def keep(self, request: Request, sample: int, outcome: Outcome) -> None:
        """The next plain ``get`` of this sample takes ``outcome`` as it is."""
        with self._lock:
            self._kept[request.key(sample)] = outcome

    def stop(self) -> None:
        """Start no more calls (``-x``, a stop, the end): drop what has not started."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def get(
        self,
        request: Request,
        context: CallContext,
        check: Check | None = None,
        answers: Request | None = None,
        keep: bool = False,
    ) -> Outcome:
        """The sample's response: from a call already in flight for it (started ahead, or
        by another thread asking for the same sample), else fetched here. ``check``: an
        answer it rejects is not recorded (the outcome says why), a recording it rejects is
        asked for again. ``answers``: the request this call answers when it is not the one
        sent (a retry told what was wrong): the valid answer is recorded under its key.
        ``keep``: the next plain ``get`` of this sample takes the outcome as it is (a code
        sample run ahead reads the answer its item reads again)."""
        key = (answers or request).key(context.sample)
        if check is None and answers is None:
            with self._lock:
                kept = self._kept.pop(key, None)
            if kept is not None:
                return kept
        outcome = self._get(key, request, context, check, answers)
        if keep:
            self.keep(answers or request, context.sample, outcome)
        return outcome

    def _get(
        self,
        key: str,
        request: Request,
        context: CallContext,
        check: Check | None,
        answers: Request | None,
    ) -> Outcome:
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
            outcome = self._fetch(request, context, check, answers)
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
    ) -> Outcome:
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
                return Outcome(
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
            return Outcome(response, False, path, invalid, compared)
        return Outcome(response, replayed=False, recording=path, rejected=invalid)

    def _unverified(
        self, path: Path, key: str, asked: Request, context: CallContext
    ) -> Response | None:
        """A recording in the checkout that the trusted ref does not have: its answer, to be
        replayed as unverified or compared with the one asked for again."""
        if self.trusted is None or self.trusted.at_ref(path) or not path.exists():
            return None
        if self.mode == "none" and self.strict:
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
        return (
            f"{where} ({display(path)}). Replay-only mode: set ANTHROPIC_API_KEY (or name a "
            "provider) and run with --prompteval-record=new to record it"
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
        record: dict[str, Any] = {
            "format": FORMAT,
            "key": key,
            "sample": context.sample,
            "origin": self.provider.label,
            "request": request.to_api(),
            "response": response.to_json(),
            "label": label_for(request, context).to_json(),
        }
        if self.note:
            record["note"] = self.note
        text = json.dumps(record, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(path, text + "\n")


def load(path: Path, key: str | None = None, asked: Request | None = None) -> Recording:
    """The recording at ``path``, checked as ``Store.read`` does; ``asked``: the request
    looked up by ``key``, which a recording equal to it needs not be rebuilt from."""
    try:
        # a recording is its folder's own file: a link out of the folder is not replayed
        content = read_bounded(path, MAX_RECORDING_BYTES, path.parent)
    except PromptevalError as exc:
        raise UnreadableRecording(
            f"unreadable recording: {exc.message}; delete it to record again", path
        ) from None
    return parse(content, path, key, asked)


def parse(
    content: bytes, path: Path, key: str | None = None, asked: Request | None = None
) -> Recording:
    """A recording's bytes (named ``path`` in errors), checked as ``load`` does."""
    try:
        data = json.loads(content, parse_constant=_no_constant)
        return _checked(data, key, asked)
    except RecursionError:
        why = "JSON nested too deeply"
    except (PromptevalError, ValueError) as exc:
        why = exc.message if isinstance(exc, PromptevalError) else str(exc)
    raise UnreadableRecording(f"unreadable recording: {why}; delete it to record again", path)


def read_all(root: Path) -> list[tuple[Path, Recording | UnreadableRecording]]:
    """Every recording in ``root`` by file name, or why it cannot be read."""
    found: list[tuple[Path, Recording | UnreadableRecording]] = []
    for path in sorted(root.glob("*.json")) if root.is_dir() else ():
        if path.name.startswith("."):
            continue  # a write in progress
        try:
            found.append((path, load(path, path.stem)))
        except UnreadableRecording as exc:
            found.append((path, exc))
    return found


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _milliseconds(value: Any) -> bool:
    number = isinstance(value, int | float) and not isinstance(value, bool)
    return number and math.isfinite(value) and value >= 0


def _text(value: Any) -> bool:
    return isinstance(value, str)


def _optional_text(value: Any) -> bool:
    return value is None or isinstance(value, str)


# What a recording's response may hold, field by field (``text`` and ``model`` required).
_FIELDS: dict[str, Callable[[Any], bool]] = {
    "text": _text,
    "model": _text,
    "stop_reason": _optional_text,
    "input_tokens": _count,
    "output_tokens": _count,
    "cache_read_tokens": _count,
    "cache_write_tokens": _count,
    "latency_ms": _milliseconds,
    "request_id": _optional_text,
    "message_id": _optional_text,
    "tool_input": lambda value: value is None or isinstance(value, dict),
    "batch": lambda value: isinstance(value, bool),
    "content": lambda value: isinstance(value, list),  # its blocks are checked as it is read
    "tools_ran": lambda value: isinstance(value, list),
}


def _checked(data: Any, key: str | None, asked: Request | None = None) -> Recording:
    if not isinstance(data, dict):
        raise ValueError("expected a JSON object")
    response, sample, request = data.get("response"), data.get("sample"), data.get("request")
    if not isinstance(response, dict):
        raise ValueError("'response': expected an object")
    if isinstance(sample, bool) or not isinstance(sample, int) or sample < 0:
        raise ValueError("'sample': expected a whole number >= 0")
    if not isinstance(request, dict):
        raise ValueError("'request': expected an object")
    if key is not None:
        if data.get("key") != key:
            raise ValueError("its 'key' is not its file name")
        # a recording of the very request asked, in the very form the key hashes, needs no
        # rebuilding to be known as its own
        if asked is None or asked.key(sample) != key or canonical_json(request) != asked.api_json:
            _made_for(request, sample, key)
    for name, valid in _FIELDS.items():
        if name not in response:
            if name in ("text", "model"):
                raise ValueError(f"'response.{name}': missing")
        elif not valid(response[name]):
            value = response[name]
            raise ValueError(f"'response.{name}': unexpected {type(value).__name__} {value!r:.40}")
    label = Label.from_json(data["label"]) if "label" in data else None
    try:
        answer = Response.from_json(response)
    except PromptevalError as exc:
        raise ValueError(f"'response': {exc.message}") from None
    return Recording(str(data.get("key")), sample, request, answer, label)


def _made_for(request: dict[str, Any], sample: int, key: str) -> None:
    try:
        made_for = Request.from_api(request).key(sample)
    except (PromptevalError, LookupError, TypeError, AttributeError):
        raise ValueError("'request' is not a Messages API request") from None
    if made_for != key:
        raise ValueError("its 'request' does not hash to its key")
