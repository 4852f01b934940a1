"""Input tokens of a request through the API's token-counting endpoint (``messages.count_tokens``),
kept like recordings: ``<recordings>/token_counts/<hash>.json``, so a count is asked for once."""

from __future__ import annotations

import hashlib
import inspect
import json
from pathlib import Path
from typing import Any

from pytest_prompteval.core.errors import ApiError, PromptevalError
from pytest_prompteval.core.request import Request, canonical_json
from pytest_prompteval.providers.anthropic import AnthropicProvider
from pytest_prompteval.providers.base import Provider

DIRECTORY = "token_counts"


class TokenCounter:
    def __init__(self, recordings: Path, provider: Provider):
        self.root = recordings / DIRECTORY
        self.provider = provider
        self.calls = 0  # counting requests sent in this process
        self._accepted: frozenset[str] | None = None

    def _arguments(self, request: Request) -> dict[str, Any]:
        """The request's fields that count_tokens takes (not max_tokens, temperature, ...)."""
        if self._accepted is None:
            if not isinstance(self.provider, AnthropicProvider):
                raise PromptevalError(
                    "--prompteval-estimate counts tokens through the Anthropic API: it works "
                    f"with --prompteval-provider=anthropic, not {self.provider.label!r}"
                )
            count = self.provider.client().messages.count_tokens
            self._accepted = frozenset(inspect.signature(count).parameters)
        return {k: v for k, v in request.to_api().items() if k in self._accepted}

    def count(self, request: Request) -> int:
        arguments = self._arguments(request)
        text = canonical_json(arguments)
        path = self.root / f"{hashlib.sha256(text.encode()).hexdigest()}.json"
        try:
            return int(json.loads(path.read_text(encoding="utf-8"))["input_tokens"])
        except (OSError, ValueError, KeyError, TypeError):
            pass
        tokens = self._ask(arguments)
        self.root.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"request": arguments, "input_tokens": tokens}), "utf-8")
        tmp.replace(path)
        return tokens

    def _ask(self, arguments: dict[str, Any]) -> int:
        import anthropic

        assert isinstance(self.provider, AnthropicProvider)
        if not self.provider.live:
            raise ApiError("counting the input tokens of new requests needs ANTHROPIC_API_KEY")
        self.calls += 1
        try:
            result = self.provider.client().messages.count_tokens(**arguments)
        except anthropic.APIStatusError as exc:
            raise ApiError(
                f"token counting failed: {type(exc).__name__}: status {exc.status_code}, "
                f"request_id {exc.request_id or '-'}: {exc.message}"
            ) from None
        except anthropic.APIConnectionError as exc:
            raise ApiError(f"token counting failed: {type(exc).__name__}: {exc.message}") from None
        return int(result.input_tokens)
