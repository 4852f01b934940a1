"""``--prompteval-provider=python:pkg.module:function``: a project's own code path as provider.

The function is called as ``function(request, case=..., prompt=..., sample=...)`` and returns
the response text, a Response, or a mapping with Response's fields (``text`` at least); or,
for an app's own agent, the whole conversation it held: a list of Anthropic-format messages
(``{role, content}``) or of the SDK's ``Message`` objects (the assistant's turns), mixed as
they come. The answer is then the last assistant message's text, and the item's trajectory
is read from the conversation.
"""

from __future__ import annotations

import dataclasses
import importlib
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pytest_prompteval.core.errors import PromptevalError, UserCodeError, user_code_error
from pytest_prompteval.core.request import Request
from pytest_prompteval.core.response import Response, transcript_from_api
from pytest_prompteval.core.schema import suggestion
from pytest_prompteval.providers.base import CallContext, Capabilities

PREFIX = "python:"
RESPONSE_FIELDS = frozenset(f.name for f in dataclasses.fields(Response))


def load_function(spec: str) -> Callable[..., Any]:
    target = spec.removeprefix(PREFIX)
    module_name, _, attr = target.partition(":")
    if not module_name or not attr:
        raise PromptevalError(f"provider {spec!r}: expected python:package.module:function")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise PromptevalError(f"provider {spec!r}: cannot import {module_name}: {exc}") from None
    except Exception as exc:  # a SyntaxError, or the module's own code failing
        raise user_code_error(f"provider {spec!r}: importing {module_name}", exc) from None
    function = getattr(module, attr, None)
    if not callable(function):
        raise PromptevalError(f"provider {spec!r}: {module_name} has no callable {attr!r}")
    return function  # type: ignore[no-any-return]


class CallableProvider:
    live = True
    unavailable = None
    capabilities = Capabilities()

    def __init__(self, spec: str):
        self.label = spec
        self.name = f"the provider {spec}"
        self.function = load_function(spec)

    def warm(self) -> None:
        pass

    def close(self) -> None:
        pass

    def complete(self, request: Request, context: CallContext) -> Response:
        started = time.perf_counter()
        try:
            result = self.function(
                request, case=context.case, prompt=context.prompt, sample=context.sample
            )
        except Exception as exc:
            raise user_code_error(
                f"provider {self.label!r}, called for case {context.case.id!r}", exc
            ) from None
        latency_ms = round((time.perf_counter() - started) * 1000, 1)
        if isinstance(result, Response):
            return result
        if isinstance(result, (list, tuple)):
            return self._transcript(result, request, latency_ms)
        if isinstance(result, str):
            return Response(text=result, model=request.model, latency_ms=latency_ms)
        if isinstance(result, Mapping) and isinstance(result.get("text"), str):
            unknown = sorted(str(k) for k in result if k not in RESPONSE_FIELDS)
            if unknown:  # a misspelt field would be dropped, and a check with it
                raise UserCodeError(
                    f"provider {self.label!r} returned an unknown field {unknown[0]!r}"
                    f"{suggestion(unknown[0], RESPONSE_FIELDS)} (known: "
                    f"{', '.join(sorted(RESPONSE_FIELDS))})"
                )
            data = {"model": request.model, "latency_ms": latency_ms, **result}
            return Response.from_json(data)
        raise PromptevalError(
            f"provider {self.label!r} returned {type(result).__name__}; expected the response "
            "text, a pytest_prompteval.Response, a mapping with 'text', or a transcript (a list "
            "of messages)"
        )

    def _transcript(self, entries: Sequence[Any], request: Request, latency_ms: float) -> Response:
        messages: list[dict[str, Any]] = []
        tokens = [0, 0]
        stop_reason = None
        for index, entry in enumerate(entries):
            if not isinstance(entry, Mapping) and hasattr(entry, "model_dump"):
                entry = entry.model_dump(mode="json")  # the SDK's Message: its usage counts
                usage = entry.get("usage") or {}
                tokens[0] += int(usage.get("input_tokens") or 0)
                tokens[1] += int(usage.get("output_tokens") or 0)
                stop_reason = entry.get("stop_reason")
            if not isinstance(entry, Mapping):
                raise UserCodeError(
                    f"provider {self.label!r} returned a transcript whose message {index} is "
                    f"{type(entry).__name__}; expected {{role, content}} or an anthropic Message"
                )
            messages.append({"role": entry.get("role"), "content": entry.get("content")})
        try:
            transcript = transcript_from_api(messages)
        except PromptevalError as exc:
            raise UserCodeError(f"provider {self.label!r} returned {exc.message}") from None
        said = [m for m in transcript if m.role == "assistant"]
        if not said:
            raise UserCodeError(
                f"provider {self.label!r} returned a transcript with no assistant message"
            )
        return Response(
            text=said[-1].text,
            model=request.model,
            stop_reason=stop_reason or "end_turn",
            input_tokens=tokens[0],
            output_tokens=tokens[1],
            latency_ms=latency_ms,
            transcript=transcript,
        )
