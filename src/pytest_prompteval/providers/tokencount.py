"""Input tokens of a request through the API's token-counting endpoint (``messages.count_tokens``),
kept like recordings: ``<recordings>/token_counts/<hash>.json``, so a count is asked for once."""

from __future__ import annotations

import hashlib
import inspect
import json
from pathlib import Path
from typing import Any

from pytest_prompteval.core.errors import ApiError, PromptevalError
from pytest_prompteval.core.paths import make_dir, read_bounded, write_atomically
from pytest_prompteval.core.request import Request, canonical_json
from pytest_prompteval.providers.anthropic import AnthropicProvider
from pytest_prompteval.providers.base import Provider

DIRECTORY = "token_counts"
#: A count is a request and a number: a request of a few megabytes at most.
MAX_COUNT_BYTES = 16 * 1024 * 1024


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
            # the folder's own file, bounded: not a link to /dev/zero or out of the folder
            raw = read_bounded(path, MAX_COUNT_BYTES, self.root.parent)
            tokens = json.loads(raw)["input_tokens"]
            if type(tokens) is int and tokens >= 0:
                return tokens
        except (PromptevalError, ValueError, KeyError, TypeError, RecursionError):
            pass  # not a count this plugin wrote: asked for again
        tokens = self._ask(arguments)
        # the folder a pull request may have planted as a link out of the recordings
        make_dir(self.root, self.root.parent)
        write_atomically(path, json.dumps({"request": arguments, "input_tokens": tokens}))
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
