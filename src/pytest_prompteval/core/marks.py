"""Functions a project marks by name in its conftest.py (``@scorer``, ``@tool``), found
again among the run's plugins."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


def marker(attribute: str, name: str) -> Callable[[F], F]:
    """A decorator that marks a function as ``name`` under ``attribute``."""

    def mark(function: F) -> F:
        setattr(function, attribute, name)
        return function

    return mark


def marked(modules: Iterable[object], attribute: str) -> dict[str, Callable[..., Any]]:
    """The functions marked under ``attribute`` among the attributes of ``modules``."""
    found: dict[str, Callable[..., Any]] = {}
    for module in modules:
        for value in list(vars(module).values()) if hasattr(module, "__dict__") else ():
            name = getattr(value, attribute, None)
            if isinstance(name, str) and callable(value):
                found[name] = value
    return found
