"""``ablate:``: a prompt version derived from another by removing one named part, so that
``--compare`` measures what the part is worth with the paired test.

``prompts/support_no_refund.yaml``::

    ablate: {from: support, remove: tool issue_refund}

``remove`` is ``system_prompt``, ``tool NAME`` (the tool leaves the version's tools) or
``tool_description NAME`` (its definition keeps name and schema, without description); a
list removes several. The derived version is the other one's fields, less the part.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pytest_prompteval.core.errors import PromptevalError, display
from pytest_prompteval.core.schema import check_keys, suggestion
from pytest_prompteval.core.yamlload import MarkedDict

ABLATION_FIELDS = ("ablate", "name", "description")
ABLATE_KEYS = ("from", "remove")
PARTS = ("system_prompt", "tool", "tool_description")


def ablated(
    data: MarkedDict, path: Path, base: Callable[[Path], MarkedDict]
) -> tuple[MarkedDict, Path]:
    """The fields of the version ``data``'s ``ablate:`` derives (``base`` reads the version
    it names), and that version's file."""
    check_keys(data, ABLATION_FIELDS, path, "an ablation: ")
    spec = data["ablate"]
    line = data.line_of("ablate")

    def fail(message: str) -> PromptevalError:
        return PromptevalError(f"ablate: {message}", path, line)

    if not isinstance(spec, Mapping):
        raise fail("expected {from: VERSION, remove: PART} (PART: system_prompt, tool NAME, "
                   "tool_description NAME)")  # fmt: skip
    check_keys(spec, ABLATE_KEYS, path, "ablate: ")
    name = spec.get("from")
    found = {p.stem: p for p in sorted(path.parent.glob("*.y*ml")) if p != path}
    if not isinstance(name, str) or name not in found:
        raise fail(
            f"from: no prompt version {name!r} in {display(path.parent)}"
            f"{suggestion(str(name), found)}"
        )
    source = base(found[name])
    if "ablate" in source:
        raise fail(f"from: {name!r} is itself an ablation; derive from the version it names")
    removals = spec.get("remove")
    removals = [removals] if isinstance(removals, str) else removals
    if not isinstance(removals, list) or not removals:
        raise fail("remove: expected a part (system_prompt, tool NAME, tool_description NAME)")
    derived = MarkedDict(copy.deepcopy(dict(source)))
    derived.line, derived.key_lines = source.line, dict(source.key_lines)
    for removal in removals:
        _remove(derived, str(removal), name, fail)
    for key in ("name", "description"):
        if key in data:
            derived[key] = data[key]
    return derived, found[name]


def _remove(
    data: MarkedDict, removal: str, name: str, fail: Callable[[str], PromptevalError]
) -> None:
    part, _, target = removal.partition(" ")
    if part not in PARTS or (part == "system_prompt") == bool(target):
        raise fail(f"remove: unknown part {removal!r}{suggestion(part, PARTS)} (expected "
                   "system_prompt, tool NAME or tool_description NAME)")  # fmt: skip
    if part == "system_prompt":
        if data.pop("system_prompt", None) is None:
            raise fail(f"remove: {name!r} has no system_prompt")
        if data.get("user_prompt") is None:
            raise fail(f"remove: without its system_prompt {name!r} has no prompt left")
        return
    tools: list[Any] = list(data.get("tools") or [])
    names = [t if isinstance(t, str) else str(t.get("name")) for t in tools]
    if target not in names:
        raise fail(f"remove: {name!r} has no tool {target!r}{suggestion(target, names)}")
    index = names.index(target)
    if part == "tool":
        del tools[index]
    elif isinstance(tools[index], str):
        raise fail(
            f"remove: tool {target!r} is a Python tool, described by its docstring; give its "
            "definition in the version to ablate its description"
        )
    else:
        tools[index] = {k: v for k, v in tools[index].items() if k != "description"}
    data["tools"] = tools
