"""Calls between a sample's judge and its candidate, two processes joined by a pair of pipes.

The judge runs the tests; the candidate's code runs in a process of its own, so nothing the
candidate does can reach the judge's verdicts or its channel to the server. What crosses is
data, one JSON message a line, decoded on arrival into exact built-in types: a value the
candidate returns cannot bring its own ``__eq__``, ``__bool__`` or ``__hash__``. Any other
object stays in the process that owns it and crosses as a handle, used through a ``Remote``
proxy (calls, public attributes, iteration, length, items) that equals nothing but itself
and has no truth value, so a handle can never stand in for an expected value.

Either side may call back while a call is in flight (a key function the test passes, say):
``Channel.request`` serves the peer's requests until its own answer arrives.
"""

from __future__ import annotations

import base64
import builtins
import datetime
import decimal
import fractions
import json
import os
import traceback
from typing import Any

#: The largest message either side reads: more is a broken peer, not an answer.
MAX_MESSAGE = 32 << 20
MAX_DEPTH = 200
#: Ints beyond this travel as hex text (JSON readers refuse very long decimal digits).
_PLAIN_INT = 1 << 63
_SEQUENCES: dict[type, str] = {list: "l", tuple: "t", set: "s", frozenset: "fs"}
_BASES: tuple[Any, ...] = (bool, int, float, str, bytes, list, tuple, dict, set, frozenset)
_DATES: dict[str, Any] = {t.__name__: t for t in (datetime.datetime, datetime.date, datetime.time)}


_MISSING = object()
_END = object()  # ``next`` found nothing more; crosses as {"end": true}


def _is_str(body: Any) -> bool:
    return type(body) is str


def _is_pair(body: Any) -> bool:
    return type(body) is list and len(body) == 2


#: Exact types that travel as one tag whose body is text or numbers, and back.
_PLAIN_ENCODERS: dict[type, Any] = {
    float: lambda v: {"f": v.hex()},
    bytes: lambda v: {"b": base64.b64encode(v).decode()},
    bytearray: lambda v: {"ba": base64.b64encode(v).decode()},
    complex: lambda v: {"c": [v.real.hex(), v.imag.hex()]},
    fractions.Fraction: lambda v: {"q": [hex(v.numerator), hex(v.denominator)]},
    decimal.Decimal: lambda v: {"dec": str(v)},
    datetime.timedelta: lambda v: {"td": [v.days, v.seconds, v.microseconds]},
    **{
        t: lambda v: {"dt": [type(v).__name__, v.isoformat()]}
        for t in (datetime.datetime, datetime.date, datetime.time)
    },
}
#: tag -> (does the body fit, the value from it)
_PLAIN_DECODERS: dict[str, tuple[Any, Any]] = {
    "end": (lambda b: b is True, lambda b: _END),
    "i": (_is_str, lambda b: int(b, 16)),
    "f": (_is_str, float.fromhex),
    "b": (_is_str, lambda b: base64.b64decode(b, validate=True)),
    "ba": (_is_str, lambda b: bytearray(base64.b64decode(b, validate=True))),
    "c": (_is_pair, lambda b: complex(float.fromhex(b[0]), float.fromhex(b[1]))),
    "q": (_is_pair, lambda b: fractions.Fraction(int(b[0], 16), int(b[1], 16))),
    "dec": (_is_str, decimal.Decimal),
    "td": (
        lambda b: type(b) is list and all(type(v) is int for v in b),
        lambda b: datetime.timedelta(*b),
    ),
    "dt": (
        lambda b: _is_pair(b) and b[0] in _DATES,
        lambda b: _DATES[b[0]].fromisoformat(b[1]),
    ),
}


class WireError(Exception):
    """The peer sent something that is not a message of this protocol."""


class Gone(BaseException):
    """The peer's process ended. A BaseException, so that a test's ``except Exception``
    cannot swallow the candidate's death and pass."""


class Raised(Exception):
    """An exception of the candidate's own type (or one without a built-in twin)."""


class Exited(BaseException):
    """SystemExit, KeyboardInterrupt or GeneratorExit raised by the candidate: what a
    test's ``except Exception`` does not catch in-process either."""


def message_of(exc: BaseException) -> str:
    """One line for a failed test: an assertion shows its line in the test."""
    carried = getattr(exc, "prompteval_message", None)
    if isinstance(carried, str):
        return carried
    text = f"{type(exc).__name__}: {exc}".strip()
    if isinstance(exc, AssertionError):
        frames = traceback.extract_tb(exc.__traceback__)
        lines = [f.line for f in frames if f.line and f.filename.startswith("<")]
        if lines:
            text = f"AssertionError: {lines[-1]}" + (f" ({exc})" if str(exc) else "")
    return text[:500]


def kind_of(exc: BaseException) -> str:
    carried = getattr(exc, "prompteval_kind", None)
    if carried in ("resource", "assert", "error"):
        return str(carried)
    if isinstance(exc, MemoryError | RecursionError) or (
        isinstance(exc, OSError) and exc.errno in (11, 12, 27)  # EAGAIN (fork), ENOMEM, EFBIG
    ):
        return "resource"
    return "assert" if isinstance(exc, AssertionError) else "error"


def describe(exc: BaseException) -> dict[str, str]:
    base = next(c for c in type(exc).__mro__ if getattr(builtins, c.__name__, None) is c)
    return {
        "type": type(exc).__name__,
        "base": base.__name__,
        "message": message_of(exc),
        "kind": kind_of(exc),
    }


#: Rebuilt as exceptions of their own: a built-in one would steer the judge's own loops
#: (``StopIteration`` ends ``map``/``all`` early, and they pass).
_CONTROL = frozenset({"StopIteration", "StopAsyncIteration", "GeneratorExit"})


def rebuild(info: Any) -> BaseException:
    """The peer's exception as one of ours: a built-in type by name where there is one
    (so that ``except ValueError`` in a test works), carrying the peer's message."""
    if not isinstance(info, dict) or not all(
        isinstance(info.get(k), str) for k in ("type", "message", "kind")
    ):
        return WireError("an exception the protocol does not know")
    name, message = info["type"], info["message"][:500]
    base: str = info["base"] if isinstance(info.get("base"), str) else name
    cls = getattr(builtins, base, None)
    if name in _CONTROL or base in _CONTROL or not isinstance(cls, type):
        cls = None
    exc: BaseException
    if cls is not None and issubclass(cls, Exception):
        try:
            # the candidate's subclass (``class Invalid(ValueError)``) is still a ValueError
            own = cls if name == base else type(_named(name), (cls, Raised), {})
            exc = own(message.partition(": ")[2])
        except Exception:
            exc = type(_named(name), (Raised,), {})(message)
    elif cls is not None and issubclass(cls, BaseException):
        exc = Exited(message)
    else:  # the candidate's own class: a Raised of the same name
        exc = type(_named(name), (Raised,), {})(message)
    setattr(exc, "prompteval_message", message)  # noqa: B010 - read back by message_of
    setattr(exc, "prompteval_kind", info["kind"])  # noqa: B010
    return exc


def _named(name: str) -> str:
    return name if name.isidentifier() else "Raised"


class Remote:
    """An object that lives in the peer's process."""

    __slots__ = ("_channel", "_handle", "_type")

    def __init__(self, channel: Channel, handle: int, type_name: str):
        self._channel, self._handle, self._type = channel, handle, type_name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._channel.request("call", self._handle, args=list(args), kwargs=kwargs)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return self._channel.request("getattr", self._handle, name=name)

    def __iter__(self) -> Any:
        iterator = self._channel.request("iter", self._handle)
        if not isinstance(iterator, Remote):
            raise TypeError("iter() of the candidate's object is not an iterator")
        return iterator

    def __next__(self) -> Any:
        found = self._channel.request("next", self._handle)
        if found is _END:
            raise StopIteration
        return found

    def __len__(self) -> int:
        length = self._channel.request("len", self._handle)
        if type(length) is not int:
            raise TypeError("len() of the candidate's object is not an int")
        return length

    def __getitem__(self, key: Any) -> Any:
        return self._channel.request("getitem", self._handle, args=[key])

    def __contains__(self, item: Any) -> bool:
        return self._channel.request("contains", self._handle, args=[item]) is True

    def __bool__(self) -> bool:
        raise TypeError(f"a {self._type} object from the other process has no truth value here")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Remote) and (other._channel, other._handle) == (
            self._channel,
            self._handle,
        )

    def __hash__(self) -> int:
        return hash(self._handle)

    def __copy__(self) -> Remote:
        return self

    def __deepcopy__(self, memo: Any) -> Remote:
        return self

    def __repr__(self) -> str:
        return f"<{self._type} object>"


#: What the judge's callbacks may never be: a way into the judge's own code.
_NEVER_CALLED = frozenset(
    getattr(builtins, name)
    for name in (
        "exec",
        "eval",
        "compile",
        "open",
        "__import__",
        "breakpoint",
        "getattr",
        "setattr",
        "delattr",
        "globals",
        "locals",
        "vars",
        "input",
        "help",
    )
)


def _local_op(
    target: Any, op: Any, args: list[Any], kwargs: dict[str, Any], name: Any, guarded: bool
) -> Any:
    """``guarded``: the judge's side, whose objects the candidate may call, iterate and
    index, but never inspect (a generator's ``gi_frame`` leads to the judge's globals)."""
    if op == "call":
        if guarded and any(target is f for f in _NEVER_CALLED):
            raise TypeError("the judge's object cannot be called from the candidate")
        return target(*args, **kwargs)
    if op == "getattr":
        if guarded or not isinstance(name, str) or name.startswith("_"):
            raise AttributeError(f"no public attribute {name!r}")
        return getattr(target, name)
    if op == "iter":
        return iter(target)
    if op == "next":
        return next(target, _END)
    if op == "len":
        return len(target)
    if op == "getitem":
        return target[args[0]]
    if op == "contains":
        return args[0] in target
    raise WireError(f"unknown operation {op!r}")


class Channel:
    """One side of the pipes, with the objects this side has handed out as handles. The
    peer reaches only their public attributes: never, say, a test function's globals."""

    def __init__(
        self, read_fd: int, write_fd: int, peer: str = "the other process", guarded: bool = False
    ):
        self._read, self._write, self.peer, self.guarded = read_fd, write_fd, peer, guarded
        self._buffer = bytearray()
        self._objects: dict[int, Any] = {}
        self._handles: dict[int, int] = {}  # id -> handle: one object, one handle
        self._broken: str | None = None

    # -- values ---------------------------------------------------------------------------
    def encode(self, value: Any, depth: int = 0) -> Any:
        if depth > MAX_DEPTH:
            raise ValueError("a value nested too deeply to send")
        kind = type(value)
        if value is None or kind is bool or kind is str:
            return value
        if kind is int:
            return value if -_PLAIN_INT < value < _PLAIN_INT else {"i": hex(value)}
        plain = _PLAIN_ENCODERS.get(kind)
        if plain is not None:
            return plain(value)
        if kind in _SEQUENCES:
            return {_SEQUENCES[kind]: [self.encode(v, depth + 1) for v in value]}
        if kind is dict:
            inner = depth + 1
            pairs = [[self.encode(k, inner), self.encode(v, inner)] for k, v in value.items()]
            return {"d": pairs}
        return self._encode_object(value, depth)

    def _encode_object(self, value: Any, depth: int) -> Any:
        """A value of no exact built-in type: back to its owner, as its base, or a handle."""
        if isinstance(value, Remote) and value._channel is self:
            return {"r": value._handle}  # back to its owner
        for base in _BASES:
            if isinstance(value, base):  # a subclass (namedtuple, Counter...) as its base
                return self.encode(base(value), depth + 1)
        if value is _END:
            return {"end": True}
        return {"h": self._handle_of(value), "type": type(value).__name__[:100]}

    def _handle_of(self, value: Any) -> int:
        handle = self._handles.get(id(value))
        if handle is None:  # the object stays alive in _objects, so its id stays its own
            handle = self._handles[id(value)] = len(self._objects) + 1
            self._objects[handle] = value
        return handle

    def decode(self, data: Any, depth: int = 0) -> Any:
        """Exact built-in types only; a malformed value is a ``WireError``."""
        if depth > MAX_DEPTH:
            raise WireError("a value nested too deeply")
        if data is None or type(data) in (bool, int, str):
            return data
        if type(data) is not dict or not data:
            raise WireError("not a value")
        try:
            return self._decode_tagged(data, depth)
        except WireError:
            raise
        except (TypeError, ValueError, KeyError, IndexError, OverflowError, ArithmeticError) as exc:
            raise WireError(f"a malformed value ({type(exc).__name__})") from None

    def _decode_tagged(self, data: dict[str, Any], depth: int) -> Any:
        tag = next(iter(data))
        body = data[tag]
        if tag in ("l", "t", "s", "fs", "d"):
            return self._decode_container(tag, body, depth)
        if tag == "h" and type(body) is int and type(data.get("type")) is str and len(data) == 2:
            return Remote(self, body, data["type"])
        if len(data) != 1:
            raise WireError("not a value")
        if tag == "r" and type(body) is int:
            return self._objects[body]
        fits, build = _PLAIN_DECODERS.get(tag, (None, None))
        if fits is not None and fits(body):
            return build(body)
        raise WireError(f"an unknown value tag {tag!r}")

    def _decode_container(self, tag: str, body: Any, depth: int) -> Any:
        if tag == "d":
            if type(body) is not list or not all(type(p) is list and len(p) == 2 for p in body):
                raise WireError("not a mapping")
            return {self.decode(k, depth + 1): self.decode(v, depth + 1) for k, v in body}
        if type(body) is not list:
            raise WireError("not a sequence")
        items = [self.decode(v, depth + 1) for v in body]
        return {"l": list, "t": tuple, "s": set, "fs": frozenset}[tag](items)

    # -- messages -------------------------------------------------------------------------
    def send(self, message: dict[str, Any]) -> None:
        data = memoryview(json.dumps(message, separators=(",", ":")).encode() + b"\n")
        try:
            while data:
                data = data[os.write(self._write, data) :]
        except OSError:  # BrokenPipeError: the peer is gone
            raise Gone() from None

    def receive(self) -> dict[str, Any]:
        while True:
            end = self._buffer.find(b"\n")
            if end >= 0:
                line = bytes(self._buffer[:end])
                del self._buffer[: end + 1]
                break
            if len(self._buffer) > MAX_MESSAGE:
                raise WireError("a message larger than the protocol allows")
            try:
                chunk = os.read(self._read, 1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                raise Gone()
            self._buffer += chunk
        try:
            message = json.loads(line)
        except (ValueError, RecursionError):
            raise WireError("a message that is not JSON") from None
        if type(message) is not dict:
            raise WireError("a message that is not an object")
        return message

    def request(self, op: str, handle: int, **fields: Any) -> Any:
        """Ask the peer to act on one of its objects; serve its requests meanwhile. Once
        the peer has sent garbage, this and every later request fail saying so."""
        if self._broken is not None:
            raise WireError(self._broken)
        try:
            return self._request(op, handle, fields)
        except WireError as exc:
            self._broken = f"{self.peer} broke the call protocol: {exc}"
            raise WireError(self._broken) from None

    def _request(self, op: str, handle: int, fields: dict[str, Any]) -> Any:
        message: dict[str, Any] = {"op": op, "h": handle}
        if "args" in fields:
            message["args"] = self.encode(fields["args"])
        if fields.get("kwargs"):
            message["kwargs"] = self.encode(fields["kwargs"])
        if "name" in fields:
            message["name"] = fields["name"]
        self.send(message)
        while True:
            answer = self.receive()
            if "op" in answer:
                self.serve_one(answer)
            elif "ok" in answer:
                return self.decode(answer["ok"])
            elif "err" in answer:
                raise rebuild(answer["err"])
            else:
                raise WireError("an answer the protocol does not know")

    def serve_one(self, message: dict[str, Any]) -> None:
        handle = message.get("h")
        target = self._objects.get(handle, _MISSING) if type(handle) is int else _MISSING
        try:
            if target is _MISSING:
                raise WireError("no such object")
            args = self.decode(message.get("args", {"l": []}))
            kwargs = self.decode(message.get("kwargs", {"d": []}))
            if type(args) is not list or type(kwargs) is not dict:
                raise WireError("malformed arguments")
            op, name = message.get("op"), message.get("name")
            result = _local_op(target, op, args, kwargs, name, self.guarded)
            answer = {"ok": self.encode(result)}
        except (Gone, WireError):
            raise
        except BaseException as exc:
            answer = {"err": describe(exc)}
        self.send(answer)

    def serve_forever(self) -> None:
        """The candidate's loop: answer the judge until it closes the pipe."""
        while True:
            try:
                message = self.receive()
            except Gone:
                return
            if "op" not in message:
                raise WireError("expected a request")
            self.serve_one(message)

    def export(self, namespace: dict[str, Any]) -> dict[str, Any]:
        """A module's public names as values or handles; modules by name."""
        found: dict[str, Any] = {}
        for name, value in namespace.items():
            if name.startswith("__"):
                continue
            if type(value).__name__ == "module":
                found[name] = {"module": getattr(value, "__name__", "")}
                continue
            try:
                large = isinstance(value, list | tuple | dict | set | frozenset | str | bytes)
                if large and len(value) > 10_000:  # a lookup table: used through its handle
                    found[name] = {"h": self._handle_of(value), "type": type(value).__name__}
                else:
                    found[name] = self.encode(value)
            except (ValueError, RecursionError):
                continue
        return found
