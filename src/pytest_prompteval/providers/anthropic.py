"""Claude through the official ``anthropic`` SDK (imported only when a call is really made).

Retries are ours, not the SDK's (its client runs with ``max_retries=0``), so that only public
SDK names are used and each failure is handled for what it says:

- 429 and 529 (rate limited, overloaded) tell the rate gate, which shrinks the calls in
  flight and pauses new ones for the ``retry-after`` asked; the call is then retried;
- 408, 409, other 5xx, a reset or timed-out connection and a malformed 2xx body are retried
  after a short backoff (or the ``retry-after`` sent) without slowing the rest of the run;
- errors that no retry can fix (a spend limit, a bad key) are not retried and stop the run.

A call that still fails raises ApiError with the error's class, HTTP status and request id,
except a model's refusal of the prompt's assistant prefill, which is the prompt's failure.

A model the installed SDK lists as deprecated (``sdk_internals.deprecated_models``) is
reported once, when the prompt versions load (``deprecation_notices``), and travels in
``extra_body`` so that the SDK does not warn inside ``messages.create``: that runs in the
threads sending calls ahead, where pytest's ``filterwarnings = error`` (or ``-W
error::DeprecationWarning``) would turn the warning into every item's failure, and warning
filters are process-wide, so no thread can safely change them.
"""

from __future__ import annotations

import gc
import inspect
import os
import random
import re
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pytest_prompteval.core.content import blocks_from_api, text_of
from pytest_prompteval.core.errors import ApiError, PromptevalError, StopRun, display
from pytest_prompteval.core.prompts import PromptVersion
from pytest_prompteval.core.request import Request
from pytest_prompteval.core.response import Response, only_text
from pytest_prompteval.providers.base import CallContext
from pytest_prompteval.providers.ratelimit import LIMITED, RateGate, retry_after_header
from pytest_prompteval.providers.sdk_internals import deprecated_models

_HOPELESS = re.compile(r"spend(ing)? limit|usage limits?|credit balance|billing", re.IGNORECASE)
# "This model does not support assistant message prefill. The conversation must end with a
# user message." (400 invalid_request_error; the SDK's docs link "Prefill not supported")
_PREFILL_REFUSED = re.compile(r"prefill", re.IGNORECASE)


class PrefillRefused(PromptevalError):
    """The model does not accept the prompt's assistant prefill: the prompt's failure, not
    the API's, so the item fails (and is scored 0) rather than erroring."""

    kind = "prefill_refused"


def deprecation_notices(
    versions: Iterable[PromptVersion],
    already: set[str],
    deprecated: Mapping[str, str],
    chosen: Mapping[str, str] | None = None,
) -> list[str]:
    """One line per deprecated model the prompt versions name, or an option chooses
    (``chosen``: model -> the option), that ``already`` does not hold (which then holds it),
    naming the prompt files or the option that choose it."""
    files: dict[str, list[str]] = {}
    for version in versions:
        model = version.model
        if model is not None and model in deprecated and model not in already:
            files.setdefault(model, []).append(
                display(version.path, version.line_of("model_config"))
            )
    for model, option in (chosen or {}).items():
        if model in deprecated and model not in already:
            files.setdefault(model, []).append(option)
    already.update(files)
    return [
        f"prompteval: warning: {', '.join(where)}: model {model!r} is deprecated in the "
        f"installed anthropic SDK (end of life {deprecated[model]}); choose a newer model"
        for model, where in files.items()
    ]


def warn_deprecated(
    versions: Iterable[PromptVersion], already: set[str], chosen: Mapping[str, str] | None = None
) -> None:
    """Print ``deprecation_notices`` on stderr: never a Python warning, which pytest's
    ``error`` filters would make a failure. xdist workers leave it to the controller."""
    versions = list(versions)
    if os.environ.get("PYTEST_XDIST_WORKER") or not (chosen or any(v.model for v in versions)):
        return
    for line in deprecation_notices(versions, already, deprecated_models(), chosen):
        print(line, file=sys.stderr)


def _freeze_for_exit() -> None:
    """Exempt every object alive at the end of a live run from the collection the
    interpreter makes at exit, which otherwise rescans them all (the SDK's types, the
    items, the results): 1-3 s after a 500-call run, where freezing during the calls
    gained nothing (benchmarks/throughput.py, docs/performance.md). Once per
    process, at the end of the plugin's calls, so a process running pytest several times
    keeps at most one run's objects frozen; no collection first, so it costs nothing."""
    global _frozen
    if not _frozen:
        _frozen = True
        gc.freeze()


_frozen = False


def _error_message(body: Any, fallback: str) -> str:
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
    return fallback


def is_hopeless(status: int, message: str) -> bool:
    return status == 401 or (status in (400, 402, 403, 429) and bool(_HOPELESS.search(message)))


def refuses_prefill(outcome: Attempt, request: Request, context: CallContext) -> bool:
    """A 400 refusing the assistant turn that ends the request: the prompt's own prefill
    (a judge's request, which has none, is left an API error)."""
    return (
        outcome.status == 400
        and bool(request.prefill)
        and context.purpose == "generation"
        and bool(_PREFILL_REFUSED.search(outcome.text))
    )


def should_retry(status: int, headers: Mapping[str, str]) -> bool:
    """The API's own ``x-should-retry`` when sent, else 408, 409, 429 and 5xx."""
    flag = headers.get("x-should-retry")
    if flag in ("true", "false"):
        return flag == "true"
    return status in (408, 409, 429) or status >= 500


def backoff(attempt: int, headers: Mapping[str, str], jitter: float) -> float:
    """Seconds before retry number ``attempt`` (from 1): the ``retry-after`` sent, else
    0.2 s doubling up to 8 s, shortened by up to a quarter (``jitter`` in [0, 1)). Short at
    first: a 500, a reset or a malformed body says nothing about load, and items report in
    order, so a long wait for one holds back the report of every item after it."""
    asked = retry_after_header(headers)
    if asked is not None:
        return min(asked, 60.0)
    return min(0.2 * 2.0 ** (attempt - 1), 8.0) * (1 - 0.25 * jitter)


@dataclass
class Attempt:
    """How one try ended, when it did not give a message."""

    error_class: str
    status: int | None
    request_id: str | None
    text: str
    retry: bool
    headers: Mapping[str, str]

    def detail(self) -> str:
        if self.status is None:
            return f"{self.error_class}: {self.text}"
        where = f"status {self.status}, request_id {self.request_id or '-'}"
        return f"{self.error_class}: {where}: {self.text}"


def response_from_message(
    message: Any, latency_ms: float, request_id: str | None, batch: bool = False
) -> Response:
    usage = message.usage
    tool_input = next(
        (dict(b.input) for b in message.content if getattr(b, "type", "") == "tool_use"),
        None,
    )
    blocks = blocks_from_api([b.model_dump(mode="json") for b in message.content])
    return Response(
        text=text_of(blocks),
        model=message.model,
        stop_reason=message.stop_reason,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cache_read_tokens=getattr(usage, "cache_read_input_tokens", None) or 0,
        cache_write_tokens=getattr(usage, "cache_creation_input_tokens", None) or 0,
        latency_ms=round(latency_ms, 1),
        request_id=request_id,
        message_id=message.id,
        tool_input=tool_input,
        batch=batch,
        content=() if only_text(blocks) else blocks,
    )


class AnthropicProvider:
    label = "anthropic"

    def __init__(
        self,
        max_retries: int = 2,
        timeout: float = 600.0,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.max_retries = max_retries
        self.timeout = timeout
        self.sleep = sleep
        self._client: Any = None
        self.gate: RateGate | None = None  # set by the session: shared rate-limit handling
        self._accepted: frozenset[str] | None = None
        # Once a call proves that none can succeed, later ones fail without a request (an
        # xdist worker goes on running its items after the session is told to stop).
        self._stopped: StopRun | None = None
        self._lock = threading.RLock()

    @property
    def live(self) -> bool:
        return bool(os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("ANTHROPIC_AUTH_TOKEN"))

    def warm(self) -> None:
        """Import the SDK and build the client in the background (about 1.3 s of a live
        run's start-up), while pytest collects; the first call waits for it if need be."""
        if self.live:
            threading.Thread(target=self._warm, name="prompteval-warm", daemon=True).start()

    def _warm(self) -> None:
        try:
            self._parameters()
        except Exception:  # the first real call reports whatever this was
            return

    def client(self) -> Any:
        with self._lock:
            if self._client is None:
                import anthropic

                self._client = anthropic.Anthropic(max_retries=0, timeout=self.timeout)
            return self._client

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None
                _freeze_for_exit()

    def _parameters(self) -> frozenset[str]:
        with self._lock:
            if self._accepted is None:
                create = self.client().messages.create
                self._accepted = frozenset(inspect.signature(create).parameters)
            return self._accepted

    def arguments(self, request: Request) -> dict[str, Any]:
        """``messages.create`` keyword arguments; parameters this SDK version does not name
        (``temperature`` is gone from recent ones) travel in ``extra_body`` unchanged."""
        accepted = self._parameters()
        api = request.to_api()
        kwargs = {k: v for k, v in api.items() if k in accepted}
        extra = {k: v for k, v in api.items() if k not in accepted}
        if request.model in deprecated_models():
            # sent as it is, but where the SDK does not look: reported once at load instead
            import anthropic

            kwargs["model"] = anthropic.omit
            extra["model"] = request.model
        if extra:
            kwargs["extra_body"] = extra
        return kwargs

    def complete(self, request: Request, context: CallContext) -> Response:
        if self._stopped is not None:
            raise StopRun(f"not sent, an earlier call failed: {self._stopped.message}")
        if not self.live:
            raise StopRun(
                "ANTHROPIC_API_KEY is not set, so nothing can be recorded; set it, or replay "
                "only with --prompteval-record=none"
            )
        kwargs = self.arguments(request)
        tries = self.max_retries + 1
        number = 0
        while True:
            number += 1
            outcome = self._attempt(kwargs)
            if isinstance(outcome, Response):
                return outcome
            if is_hopeless(outcome.status or 0, outcome.text):
                self._stopped = StopRun(
                    f"{outcome.detail()} -- no later call can succeed, stopping the run",
                    error_class=outcome.error_class,
                    status=outcome.status,
                    request_id=outcome.request_id,
                )
                raise self._stopped
            if refuses_prefill(outcome, request, context):
                raise PrefillRefused(
                    f"model {request.model!r} does not accept the assistant_prefill of this "
                    f"prompt ({outcome.detail()}); remove assistant_prefill or choose a model "
                    "that accepts one",
                    context.prompt.path,
                    context.prompt.line_of("assistant_prefill"),
                )
            if not outcome.retry or number == tries:
                raise ApiError(
                    f"{outcome.detail()} ({number} attempt{'s' if number > 1 else ''})",
                    error_class=outcome.error_class,
                    status=outcome.status,
                    request_id=outcome.request_id,
                )
            if outcome.status not in LIMITED:  # the gate already pauses after a 429/529
                self.sleep(backoff(number, outcome.headers, random.random()))

    def _attempt(self, kwargs: dict[str, Any]) -> Response | Attempt:
        """One request, holding one of the gate's places while it is in flight."""
        import anthropic

        gate = self.gate
        # items run on the main thread, calls sent ahead on the store's pool
        first = threading.current_thread() is threading.main_thread()
        ticket = gate.acquire(first) if gate is not None else None
        started = time.perf_counter()
        try:
            raw = self.client().messages.with_raw_response.create(**kwargs)
            request_id = raw.headers.get("request-id")
            try:
                message = raw.parse()
            except (anthropic.APIResponseValidationError, ValueError) as exc:
                return Attempt(
                    "MalformedResponseError",
                    raw.status_code,
                    request_id,
                    f"malformed response body: {type(exc).__name__}: {exc}",
                    retry=True,
                    headers=raw.headers,
                )
            latency_ms = (time.perf_counter() - started) * 1000
            response = response_from_message(message, latency_ms, request_id)
            if gate is not None and ticket is not None:
                gate.succeeded(ticket, raw.headers, response.input_tokens, response.output_tokens)
            return response
        except anthropic.APIStatusError as exc:
            headers = exc.response.headers
            if gate is not None and ticket is not None and exc.status_code in LIMITED:
                gate.limited(ticket, headers)
            return Attempt(
                type(exc).__name__,
                exc.status_code,
                exc.request_id,
                _error_message(exc.body, exc.message),
                retry=should_retry(exc.status_code, headers),
                headers=headers,
            )
        except (anthropic.APIResponseValidationError, ValueError) as exc:
            return Attempt(
                "MalformedResponseError",
                None,
                None,
                f"malformed response body: {type(exc).__name__}: {exc}",
                retry=True,
                headers={},
            )
        except anthropic.APIConnectionError as exc:
            cause = f" ({exc.__cause__})" if exc.__cause__ else ""
            return Attempt(type(exc).__name__, None, None, exc.message + cause, True, {})
        finally:
            if gate is not None and ticket is not None:
                gate.release(ticket)
