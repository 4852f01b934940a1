"""The request to a model: a plain, hashable value that never touches the network."""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pytest_prompteval.core.content import Block, block_to_api, blocks_from_api, text_of
from pytest_prompteval.core.errors import PromptevalError
from pytest_prompteval.core.modelids import canonical_model

#: Characters of text a prompt and case may make one request of (system, turns, input): over
#: a million tokens, the largest context window, and what a recording can hold.
MAX_REQUEST_CHARS = 4 * 1024 * 1024


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True)
class Message:
    role: str
    #: text blocks are strings; tool calls, results, thinking and images are typed blocks
    content: tuple[Block, ...]

    @property
    def text(self) -> str:
        return text_of(self.content)


@dataclass(frozen=True)
class Request:
    """A Messages API request: model, system prompt, turns and sampling parameters.

    ``params_json`` holds every other API parameter (``max_tokens``, ``temperature``, ...) as
    canonical JSON, so the value stays hashable and its key stable.
    """

    model: str
    messages: tuple[Message, ...]
    system: str | None = None
    params_json: str = "{}"

    @classmethod
    def create(
        cls,
        model: str,
        messages: Iterable[Message],
        system: str | None = None,
        **params: Any,
    ) -> Request:
        return cls(
            model=model,
            messages=tuple(messages),
            system=system or None,
            params_json=canonical_json(params),
        )

    @classmethod
    def from_api(cls, kwargs: Mapping[str, Any]) -> Request:
        """Build from ``client.messages.create`` keyword arguments, every block checked."""
        params = dict(kwargs)
        model = params.pop("model", None)
        if not isinstance(model, str) or not model:
            raise PromptevalError("request has no 'model'")
        system = params.pop("system", None)
        if isinstance(system, list):
            system = "".join(_block_text(b) for b in system)
        messages = []
        for turn in params.pop("messages", []):
            role = turn["role"]
            if not isinstance(role, str):
                raise PromptevalError("a message's 'role' is not a string")
            messages.append(Message(role, blocks_from_api(turn["content"])))
        return cls.create(model, messages, system, **params)

    @property
    def params(self) -> dict[str, Any]:
        result: dict[str, Any] = json.loads(self.params_json)
        return result

    @property
    def prefill(self) -> str:
        """The assistant turn the model continues, or '' when the last turn is the user's."""
        if self.messages and self.messages[-1].role == "assistant":
            return self.messages[-1].text
        return ""

    def to_api(self) -> dict[str, Any]:
        api: dict[str, Any] = {"model": self.model}
        if self.system:
            api["system"] = self.system
        api["messages"] = [
            {"role": m.role, "content": [block_to_api(b) for b in m.content]} for m in self.messages
        ]
        api.update(self.params)
        return api

    @functools.cached_property
    def api_json(self) -> str:
        """``to_api()`` as canonical JSON, made once: every look-up of a recording needs it."""
        return canonical_json(self.to_api())

    @functools.cached_property
    def key_json(self) -> str:
        """``api_json`` with the model's Anthropic API id: the same request to Claude on
        Bedrock, Vertex AI or the API has the same key, so one recording replays on each."""
        model = canonical_model(self.model)
        if model == self.model:
            return self.api_json
        return canonical_json({**self.to_api(), "model": model})

    @functools.cached_property
    def _keys(self) -> dict[int, str]:
        return {}

    def key(self, sample: int = 0) -> str:
        """Stable identity of this request's n-th sample: the recording's name (the hash of
        ``{"request": ..., "sample": n}`` in canonical JSON, the model as ``key_json`` has it)."""
        key = self._keys.get(sample)
        if key is None:
            payload = f'{{"request":{self.key_json},"sample":{int(sample)}}}'
            key = self._keys[sample] = hashlib.sha256(payload.encode()).hexdigest()
        return key


def _block_text(block: Any) -> str:
    if isinstance(block, str):
        return block
    if isinstance(block, Mapping) and block.get("type") == "text":
        return str(block["text"])
    raise PromptevalError(f"only text content blocks are supported, got {block!r:.80}")
