"""Placeholder filling: ``{name}`` from variables, ``{{``/``}}`` literal, values never re-expanded.

Only ``{identifier}`` is a placeholder; any other brace (JSON or C++ in a prompt) is kept as it
stands, so prompts need no escaping beyond the ``{{``/``}}`` of the seed's format.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

_TOKEN = re.compile(r"\{\{|\}\}|\{([A-Za-z_]\w*)\}")


class TooLarge(ValueError):
    """The filled template would be longer than the limit it was given."""


class MissingVariables(KeyError):
    def __init__(self, names: list[str]):
        super().__init__(names)
        self.names = names


def placeholders(template: str) -> list[str]:
    return [m.group(1) for m in _TOKEN.finditer(template) if m.group(1)]


def literal(text: str) -> str:
    """``text`` as a template that fills to ``text`` itself: each ``{{``, ``}}`` and
    ``{name}`` in it doubled, every other brace left as it stands."""
    return _TOKEN.sub(lambda m: m.group(0).replace("{", "{{").replace("}", "}}"), text)


def format_value(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool | int | float):
        return str(value)
    if isinstance(value, list | tuple) and all(isinstance(v, str | int | float) for v in value):
        return ", ".join(str(v) for v in value)
    return json.dumps(value, ensure_ascii=False)


def fill(template: str, variables: Mapping[str, Any], limit: int | None = None) -> str:
    """One pass over the template; raise MissingVariables listing every unknown placeholder,
    TooLarge as soon as the text would pass ``limit`` characters (a 100 KB value named
    20,000 times is stopped there, not built: 2 GB)."""
    missing = [name for name in placeholders(template) if name not in variables]
    if missing:
        raise MissingVariables(list(dict.fromkeys(missing)))
    values: dict[str, str] = {}  # each value formatted once, however often it is named
    pieces: list[str] = []
    size = start = 0
    for match in _TOKEN.finditer(template):
        name = match.group(1)
        if name is None:
            value = match.group(0)[0]
        elif name in values:
            value = values[name]
        else:
            value = values[name] = format_value(variables[name])
        pieces += (template[start : match.start()], value)
        size += match.start() - start + len(value)
        if limit is not None and size > limit:
            raise TooLarge(limit)
        start = match.end()
    pieces.append(template[start:])
    if limit is not None and size + len(template) - start > limit:
        raise TooLarge(limit)
    return "".join(pieces)
