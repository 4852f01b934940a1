"""What changed between two prompt versions' texts and model settings, as summary lines."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from pytest_prompteval.core.prompts import TEMPLATE_FIELDS, PromptVersion

#: changed lines shown per field; the counts cover all of them
SHOWN_LINES = 6


def prompt_changes(old: PromptVersion, new: PromptVersion) -> list[str]:
    """Lines saying how ``new`` differs from ``old``: per template field, lines added and
    removed with the first few of them; per model setting, the old and new value."""
    lines: list[str] = []
    for key in TEMPLATE_FIELDS:
        lines += _text_change(key, getattr(old, key) or "", getattr(new, key) or "")
    lines += _settings_change(old.model_config, new.model_config)
    header = f"{old.version} -> {new.version}"
    if not lines:
        return [f"{header}: prompt texts and model settings identical"]
    return [f"{header}:", *lines]


def _text_change(key: str, old: str, new: str) -> list[str]:
    if old == new:
        return []
    diff = [
        line
        for line in difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]
    added = sum(1 for line in diff if line.startswith("+"))
    removed = len(diff) - added
    shown = [f"    {line}" for line in diff[:SHOWN_LINES]]
    if len(diff) > SHOWN_LINES:
        shown.append(f"    ... {len(diff) - SHOWN_LINES} more changed lines")
    return [f"  {key}: +{added} -{removed} lines", *shown]


def _settings_change(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    missing = "(unset)"
    return [
        f"  model_config.{key}: {old.get(key, missing)} -> {new.get(key, missing)}"
        for key in sorted({*old, *new})
        if old.get(key, missing) != new.get(key, missing)
    ]
