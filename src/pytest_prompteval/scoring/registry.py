"""Custom scorers: ``@pytest_prompteval.scorer("name")`` or the entry-point group
``pytest_prompteval.scorers``. A scorer receives (case, request, response) and returns a
number in [0, 1] or a Score."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from importlib.metadata import entry_points
from typing import Any, TypeVar

ENTRY_POINT_GROUP = "pytest_prompteval.scorers"

ScorerFunction = Callable[..., Any]
F = TypeVar("F", bound=ScorerFunction)

_registered: dict[str, ScorerFunction] = {}


def scorer(name: str) -> Callable[[F], F]:
    """Register a function as the scorer ``name`` for cases' ``assert:`` entries."""

    def register(function: F) -> F:
        _registered[name] = function  # a re-imported conftest replaces its own earlier entry
        return function

    return register


@cache
def _entry_point_scorers() -> dict[str, ScorerFunction]:
    return {ep.name: ep.load() for ep in entry_points(group=ENTRY_POINT_GROUP)}


def registered_scorers() -> dict[str, ScorerFunction]:
    return {**_entry_point_scorers(), **_registered}
