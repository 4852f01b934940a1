"""Input tokens of a request through the API's token-counting endpoint (``messages.count_tokens``),
kept like recordings: ``<recordings>/token_counts/<hash>.json``, so a count is asked for once.
A provider without the endpoint (Amazon Bedrock through the SDK, a ``python:`` provider) gets
an approximation instead, which the estimate says once."""

from __future__ import annotations

import hashlib
import inspect
import json
from pathlib import Path
from typing import Any, cast

from pytest_prompteval.core.errors import ApiError, PromptevalError
from pytest_prompteval.core.modelids import canonical_model
from pytest_prompteval.core.paths import make_dir, read_bounded, write_atomically
from pytest_prompteval.core.request import Request, canonical_json
from pytest_prompteval.providers.base import Provider, SdkProvider
from pytest_prompteval.providers.secrets import scrub

DIRECTORY = "token_counts"
#: A count is a request and a number: a request of a few megabytes at most.
MAX_COUNT_BYTES = 16 * 1024 * 1024
#: characters a token, for a provider that cannot count: about what English prose takes
CHARS_PER_TOKEN = 4


class TokenCounter:
    def __init__(self, recordings: Path, provider: Provider):
        self.root = recordings / DIRECTORY
        self.provider = provider
        self.calls = 0  # counting requests sent in this process
        self.approximated = 0  # requests whose tokens were approximated, not counted
        self._accepted: frozenset[str] | None = None

    @property
    def note(self) -> str | None:
        """The line that says the counts were approximated, if any were."""
        if not self.approximated:
            return None
        return (
            f"{self.provider.name} has no token counting: the input tokens of "
            f"{self.approximated} new requests approximated at {CHARS_PER_TOKEN} characters a "
            "token"
        )

    def _sdk(self) -> SdkProvider:
        return cast(SdkProvider, self.provider)  # its capabilities say it has a client

    def _client(self) -> Any:
        return self._sdk().client()

    def _arguments(self, request: Request) -> dict[str, Any]:
        """The request's fields that count_tokens takes (not max_tokens, temperature, ...)."""
        if self._accepted is None:
            count = self._client().messages.count_tokens
            self._accepted = frozenset(inspect.signature(count).parameters)
        return {k: v for k, v in request.to_api().items() if k in self._accepted}

    def count(self, request: Request) -> int:
        if not self.provider.capabilities.token_counting:
            self.approximated += 1
            api = request.to_api()
            said = canonical_json([api.get("system"), api["messages"], api.get("tools")])
            return max(1, len(said) // CHARS_PER_TOKEN)
        arguments = self._arguments(request)
        # the same count on every platform: kept under the model's Anthropic API id
        text = canonical_json({**arguments, "model": canonical_model(request.model)})
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

        why = self.provider.unavailable
        if why is not None:
            raise ApiError(f"counting the input tokens of new requests: {why}")
        self.calls += 1
        try:
            result = self._client().messages.count_tokens(**arguments)
        except anthropic.APIStatusError as exc:
            said = scrub(exc.message, self._sdk().secrets())
            raise ApiError(
                f"token counting failed: {type(exc).__name__}: status {exc.status_code}, "
                f"request_id {exc.request_id or '-'}: {said}"
            ) from None
        except anthropic.APIConnectionError as exc:
            raise ApiError(f"token counting failed: {type(exc).__name__}: {exc.message}") from None
        return int(result.input_tokens)
