"""Claude through the official ``anthropic`` SDK (imported only when a call is really made).

The SDK's own retries and ``retry-after`` handling stay in charge, with one exception: errors
that no retry can fix (a spend limit, a bad key) are not retried and stop the run.
"""

from __future__ import annotations

import gc
import inspect
import os
import re
import threading
import time
from typing import Any

from pytest_prompteval.core.errors import ApiError, StopRun
from pytest_prompteval.core.request import Request
from pytest_prompteval.core.response import Response
from pytest_prompteval.providers.base import CallContext
from pytest_prompteval.providers.ratelimit import LIMITED, RateGate

_HOPELESS = re.compile(r"spend(ing)? limit|usage limits?|credit balance|billing", re.IGNORECASE)


def _freeze_once() -> None:
    """Exempt what is alive now (above all the SDK's types, hundreds of thousands of objects
    that live as long as the process) from garbage collection: left to the collector, every
    full collection rescans them, about 0.8 s over a 500-call run in pauses that stall the
    calls in flight. Collected first, so no garbage is frozen; once per process."""
    global _frozen
    if not _frozen:
        _frozen = True
        gc.collect()
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


def _client_class(gate: RateGate | None) -> type[Any]:
    import anthropic

    class Client(anthropic.Anthropic):  # type: ignore[misc]
        def _should_retry(self, response: Any) -> bool:
            if gate is not None and response.status_code in LIMITED:
                gate.limited(response.headers)  # every 429/529, retried or not
            if response.status_code in (400, 401, 402, 403, 429):
                try:
                    body = response.json()
                except ValueError:
                    body = None
                if is_hopeless(response.status_code, _error_message(body, response.text)):
                    return False
            return bool(super()._should_retry(response))

    return Client


def response_from_message(
    message: Any, latency_ms: float, request_id: str | None, batch: bool = False
) -> Response:
    usage = message.usage
    tool_input = next(
        (dict(b.input) for b in message.content if getattr(b, "type", "") == "tool_use"),
        None,
    )
    return Response(
        text="".join(b.text for b in message.content if getattr(b, "type", "") == "text"),
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
    )


class AnthropicProvider:
    label = "anthropic"

    def __init__(self, max_retries: int = 2, timeout: float = 600.0):
        self.max_retries = max_retries
        self.timeout = timeout
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

    def client(self) -> Any:
        with self._lock:
            if self._client is None:
                self._client = _client_class(self.gate)(
                    max_retries=self.max_retries, timeout=self.timeout
                )
                _freeze_once()
            return self._client

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    def arguments(self, request: Request) -> dict[str, Any]:
        """``messages.create`` keyword arguments; parameters this SDK version does not name
        (``temperature`` is gone from recent ones) travel in ``extra_body`` unchanged."""
        with self._lock:
            if self._accepted is None:
                create = self.client().messages.create
                self._accepted = frozenset(inspect.signature(create).parameters)
        api = request.to_api()
        kwargs = {k: v for k, v in api.items() if k in self._accepted}
        extra = {k: v for k, v in api.items() if k not in self._accepted}
        if extra:
            kwargs["extra_body"] = extra
        return kwargs

    def complete(self, request: Request, context: CallContext) -> Response:
        import anthropic

        if self._stopped is not None:
            raise StopRun(f"not sent, an earlier call failed: {self._stopped.message}")
        if not self.live:
            raise StopRun(
                "ANTHROPIC_API_KEY is not set, so nothing can be recorded; set it, or replay "
                "only with --prompteval-record=none"
            )
        kwargs = self.arguments(request)
        if self.gate is not None:
            self.gate.acquire()
        started = time.perf_counter()
        try:
            raw = self.client().messages.with_raw_response.create(**kwargs)
            message = raw.parse()
            if self.gate is not None:
                self.gate.succeeded(raw.headers)
        except anthropic.APIStatusError as exc:
            text = _error_message(exc.body, exc.message)
            detail = (
                f"{type(exc).__name__}: status {exc.status_code}, "
                f"request_id {exc.request_id or '-'}: {text}"
            )
            if is_hopeless(exc.status_code, text):
                self._stopped = StopRun(f"{detail} -- no later call can succeed, stopping the run")
                raise self._stopped from None
            raise ApiError(detail) from None
        except (anthropic.APIResponseValidationError, ValueError) as exc:
            raise ApiError(f"malformed response body: {type(exc).__name__}: {exc}") from None
        except anthropic.APIConnectionError as exc:
            cause = f" ({exc.__cause__})" if exc.__cause__ else ""
            raise ApiError(
                f"{type(exc).__name__}: {exc.message}{cause} after {self.max_retries} retries"
            ) from None
        finally:
            if self.gate is not None:
                self.gate.release()
        latency_ms = (time.perf_counter() - started) * 1000
        return response_from_message(message, latency_ms, getattr(message, "_request_id", None))
