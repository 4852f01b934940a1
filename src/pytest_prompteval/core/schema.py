"""Known keys of every file we read: a key we do not know is a typo until declared otherwise.

A misspelt field (``assertions:`` for ``assert:``) used to be kept and ignored, so its checks
never ran. Every loader now passes its mappings through ``check_keys``, which names the first
unknown key with its line and the closest known one.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_prompteval.core.errors import PromptevalError
from pytest_prompteval.core.yamlload import line_of


@dataclass(frozen=True)
class Declared:
    """Extra top-level fields a project declares for its cases and prompt versions (ini
    ``prompteval_case_fields``/``prompteval_prompt_fields`` and the matching hooks): data
    its templates and hooks read, which the plugin itself ignores."""

    case_fields: frozenset[str] = frozenset()
    prompt_fields: frozenset[str] = frozenset()


def suggestion(key: str, known: Collection[str]) -> str:
    """``; did you mean 'assert'?`` when a known key is close enough, else ''."""
    close = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def unknown_key(
    key: str, known: Collection[str], where: str, path: Path | str, line: int | None, hint: str = ""
) -> PromptevalError:
    return PromptevalError(
        f"{where}unknown field {key!r}{suggestion(key, known) or hint}", path, line
    )


def check_keys(
    node: Mapping[str, Any],
    known: Collection[str],
    path: Path | str,
    where: str = "",
    hint: str = "",
) -> None:
    """Raise for the first key of ``node`` not in ``known``; ``where`` prefixes the message
    (``"case 'a1', "``), ``hint`` says how to declare a field when nothing is close."""
    for key in node:
        if key not in known:
            raise unknown_key(key, known, where, path, line_of(node, key), hint)
