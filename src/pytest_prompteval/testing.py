"""An Anthropic-compatible Messages API server on 127.0.0.1, for tests that need "Claude".

It speaks enough of ``POST /v1/messages`` for the official SDK, and of the same request as
Amazon Bedrock and Google Vertex AI take it from the SDK's ``AnthropicBedrock`` and
``AnthropicVertex`` clients (``POST /model/{model}/invoke``;
``POST /v1/projects/{project}/locations/{region}/publishers/anthropic/models/{model}:rawPredict``
and ``.../models/count-tokens:rawPredict``): the model in the path, ``anthropic_version`` in
the body, a signature or bearer token required (point the clients here with
``ANTHROPIC_BEDROCK_BASE_URL=<url>`` and ``ANTHROPIC_VERTEX_BASE_URL=<url>/v1``). Not the
streaming variants: the plugin does not stream.

Scripted answers as a function of the request, added latency, injected faults (status codes
with ``retry-after``, connection resets, malformed bodies, stalls), a requests-per-minute
limit announced in the API's ``anthropic-ratelimit-requests-*`` headers, and a log of every
request. Use the ``anthropic_server`` fixture, or::

    with AnthropicServer(responder=lambda req: "hello") as server:
        client = anthropic.Anthropic(base_url=server.url, api_key="test")
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote

Answer = str | Mapping[str, Any]
Responder = Callable[[dict[str, Any]], Answer]


@dataclass(frozen=True)
class Fault:
    """One injected failure. ``kind`` is ``status``, ``reset``, ``malformed`` (a 200 whose
    body is cut short) or ``stall`` (the answer comes ``delay`` seconds late); the server's
    own limit refuses with kind ``refused``, answered at once, before the latency."""

    kind: str = "status"
    status: int = 500
    error_type: str = "api_error"
    message: str = "injected fault"
    retry_after: float | None = 0.01  # seconds; sent as retry-after-ms so tests stay fast
    headers: Mapping[str, str] = field(default_factory=dict)
    delay: float = 0.0

    @classmethod
    def overloaded(cls, **kw: Any) -> Fault:
        return cls(status=529, error_type="overloaded_error", message="Overloaded", **kw)

    @classmethod
    def rate_limited(cls, **kw: Any) -> Fault:
        kw.setdefault("message", "Number of request tokens has exceeded your rate limit.")
        return cls(status=429, error_type="rate_limit_error", **kw)

    @classmethod
    def spend_limit(cls) -> Fault:
        return cls(
            status=429,
            error_type="rate_limit_error",
            message="This request would exceed your account's monthly spend limit.",
        )


class RequestLimit:
    """A requests-per-minute limit as a token bucket, as the API enforces it: up to ``burst``
    requests at once, refilled at ``per_minute`` / 60 a second. ``clock``: seconds."""

    def __init__(
        self, per_minute: int, burst: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.per_minute = per_minute
        self.burst = burst
        self.clock = clock
        self.left = float(burst)
        self.at = clock()

    def take(self) -> tuple[bool, dict[str, str]]:
        """Whether one more request is allowed now, and the headers that say so."""
        now = self.clock()
        rate = self.per_minute / 60
        self.left = min(float(self.burst), self.left + (now - self.at) * rate)
        self.at = now
        allowed = self.left >= 1
        if allowed:
            self.left -= 1
        full = datetime.now(timezone.utc) + timedelta(seconds=(self.burst - self.left) / rate)
        headers = {
            "anthropic-ratelimit-requests-limit": str(self.per_minute),
            "anthropic-ratelimit-requests-remaining": str(math.floor(self.left)),
            "anthropic-ratelimit-requests-reset": full.isoformat(timespec="seconds"),
        }
        if not allowed:  # whole seconds, as the API sends it
            headers["retry-after"] = str(max(1, math.ceil((1 - self.left) / rate)))
        return allowed, headers


@dataclass(frozen=True)
class LoggedRequest:
    path: str
    #: header names in lower case
    headers: dict[str, str]
    body: dict[str, Any]
    received_at: float = 0.0  # time.monotonic()


def tool_use(request: dict[str, Any], tool_input: Mapping[str, Any]) -> dict[str, Any]:
    """A complete message that calls the request's (first) tool with ``tool_input``."""
    name = request["tools"][0]["name"]
    return {
        "id": "msg_tool",
        "type": "message",
        "role": "assistant",
        "model": request.get("model", "unknown"),
        "content": [{"type": "tool_use", "id": "toolu_1", "name": name, "input": dict(tool_input)}],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": _tokens(json.dumps(request)), "output_tokens": 50},
    }


Block = str | Mapping[str, Any]


def call(name: str, **tool_input: Any) -> dict[str, Any]:
    """A ``tool_use`` block for ``ScriptedAgent`` (its id is given when it is sent)."""
    return {"type": "tool_use", "name": name, "input": tool_input}


def thinking(text: str, signature: str = "sig") -> dict[str, Any]:
    return {"type": "thinking", "thinking": text, "signature": signature}


class ScriptedAgent:
    """A responder that plays an agent: ``scripts`` maps a text found in the conversation's
    first user message to the agent's turns, each a list of blocks (a string is a text
    block; ``call(...)``, ``thinking(...)``). The turn sent is the one after as many as the
    conversation already holds; a turn with a tool call stops for ``tool_use``, any other
    ends its turn; past its last turn the agent says ``done``. Tool ids are the step's and
    the call's numbers, so a conversation is the same request every time it is replayed."""

    def __init__(self, scripts: Mapping[str, Sequence[Sequence[Block]]]):
        self.scripts = scripts

    def __call__(self, request: dict[str, Any]) -> dict[str, Any]:
        messages = request.get("messages", [])
        first = messages[0]["content"] if messages else ""
        first = first if isinstance(first, str) else " ".join(b.get("text", "") for b in first)
        turns = next((t for key, t in self.scripts.items() if key in first), [])
        step = sum(m["role"] == "assistant" for m in messages)
        blocks = turns[step] if step < len(turns) else ["done"]
        content = []
        for number, block in enumerate(blocks):
            if isinstance(block, str):
                content.append({"type": "text", "text": block})
            elif block.get("type") == "tool_use":
                content.append({**block, "id": f"toolu_{step + 1:02d}_{number + 1:02d}"})
            else:
                content.append(dict(block))
        calls = any(b["type"] == "tool_use" for b in content)
        return {
            "id": f"msg_agent_{step + 1:02d}",
            "type": "message",
            "role": "assistant",
            "model": request.get("model", "unknown"),
            "content": content,
            "stop_reason": "tool_use" if calls else "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": _tokens(json.dumps(messages)), "output_tokens": 20},
        }


def _blocks(message: Mapping[str, Any]) -> list[Any]:
    content = message.get("content")
    return [] if isinstance(content, str) else list(content or [])


def _user_turn_error(messages: Sequence[Any], index: int) -> str | None:
    """A user message's ``tool_result`` blocks: for ids the turn before called, first."""
    blocks = _blocks(messages[index])
    results = [b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result"]
    before = messages[index - 1] if index else {}
    called = [
        b["id"]
        for b in (before.get("content") or [])
        if isinstance(b, Mapping) and b.get("type") == "tool_use"
    ]
    unknown = [r for r in results if r not in called]
    if unknown:
        return (
            f"messages.{index}.content: unexpected `tool_use_id` found in `tool_result` "
            f"blocks: {unknown[0]}. Each `tool_result` block must have a corresponding "
            "`tool_use` block in the previous message."
        )
    leading = [b.get("type") for b in blocks[: len(results)]]
    if results and set(leading) != {"tool_result"}:
        return (
            f"messages.{index}.content: `tool_result` blocks must come first in the "
            "user message, before any other content"
        )
    return None


def _unanswered_error(messages: Sequence[Any], index: int, calls: list[Any]) -> str | None:
    """An assistant turn's tool calls, each answered in the next message."""
    after = messages[index + 1] if index + 1 < len(messages) else None
    if not calls or after is None:
        return None
    answered = [
        b.get("tool_use_id")
        for b in (after.get("content") if isinstance(after.get("content"), list) else [])
        if b.get("type") == "tool_result"
    ]
    missing = [c for c in calls if c not in answered]
    if missing:
        return (
            f"messages.{index}: `tool_use` ids were found without `tool_result` blocks "
            f"immediately after: {missing[0]}. Each `tool_use` block must have a "
            "corresponding `tool_result` block in the next message."
        )
    return None


def _assistant_turn_error(
    messages: Sequence[Any], index: int, sent: Mapping[str, Any]
) -> str | None:
    """An assistant turn's calls answered next, and its thinking the one sent."""
    blocks = _blocks(messages[index])
    calls = [b["id"] for b in blocks if b.get("type") == "tool_use"]
    unanswered = _unanswered_error(messages, index, calls)
    if unanswered is not None:
        return unanswered
    for call_id in calls:
        expected = sent.get(call_id)
        given = [dict(b) for b in blocks if b.get("type") in ("thinking", "redacted_thinking")]
        if expected is not None and given != expected:
            return (
                f"messages.{index}.content: thinking blocks in the latest assistant message "
                "cannot be modified. These blocks must remain as they were in the original "
                "response."
            )
    return None


def tool_conversation_error(request: Mapping[str, Any], sent: Mapping[str, Any]) -> str | None:
    """Why the API would refuse this conversation (400 invalid_request_error), or None: a
    ``tool_use`` not answered by a ``tool_result`` at the start of the next user message,
    a ``tool_result`` for an id the turn before did not call, or an assistant turn whose
    thinking is not the one sent (``sent``: thinking blocks by the tool id of their turn)."""
    messages = request.get("messages", [])
    for index, message in enumerate(messages):
        if message.get("role") == "user":
            error = _user_turn_error(messages, index)
        else:
            error = _assistant_turn_error(messages, index, sent)
        if error is not None:
            return error
    return None


def judge_verdict(request: Mapping[str, Any]) -> dict[str, Any]:
    """What the fake judge submits for a judge request in the Messages API's form: every
    score is the share of the case's expected topics whose words all appear in the answer
    (100 when the case gives none), the topics missed are listed, no claim is called
    incorrect. Deterministic, so offline tests of judged cases can assert on it."""
    last = request["messages"][-1]["content"]
    text = last if isinstance(last, str) else " ".join(b.get("text", "") for b in last)
    # the answer last (it may hold anything), the topics before it
    answer = text.partition("<answer>")[2].rpartition("</answer>")[0].lower()
    listed = text.partition("<expected_topics>")[2].partition("</expected_topics>")[0]
    topics = [] if listed in ("", "(none given)") else [t.strip() for t in listed.split(",")]
    missed = [
        t for t in topics if not all(w in answer for w in t.lower().replace("_", " ").split())
    ]
    score = round(100 * (1 - len(missed) / len(topics))) if topics else 100
    why = f"fake judge: {len(topics) - len(missed)} of {len(topics)} expected topics mentioned"
    schema = request["tools"][0]["input_schema"]
    if "scores" not in schema["properties"]:  # a one-off question (an assertion's)
        return {"score": score, "reason": why}
    dimensions = schema["properties"]["scores"]["required"]
    return {
        "scores": {d: score for d in dimensions},
        "missing_topics": missed,
        "incorrect_claims": [],
        "notes": why,
    }


def fake_judge(request: Any, **context: Any) -> dict[str, Any]:
    """A ``python:`` judge provider for offline tests:
    ``--prompteval-judge-provider=python:pytest_prompteval.testing:fake_judge``. (As a
    loopback server's responder: ``lambda r: tool_use(r, judge_verdict(r))``.)"""
    verdict = judge_verdict(request.to_api())
    return {"text": "", "tool_input": verdict, "stop_reason": "tool_use"}


def default_responder(request: dict[str, Any]) -> Answer:
    last = request["messages"][-1]["content"]
    text = last if isinstance(last, str) else " ".join(b.get("text", "") for b in last)
    return f"Scripted answer to: {text[:200]}"


def _tokens(text: str) -> int:
    return max(1, len(text) // 4)


def route(path: str) -> tuple[str, str | None]:
    """What a POST to ``path`` asks for, and the model its path names (Bedrock's, Vertex
    AI's): ``messages``, ``count_tokens``, ``batches``, or '' for no such route."""
    path = path.split("?")[0]
    if path in ("/v1/messages", "/v1/messages/count_tokens"):
        return path.rpartition("/")[2], None
    if path.startswith("/v1/messages/batches"):
        return "batches", None
    parts = path.split("/")
    if len(parts) == 4 and parts[1] == "model" and parts[3] == "invoke" and parts[2]:
        return "messages", unquote(parts[2])
    vertex = ["", "v1", "projects", "*", "locations", "*", "publishers", "anthropic", "models"]
    if len(parts) == 10 and all(w in ("*", g) for w, g in zip(vertex, parts[:9], strict=True)):
        model, _, verb = unquote(parts[9]).rpartition(":")
        if verb == "rawPredict" and model == "count-tokens":
            return "count_tokens", ""  # the model is in the body, as the API has it
        if verb == "rawPredict" and model:
            return "messages", model
    return "", None


def platform_request(body: Mapping[str, Any], model: str) -> tuple[dict[str, Any], str | None]:
    """A Bedrock or Vertex AI body as the Messages API's (``model`` from the path, '' when the
    body names it), or why the platform would refuse it (400)."""
    if "anthropic_version" not in body:
        return {}, "anthropic_version: required on this platform"
    if model and "model" in body:
        return {}, "Extraneous key [model] is not permitted: the model is in the path"
    request = {k: v for k, v in body.items() if k != "anthropic_version"}
    return ({"model": model, **request} if model else request), None


def _signed(path: str, headers: Mapping[str, str]) -> bool:
    """Whether a platform's request carries its credentials: an AWS signature or a bearer
    token (Bedrock), a bearer token (Vertex AI)."""
    given = headers.get("authorization", "")
    if path.startswith("/model/"):
        return given.startswith(("AWS4-HMAC-SHA256 Credential=", "Bearer "))
    return given.startswith("Bearer ")


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    #: connections the kernel holds before they are accepted: socketserver's 5 dropped the
    #: handshakes of a client opening more at once (the plugin opens up to its concurrency,
    #: 32 by default), which the client sent again a second later
    request_queue_size = 256


class AnthropicServer:
    def __init__(self, responder: Responder = default_responder, latency: float = 0.0):
        self.responder = responder
        self.latency = latency
        self.requests: list[LoggedRequest] = []
        #: extra headers on successful answers, e.g. anthropic-ratelimit-* (a function of
        #: the answer's number, from 1, or None)
        self.response_headers: Callable[[int], Mapping[str, str]] | None = None
        #: Message Batches: answered after this many status checks; results by custom_id
        #: to report as errored or expired instead of answering them
        self.batch_polls_to_end = 1
        self.batch_errored: set[str] = set()
        self.batch_expired: set[str] = set()
        self.batches: dict[str, dict[str, Any]] = {}
        self.in_flight = 0
        self.max_in_flight = 0  # the most requests it was answering at one time
        self.faults: deque[Fault] = deque()
        #: faults as a function of the request and how many times the same request came
        #: before (0 the first time): a plan that fails chosen requests, or always fails them
        self.fault_plan: Callable[[dict[str, Any], int], Fault | None] | None = None
        self._seen: dict[str, int] = {}
        #: requests-per-minute limit on POST /v1/messages (None: unlimited)
        self.limit: RequestLimit | None = None
        self.refused = 0  # requests answered 429 by the limit
        #: thinking blocks sent, by the tool calls of their turn: passed back unchanged
        self._thinking: dict[str, list[dict[str, Any]]] = {}
        self._ids = itertools.count(1)
        self._fault_ids = itertools.count(1)
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        assert self._server is not None, "server not started"
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def inject(self, *faults: Fault) -> None:
        """Queue faults; each answers one request, in order, before scripted answers resume."""
        self.faults.extend(faults)

    def start(self) -> AnthropicServer:
        server = _HTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> AnthropicServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _message(self, request: dict[str, Any], answer: Answer) -> tuple[dict[str, Any], int]:
        number = next(self._ids)
        if isinstance(answer, Mapping):
            return dict(answer), number
        prompt = json.dumps(request.get("system", "")) + json.dumps(request.get("messages", []))
        return {
            "id": f"msg_test_{number:06d}",
            "type": "message",
            "role": "assistant",
            "model": request.get("model", "unknown"),
            "content": [{"type": "text", "text": answer}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": _tokens(prompt), "output_tokens": _tokens(answer)},
        }, number

    def _remember_thinking(self, message: Mapping[str, Any]) -> None:
        blocks = [b for b in message.get("content", []) if isinstance(b, Mapping)]
        given = [dict(b) for b in blocks if b.get("type") in ("thinking", "redacted_thinking")]
        with self._lock:
            for block in blocks:
                if block.get("type") == "tool_use" and "id" in block:
                    self._thinking[block["id"]] = given

    def count_tokens(self, request: dict[str, Any]) -> int:
        """POST /v1/messages/count_tokens: the input tokens a message would report."""
        prompt = json.dumps(request.get("system", "")) + json.dumps(request.get("messages", []))
        return _tokens(prompt)

    def _admit(self, path: str, body: dict[str, Any]) -> tuple[Fault | None, dict[str, str]]:
        """Under the lock, as a request arrives: its fault if any (the limit's refusal first,
        then the queue, then the plan) and the rate-limit headers of its answer."""
        if route(path)[0] != "messages":
            return None, {}
        limit_headers: dict[str, str] = {}
        if self.limit is not None:
            allowed, limit_headers = self.limit.take()
            if not allowed:
                self.refused += 1
                refusal = Fault.rate_limited(
                    message="Number of requests has exceeded your per-minute rate limit.",
                    retry_after=None,
                )
                return dataclasses.replace(refusal, kind="refused"), limit_headers
        if self.faults:
            return self.faults.popleft(), limit_headers
        if self.fault_plan is not None:
            key = json.dumps(body, sort_keys=True)
            before = self._seen.get(key, 0)
            self._seen[key] = before + 1
            return self.fault_plan(body, before), limit_headers
        return None, limit_headers

    def _batch_object(self, batch: dict[str, Any]) -> dict[str, Any]:
        total = len(batch["requests"])
        ended = batch["status"] == "ended"
        counts = {
            "processing": 0 if ended else total,
            "succeeded": 0,
            "errored": 0,
            "canceled": 0,
            "expired": 0,
        }
        if ended:
            for line in batch["results"]:
                kind = line["result"]["type"]
                counts[kind] += 1
        return {
            "id": batch["id"],
            "type": "message_batch",
            "processing_status": batch["status"],
            "request_counts": counts,
            "created_at": "2026-01-01T00:00:00Z",
            "expires_at": "2026-01-02T00:00:00Z",
            "ended_at": None,
            "archived_at": None,
            "cancel_initiated_at": None,
            "results_url": f"{self.url}/v1/messages/batches/{batch['id']}/results"
            if ended
            else None,
        }

    def _finish(self, batch: dict[str, Any]) -> None:
        results = []
        for entry in batch["requests"]:
            custom_id, params = entry["custom_id"], entry["params"]
            if batch["canceled"]:
                result: dict[str, Any] = {"type": "canceled"}
            elif custom_id in self.batch_expired:
                result = {"type": "expired"}
            elif custom_id in self.batch_errored:
                result = {
                    "type": "errored",
                    "error": {
                        "type": "error",
                        "error": {
                            "type": "invalid_request_error",
                            "message": "injected batch error",
                        },
                    },
                }
            else:
                message, _ = self._message(params, self.responder(params))
                result = {"type": "succeeded", "message": message}
            results.append({"custom_id": custom_id, "result": result})
        batch.update(status="ended", results=results)

    def _batch(
        self, method: str, parts: list[str], body: dict[str, Any]
    ) -> tuple[int, dict[str, Any] | str]:
        """POST /v1/messages/batches, GET .../{id}, GET .../{id}/results, POST .../cancel."""
        with self._lock:
            if method == "POST" and not parts:
                batch_id = f"msgbatch_test_{len(self.batches) + 1:04d}"
                self.batches[batch_id] = {
                    "id": batch_id,
                    "requests": body["requests"],
                    "status": "in_progress",
                    "polls": 0,
                    "canceled": False,
                    "results": [],
                }
                return 200, self._batch_object(self.batches[batch_id])
            batch = self.batches.get(parts[0]) if parts else None
            if batch is None:
                return 404, {
                    "type": "error",
                    "error": {"type": "not_found_error", "message": "no such batch"},
                }
            if method == "POST" and parts[1:] == ["cancel"]:
                batch["canceled"] = True
                self._finish(batch)
                return 200, self._batch_object(batch)
            if parts[1:] == ["results"]:
                return 200, "".join(json.dumps(line) + "\n" for line in batch["results"])
            batch["polls"] += 1
            if batch["status"] != "ended" and batch["polls"] >= self.batch_polls_to_end:
                self._finish(batch)
            return 200, self._batch_object(batch)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _send(self, status: int, body: bytes, headers: Mapping[str, str]) -> None:
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", 0))
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = {}
                headers = {k.lower(): v for k, v in self.headers.items()}
                asked, refused = body, None
                model = route(self.path)[1]
                if model is not None:  # Bedrock's or Vertex AI's: as the API would have it
                    asked, refused = platform_request(body, model)
                    if refused is None and not _signed(self.path, headers):
                        refused = "the request carries no credentials"
                with owner._lock:
                    owner.requests.append(LoggedRequest(self.path, headers, body, time.monotonic()))
                    fault, limit_headers = owner._admit(self.path, asked)
                    owner.in_flight += 1
                    owner.max_in_flight = max(owner.max_in_flight, owner.in_flight)
                try:
                    if refused is None:
                        self._answer(asked, fault, limit_headers)
                    else:
                        error = {"type": "invalid_request_error", "message": refused}
                        self._send(400, json.dumps({"type": "error", "error": error}).encode(), {})
                finally:
                    with owner._lock:
                        owner.in_flight -= 1

            def do_GET(self) -> None:
                with owner._lock:
                    owner.requests.append(
                        LoggedRequest(self.path, dict(self.headers), {}, time.monotonic())
                    )
                self._batches("GET", {})

            def _batches(self, method: str, body: dict[str, Any]) -> None:
                parts = self.path.split("?")[0].rstrip("/").split("/")[4:]
                status, payload = owner._batch(method, parts, body)
                if isinstance(payload, str):  # a results file
                    data = payload.encode()
                    self.send_response(status)
                    self.send_header("content-type", "application/binary")
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                else:
                    self._send(status, json.dumps(payload).encode(), {})

            def _answer(
                self, body: dict[str, Any], fault: Fault | None, limit_headers: dict[str, str]
            ) -> None:
                if fault is not None and fault.kind == "refused":
                    self._fault(fault, limit_headers)  # refused at once, as the API does
                    return
                if owner.latency:
                    time.sleep(owner.latency)
                kind = route(self.path)[0]
                if kind == "batches":
                    self._batches("POST", body)
                    return
                if kind == "count_tokens":
                    if fault is not None:
                        self._fault(fault, limit_headers)
                    else:
                        counted = {"input_tokens": owner.count_tokens(body)}
                        self._send(200, json.dumps(counted).encode(), {})
                    return
                if kind != "messages":
                    error = {"type": "not_found_error", "message": f"no route {self.path}"}
                    self._send(404, json.dumps({"type": "error", "error": error}).encode(), {})
                    return
                if fault is not None and fault.kind == "stall":
                    time.sleep(fault.delay)
                elif fault is not None:
                    self._fault(fault, limit_headers)
                    return
                with owner._lock:
                    refused = tool_conversation_error(body, owner._thinking)
                if refused is not None:
                    error = {"type": "invalid_request_error", "message": refused}
                    payload = json.dumps({"type": "error", "error": error}).encode()
                    self._send(400, payload, {"request-id": "req_invalid", **limit_headers})
                    return
                message, number = owner._message(body, owner.responder(body))
                owner._remember_thinking(message)
                headers = {"request-id": f"req_{number:06d}", **limit_headers}
                if self.path.startswith("/model/"):  # as Bedrock names its requests
                    headers["x-amzn-requestid"] = headers["request-id"]
                if owner.response_headers is not None:
                    headers.update(owner.response_headers(number))
                self._send(200, json.dumps(message).encode(), headers)

            def _fault(self, fault: Fault, limit_headers: Mapping[str, str]) -> None:
                if fault.kind == "reset":
                    linger = struct.pack("ii", 1, 0)  # RST instead of FIN
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, linger)
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                request_id = f"req_fault_{next(owner._fault_ids):06d}"
                if fault.kind == "malformed":
                    broken = b'{"id": "msg_broken", "content": ['
                    self._send(200, broken, {"request-id": request_id, **limit_headers})
                    return
                headers = {"request-id": request_id, **limit_headers, **fault.headers}
                if fault.retry_after is not None:
                    headers["retry-after-ms"] = str(int(fault.retry_after * 1000))
                error = {"type": fault.error_type, "message": fault.message}
                payload = json.dumps({"type": "error", "error": error}).encode()
                self._send(fault.status, payload, headers)

        return Handler
