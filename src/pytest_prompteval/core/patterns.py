"""Regular expressions from repository content (assertions, a project's scoring table),
compiled by RE2, whose matching time is linear in the text's length: a pattern such as
``^(a+)+$`` cannot hang a run on a hostile answer. RE2 has no lookaround and no
backreferences; such a pattern is an error at collection, naming where it came from."""

from __future__ import annotations

import functools
from typing import Any


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
