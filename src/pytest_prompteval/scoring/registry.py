"""Custom scorers: ``@pytest_prompteval.scorer("name")`` in a conftest (or any plugin module),
the entry-point group ``pytest_prompteval.scorers``, or the ``pytest_prompteval_scorers``
hook. A scorer receives (case, request, response) and returns a number in [0, 1] or a Score.

The decorator only marks the function; each run finds the marked functions in its own
plugins, so nothing registered by one run leaks into the next.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from importlib.metadata import entry_points
from typing import Any, TypeVar

from pytest_prompteval.core.marks import marked, marker

ENTRY_POINT_GROUP = "pytest_prompteval.scorers"
MARK = "__prompteval_scorer__"

ScorerFunction = Callable[..., Any]
F = TypeVar("F", bound=ScorerFunction)


def scorer(name: str) -> Callable[[F], F]:
    """Mark a function as the scorer ``name`` for cases' ``assert:`` entries."""
    return marker(MARK, name)


def marked_scorers(modules: Iterable[object]) -> dict[str, ScorerFunction]:
    """The functions marked with ``@scorer`` among the attributes of ``modules``."""
    return marked(modules, MARK)


def entry_point_scorers() -> Mapping[str, ScorerFunction]:
    return {ep.name: ep.load() for ep in entry_points(group=ENTRY_POINT_GROUP)}
