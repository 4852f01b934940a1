"""Data tables shipped with the plugin (``data/*.yaml``), merged with a project's own file."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from pytest_prompteval.core.errors import PromptevalError
from pytest_prompteval.core.yamlload import load_yaml


def merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """Mappings merge key by key; any other value in ``override`` replaces the base one."""
    result = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = merge(result[key], value)
        else:
            result[key] = value
    return result


def load_table(name: str, override: Path | None = None) -> dict[str, Any]:
    text = resources.files("pytest_prompteval").joinpath(f"data/{name}.yaml").read_text()
    table: dict[str, Any] = yaml.safe_load(text)
    if override is None:
        return table
    extra = load_yaml(override)
    if not isinstance(extra, dict):
        raise PromptevalError(f"expected a mapping shaped like the plugin's {name}.yaml", override)
    return merge(table, extra)
