"""Hooks a project implements in ``conftest.py`` to adapt its own prompt format."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pytest_prompteval.core.cases import Case
    from pytest_prompteval.core.prompts import PromptVersion
    from pytest_prompteval.core.request import Request


def pytest_prompteval_template_vars(case: Case, prompt: PromptVersion) -> Mapping[str, Any] | None:
    """Return extra ``{placeholder}`` values for rendering ``prompt`` with ``case``.

    Every implementation is called; their mappings are merged over the built-in variables
    (the case's top-level fields, its ``input`` fields and the seed's ``arch``, ``language``,
    ``compiler``, ``compilation_options``), later plugins winning.
    """


@pytest.hookspec(firstresult=True)
def pytest_prompteval_build_request(
    case: Case, prompt: PromptVersion, variables: Mapping[str, Any]
) -> Request | Mapping[str, Any] | None:
    """Build the request for ``case`` x ``prompt`` yourself, e.g. with production code.

    Return a :class:`pytest_prompteval.Request`, or the keyword arguments of
    ``client.messages.create`` (``model``, ``system``, ``messages``, ``max_tokens``, ...), or
    None to use the default rendering. ``variables`` are the template variables including
    those from :func:`pytest_prompteval_template_vars`.
    """


def pytest_prompteval_scorers() -> Mapping[str, Callable[..., Any]] | None:
    """Return custom scorers by name, for cases' ``assert:`` entries and ``check()``.

    A scorer receives ``(case, request, response)`` and returns a number in [0, 1] or a
    :class:`pytest_prompteval.Score`. Every implementation is called; later plugins win.
    """


def pytest_prompteval_tools() -> Mapping[str, Callable[..., Any]] | None:
    """Return Python tools by name, for agent cases (a bare name in ``tools:``).

    A tool is called with the call's input as keyword arguments and returns a string or a
    JSON-able value; an exception is an ``is_error`` result. Every implementation is called;
    later plugins win.
    """


def pytest_prompteval_case_fields() -> Iterable[str] | None:
    """Return names of extra top-level case fields this project uses (for its templates or
    hooks). The plugin rejects any case field it does not know, so a typo such as
    ``assertions:`` is an error; fields claimed here (or in ini ``prompteval_case_fields``)
    are accepted and kept in ``case.raw``. Every implementation is called."""


def pytest_prompteval_prompt_fields() -> Iterable[str] | None:
    """Like :func:`pytest_prompteval_case_fields`, for prompt version files (ini
    ``prompteval_prompt_fields``)."""
