"""``--prompteval-provider=python:pkg.module:function``: a project's own code path as provider.

The function is called as ``function(request, case=..., prompt=..., sample=...)`` and returns
the response text, a Response, or a mapping with Response's fields (``text`` at least).
"""

from __future__ import annotations

import dataclasses
import importlib
import time
from collections.abc import Callable, Mapping
from typing import Any

from pytest_prompteval.core.errors import PromptevalError, UserCodeError, user_code_error
from pytest_prompteval.core.request import Request
from pytest_prompteval.core.response import Response
from pytest_prompteval.core.schema import suggestion
from pytest_prompteval.providers.base import CallContext

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

    def __init__(self, spec: str):
        self.label = spec
        self.function = load_function(spec)

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
            "text, a pytest_prompteval.Response or a mapping with 'text'"
        )
