"""Regular expressions, compiled by RE2, whose matching time is linear in the text's length:
a pattern such as ``^(a+)+$`` (from an assertion or a project's scoring table), or one of ours
on a crafted answer (``"!" * n + "x"``), cannot hang a run. Every pattern the plugin runs on an
answer or a project file is made here. RE2 has no lookaround and no backreferences; such a
pattern from a file is an error at collection, naming where it came from.

RE2's ``\\w``, ``\\s``, ``\\d`` and ``\\b`` are ASCII; where Python's Unicode meaning matters,
``WORD``, ``SPACE`` and ``boundary`` stand in for them.
"""

from __future__ import annotations

import functools
from typing import Any

#: Python's ``\\w`` (a letter, a number or ``_``) and ``\\s`` (``str.isspace``), for RE2
WORD = r"[\pL\pN_]"
SPACE = r"[\s\x0b\x1c-\x1f\x85\pZ]"


class PatternError(ValueError):
    pass


@functools.lru_cache(maxsize=1024)
def pattern(source: str, ignore_case: bool = False) -> Any:
    import re2  # type: ignore[import-untyped]

    options = re2.Options()
    options.log_errors = False  # the error is ours to report, not RE2's to print
    options.case_sensitive = not ignore_case
    try:
        return re2.compile(source, options)
    except re2.error as exc:
        why = exc.args[0].decode(errors="replace") if exc.args else "invalid"
        raise PatternError(
            f"invalid regular expression: {why} (patterns run on RE2, in linear time: no "
            "lookaround, no backreferences)"
        ) from None


def escape(text: str) -> str:
    import re2

    escaped: str = re2.escape(text)
    return escaped


def boundary(char: str, before: bool) -> str:
    """Python's Unicode ``\\b`` before (or after) ``char``. RE2 has no lookbehind, so the
    neighbouring character is matched, not looked at: right for a yes-or-no search."""
    if char.isalnum() or char == "_":
        return r"(?:^|[^\pL\pN_])" if before else r"(?:$|[^\pL\pN_])"
    return WORD


def whole_word(literal: str) -> Any:
    """``\\b<literal>\\b`` in any case, as Python's ``re`` would mean it."""
    if not literal:
        return pattern(WORD)  # ``\b\b``: any text with a word character
    return pattern(
        boundary(literal[0], True) + escape(literal) + boundary(literal[-1], False), True
    )
