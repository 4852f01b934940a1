"""YAML written for people to read: case files the ``import`` commands make."""

from __future__ import annotations

from typing import Any

import yaml

from pytest_prompteval.core.yamlload import MarkedDict


class _Literal(str):
    """Multi-line text written as a YAML block, readable in the case file."""


class _Dumper(yaml.SafeDumper):
    pass


def _literal(dumper: yaml.SafeDumper, text: _Literal) -> yaml.ScalarNode:
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style="|")


_Dumper.add_representer(_Literal, _literal)
_Dumper.add_representer(MarkedDict, yaml.SafeDumper.represent_dict)  # a mapping read from YAML


def block(text: str) -> str:
    """``text``, marked to be written as a literal block when it spans lines."""
    return _Literal(text) if "\n" in text else text


def dump(data: Any) -> str:
    """``data`` as YAML in the order given, ``block`` texts as literal blocks."""
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)
