"""Scorer kinds by name, and the choice of an item's kind.

A new kind is one module and one ``register(kind)`` call where the project's plugins load
(a conftest.py, a plugin module): the engine finds it here, and results name it as
``scorer``."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from pytest_prompteval.core.errors import PromptevalError, UserCodeError, user_code_error
from pytest_prompteval.scoring.automatic import expected_topics
from pytest_prompteval.scoring.kinds.builtin import (
    ASSERTIONS_ONLY,
    AUTOMATIC,
    CLAUDE,
    HYBRID,
    AssertionsOnly,
    CodeTests,
    RepositoryTests,
)
from pytest_prompteval.scoring.kinds.protocol import Scored, ScorerKind, Shape
from pytest_prompteval.scoring.score import Score

_KINDS: dict[str, ScorerKind] = {
    k.name: k for k in (AUTOMATIC, CLAUDE, HYBRID, CodeTests(), RepositoryTests(), AssertionsOnly())
}


def register(kind: ScorerKind) -> ScorerKind:
    """Add ``kind`` (replacing one of the same name); returns it."""
    _KINDS[kind.name] = kind
    return kind


def kinds() -> dict[str, ScorerKind]:
    """The registered kinds by name, in registration order."""
    return dict(_KINDS)


def kind(name: str) -> ScorerKind:
    return _KINDS[name]


@contextmanager
def running(kind: ScorerKind, what: str) -> Iterator[None]:
    """A project's kind that raises: its item's error, shown with the project's frames (the
    plugin's own kinds raise as they are: a traceback of ours is ours to fix)."""
    try:
        yield
    except PromptevalError:
        raise
    except Exception as exc:
        if type(kind).__module__.startswith("pytest_prompteval."):
            raise
        raise user_code_error(f"scorer kind {kind.name!r}, {what}", exc) from None


def checked(kind: ScorerKind, scored: object) -> Scored:
    """What a kind returned, if it is a ``Scored`` whose main score is None or in [0, 1]."""
    what = f"scorer kind {kind.name!r} returned"
    if not isinstance(scored, Scored):
        raise UserCodeError(f"{what} {type(scored).__name__}; expected a Scored")
    main = scored.main
    if main is None:
        return scored
    if not isinstance(main, Score):
        raise UserCodeError(
            f"{what} Scored(main={main!r}); expected a Scored whose main is a Score or None"
        )
    value = main.value
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value <= 1.0:
        raise UserCodeError(f"{what} a score of {value!r}, outside [0, 1]")
    return scored


def choose(shape: Shape, setting: str, named: bool) -> ScorerKind:
    """The kind that decides a case: the last registered kind that claims its shape (code
    by its tests, a repository by its tests, a project's own kind). Otherwise the setting's
    (``setting``: automatic, claude or hybrid) fits an answer that explains: it scores a
    case that gives expected topics, a case with nothing else to score it (no ``assert:``),
    and every case when the project names the scorer (``named``: option or ini). Any other
    case, a JSON answer checked by its assertions say, is scored by its assertions alone:
    sentence length of a JSON document is no measure of it."""
    for candidate in reversed(_KINDS.values()):
        with running(candidate, f"choosing for case {shape.case.id!r}"):
            if candidate.claims(shape):
                return candidate
    if named or not shape.assertions or bool(expected_topics(shape.case)):
        return _KINDS[setting]
    return _KINDS[ASSERTIONS_ONLY]
