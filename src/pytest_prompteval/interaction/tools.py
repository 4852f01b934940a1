"""Python tools: ``@pytest_prompteval.tool("add")`` on a function in a conftest (or any
plugin module), or the ``pytest_prompteval_tools`` hook. A bare name in a prompt version's or
a case's ``tools:`` takes its definition from the function: its docstring's first paragraph
is the description, its parameters (with their type hints) the input schema.

A tool is called with the call's input as keyword arguments; what it returns is the result
(a string as is, anything else as JSON). A tool reports an error *to the model* by raising
``ToolError`` (or returning one): an ``is_error`` result with its message; so does a call
whose arguments the function does not take. Any other exception is a bug in the tool: an
error of the item with the tool's traceback, never shown to the model. As with scorers, the
decorator only marks the function: each run finds the marked functions among its own
plugins.
"""

from __future__ import annotations

import inspect
import json
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from pytest_prompteval.core.content import ToolOutcome
from pytest_prompteval.core.errors import PromptevalError, ToolCodeError, user_code_error
from pytest_prompteval.core.marks import marked, marker

MARK = "__prompteval_tool__"
ToolFunction = Callable[..., Any]
F = TypeVar("F", bound=ToolFunction)

_JSON_TYPES: dict[Any, str] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    list: "array",
    dict: "object",
}


class ToolError(Exception):
    """Raised (or returned) by a Python tool: its message goes to the model as an
    ``is_error`` tool result. Any other exception is an error of the item."""


def tool(name: str) -> Callable[[F], F]:
    """Mark a function as the Python tool ``name`` that agent cases may call."""
    return marker(MARK, name)


def marked_tools(modules: Iterable[object]) -> dict[str, ToolFunction]:
    """The functions marked with ``@tool`` among the attributes of ``modules``."""
    return marked(modules, MARK)


def _schema_of(hint: Any) -> dict[str, Any]:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(hint) if a is not type(None)]
        return _schema_of(options[0]) if len(options) == 1 else {}
    if origin is typing.Literal:
        return {"enum": list(typing.get_args(hint))}
    if origin in (list, tuple) or hint in (list, tuple):
        args = typing.get_args(hint)
        return {"type": "array", **({"items": _schema_of(args[0])} if args else {})}
    kind = _JSON_TYPES.get(origin or hint)
    return {"type": kind} if kind else {}


@dataclass(frozen=True)
class PythonTool:
    name: str
    function: ToolFunction

    def definition(self) -> dict[str, Any]:
        """The Anthropic tool definition made from the function's signature and docstring."""
        try:
            hints = typing.get_type_hints(self.function)
        except Exception:  # a hint that does not resolve describes nothing
            hints = {}
        properties: dict[str, Any] = {}
        required = []
        for parameter in inspect.signature(self.function).parameters.values():
            if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
                continue
            properties[parameter.name] = _schema_of(hints.get(parameter.name, Any))
            if parameter.default is parameter.empty:
                required.append(parameter.name)
        doc = inspect.getdoc(self.function) or ""
        definition: dict[str, Any] = {
            "name": self.name,
            "input_schema": {"type": "object", "properties": properties, "required": required},
        }
        description = doc.split("\n\n")[0].strip()
        if description:
            definition["description"] = description
        return definition

    def __call__(self, name: str, arguments: Mapping[str, Any]) -> ToolOutcome:
        try:
            inspect.signature(self.function).bind(**arguments)
        except TypeError as exc:  # the model's mistake: it may call again, corrected
            return ToolOutcome(f"invalid arguments: {exc}", is_error=True)
        try:
            value = self.function(**arguments)
        except ToolError as exc:
            return ToolOutcome(str(exc), is_error=True)
        except (Exception, SystemExit) as exc:  # sys.exit() in a tool is a bug of it too
            raise user_code_error(f"tool {name!r}", exc, ToolCodeError) from None
        if isinstance(value, ToolError):
            return ToolOutcome(str(value), is_error=True)
        if isinstance(value, str):
            return ToolOutcome(value)
        try:
            return ToolOutcome(json.dumps(value, ensure_ascii=False, allow_nan=False))
        except (TypeError, ValueError) as exc:
            raise ToolCodeError(
                f"tool {name!r} returned {type(value).__name__}, which cannot be sent as JSON: "
                f"{exc}"
            ) from None


def python_tools(found: Mapping[str, Any]) -> dict[str, PythonTool]:
    """The project's tools by name, each checked to be callable."""
    tools = {}
    for name, function in found.items():
        if not callable(function):
            raise PromptevalError(
                f"pytest_prompteval_tools: tool {name!r} is {type(function).__name__}, not a "
                "function"
            )
        tools[str(name)] = PythonTool(str(name), function)
    return tools
