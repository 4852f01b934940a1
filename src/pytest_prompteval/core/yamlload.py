"""YAML loading that keeps the line of every mapping and key, for error messages."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from pytest_prompteval.core.errors import PromptevalError
from pytest_prompteval.core.paths import MAX_FILE_BYTES, read_bounded

#: libyaml's parser where PyYAML has it: the same values, about ten times faster.
SafeLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

#: Values an alias may stand for, summed over a file: aliases share one object, but
#: ``json.dumps`` and templates expand them (548 bytes of nested aliases are billions).
MAX_ALIAS_NODES = 1_000_000
#: Characters of text aliases may add to a file, summed over its aliases: 1,000 aliases of
#: one 10 MB string are under the count above, and 10 GB once a request is built from them.
MAX_ALIAS_CHARS = MAX_FILE_BYTES


class AliasBomb(Exception):
    """Raised while parsing; reported as a PromptevalError with the alias's line."""

    def __init__(self, line: int, message: str):
        super().__init__(message)
        self.line = line


class MarkedDict(dict[str, Any]):
    """A mapping from YAML that remembers where it and each of its keys stand (1-based lines)."""

    line: int = 0
    key_lines: dict[str, int]

    def line_of(self, key: str) -> int:
        return self.key_lines.get(key, self.line)


class _MarkedLoader(SafeLoader):  # type: ignore[misc,valid-type]
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


def load_yaml(path: Path, limit: int = MAX_FILE_BYTES) -> Any:
    """Parse one YAML file (a regular file of at most ``limit`` bytes); a syntax error or an
    alias bomb becomes a PromptevalError naming file and line."""
    try:
        text = read_bounded(path, limit).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PromptevalError(f"cannot read file: not UTF-8 ({exc.reason})", path) from None
    return parse_yaml(text, path)


def parse_yaml(text: str, path: Path | str) -> Any:
    try:
        try:
            return _from_events(text)
        except _Unusual:
            return _from_nodes(text)
    except AliasBomb as exc:
        raise PromptevalError(str(exc), path, exc.line) from None
    except RecursionError:
        raise PromptevalError("invalid YAML: nested too deeply", path) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        problem = " ".join(p for p in (exc.context, exc.problem) if p)
        raise PromptevalError(f"invalid YAML: {problem}", path, line) from None
    except yaml.YAMLError as exc:
        raise PromptevalError(f"invalid YAML: {exc}", path) from None


def _from_nodes(text: str) -> Any:
    loader = _MarkedLoader(text)  # a SafeLoader subclass
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _expanded_size(node, {}, set(), [0, 0])
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _expanded_size(
    node: yaml.Node, sizes: dict[int, tuple[int, int]], open_: set[int], aliased: list[int]
) -> tuple[int, int]:
    """Values and characters of text ``node`` stands for once every alias is expanded; a
    node met again is an alias, whose size counts against the bounds."""
    ident = id(node)
    if ident in sizes:
        _count_alias(aliased, sizes[ident], node.start_mark.line + 1)
        return sizes[ident]
    if ident in open_:
        raise AliasBomb(node.start_mark.line + 1, "invalid YAML: an alias refers to itself")
    size, chars = 1, 0
    if isinstance(node, yaml.CollectionNode):
        open_.add(ident)
        children = (
            node.value
            if isinstance(node, yaml.SequenceNode)
            else [child for pair in node.value for child in pair]
        )
        for child in children:
            values, text = _expanded_size(child, sizes, open_, aliased)
            size, chars = size + values, chars + text
        open_.discard(ident)
    else:
        chars = len(node.value)
    sizes[ident] = size, chars
    return size, chars


def _count_alias(aliased: list[int], size: tuple[int, int], line: int) -> None:
    """Add an alias's (values, characters) to the file's running totals, within bounds."""
    aliased[0] += size[0]
    aliased[1] += size[1]
    if aliased[0] > MAX_ALIAS_NODES:
        raise AliasBomb(
            line,
            f"YAML aliases expand to more than {MAX_ALIAS_NODES:,} values; "
            "repeat the data or use fewer nested aliases",
        )
    if aliased[1] > MAX_ALIAS_CHARS:
        raise AliasBomb(
            line,
            f"YAML aliases expand to more than {MAX_ALIAS_CHARS:,} characters of text; "
            "repeat the data or alias less of it",
        )


# The fast path: values built straight from the parser's events, without the node graph
# the constructor builds first (for 10,000 cases that graph costs more than the parse).
# What it does not handle (merge keys, explicit tags other than the standard ones, complex
# keys, several documents) goes to the constructor above, which also words its errors.


class _Unusual(Exception):
    pass


_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"
_STR = "tag:yaml.org,2002:str"
_SCALARS = {
    f"tag:yaml.org,2002:{name}": getattr(yaml.SafeLoader, f"construct_yaml_{name}")
    for name in ("null", "bool", "int", "float", "timestamp")
}
_NO_KEY = object()
#: the tag of a plain scalar depends on its text alone (the loader's resolvers are fixed)
_PLAIN_TAGS: dict[str, str] = {}


def _scalar(loader: Any, event: Any) -> Any:
    tag = event.tag
    if tag is None or tag == "!":
        if not event.implicit[0]:  # quoted, a block or "!": a string, as the resolver says
            tag = _STR
        else:  # plain: its tag follows from its text alone, found once per short value
            tag = _PLAIN_TAGS.get(event.value)
            if tag is None:
                tag = loader.resolve(yaml.ScalarNode, event.value, event.implicit)
                if len(event.value) <= 64 and len(_PLAIN_TAGS) < 4096:
                    _PLAIN_TAGS[event.value] = tag
    if tag == _STR:
        return event.value
    construct = _SCALARS.get(tag)
    if construct is None:
        raise _Unusual
    node = yaml.ScalarNode(tag, event.value, event.start_mark, event.end_mark, event.style)
    return construct(loader, node)


def _from_events(text: str) -> Any:
    loader = SafeLoader(text)
    try:
        return _build(loader)
    finally:
        loader.dispose()


def _build(loader: Any) -> Any:
    anchors: dict[str, Any] = {}
    # anchor -> (values, characters of text) it stands for, aliases expanded
    sizes: dict[str, tuple[int, int]] = {}
    aliased = [0, 0]
    # open containers: [container, pending key (mappings), line of that key, values,
    # anchor, characters]
    stack: list[list[Any]] = []
    root: Any = None
    documents = 0
    while True:
        event = loader.get_event()
        kind = type(event)
        size, chars = 1, 0
        if kind is yaml.ScalarEvent:
            value = _scalar(loader, event)
            chars = len(event.value)
            if event.anchor is not None:
                sizes[event.anchor] = 1, chars
                anchors[event.anchor] = value
        elif kind in (yaml.MappingStartEvent, yaml.SequenceStartEvent):
            container = _opened(event, kind is yaml.MappingStartEvent)
            if event.anchor is not None:
                anchors[event.anchor] = container
            stack.append([container, _NO_KEY, 0, 1, event.anchor, 0])
            continue
        elif kind in (yaml.MappingEndEvent, yaml.SequenceEndEvent):
            value, _, _, size, anchor, chars = stack.pop()
            if anchor is not None:
                sizes[anchor] = size, chars
        elif kind is yaml.AliasEvent:
            if event.anchor not in sizes:
                raise _Unusual  # unknown, or refers to itself: the constructor reports it
            value = anchors[event.anchor]
            size, chars = sizes[event.anchor]
            _count_alias(aliased, sizes[event.anchor], event.start_mark.line + 1)
        elif kind is yaml.DocumentStartEvent:
            documents += 1
            if documents > 1:
                raise _Unusual
            continue
        elif kind is yaml.StreamEndEvent:
            return root
        else:
            continue
        if not stack:
            root = value
            continue
        top = stack[-1]
        top[3] += size
        top[5] += chars
        _place(top, value, event, kind is yaml.ScalarEvent)


def _opened(event: Any, mapping: bool) -> Any:
    """The empty mapping or list a start event opens; an unusual tag is the constructor's."""
    if event.tag not in (None, "!", _MAP if mapping else _SEQ):
        raise _Unusual
    if not mapping:
        return []
    container = MarkedDict()
    container.line = event.start_mark.line + 1
    container.key_lines = {}
    return container


def _place(top: list[Any], value: Any, event: Any, scalar: bool) -> None:
    """``value`` into the open container ``top``: a list's next item, a mapping's next key
    (with its line) or the value of the key before it."""
    if not isinstance(top[0], MarkedDict):
        top[0].append(value)
    elif top[1] is not _NO_KEY:
        top[0][top[1]] = value
        top[0].key_lines[top[1]] = top[2]
        top[1] = _NO_KEY
    elif not scalar:
        raise _Unusual  # a complex or aliased key
    else:
        top[1] = value if isinstance(value, str) else str(value)
        top[2] = event.start_mark.line + 1


def line_of(node: Any, key: str | None = None) -> int | None:
    if isinstance(node, MarkedDict):
        return node.line_of(key) if key is not None else node.line
    return None
