"""YAML loading that keeps the line of every mapping and key, for error messages."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from pytest_prompteval.errors import PromptevalError

_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class MarkedDict(dict[str, Any]):
    """A mapping from YAML that remembers where it and each of its keys stand (1-based lines)."""

    line: int = 0
    key_lines: dict[str, int]

    def line_of(self, key: str) -> int:
        return self.key_lines.get(key, self.line)


class _MarkedLoader(_Loader):  # type: ignore[misc,valid-type]
    pass


def _construct_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode) -> MarkedDict:
    loader.flatten_mapping(node)
    result = MarkedDict()
    result.line = node.start_mark.line + 1
    result.key_lines = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if not isinstance(key, str):
            key = str(key)
        result[key] = loader.construct_object(value_node, deep=True)
        result.key_lines[key] = key_node.start_mark.line + 1
    return result


_MarkedLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
    _construct_mapping,
)


def load_yaml(path: Path) -> Any:
    """Parse one YAML file; a syntax error becomes a PromptevalError naming file and line."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PromptevalError(f"cannot read file: {exc}", path) from None
    try:
        return yaml.load(text, Loader=_MarkedLoader)  # a SafeLoader subclass
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        problem = " ".join(p for p in (exc.context, exc.problem) if p)
        raise PromptevalError(f"invalid YAML: {problem}", path, line) from None
    except yaml.YAMLError as exc:
        raise PromptevalError(f"invalid YAML: {exc}", path) from None


def line_of(node: Any, key: str | None = None) -> int | None:
    if isinstance(node, MarkedDict):
        return node.line_of(key) if key is not None else node.line
    return None
