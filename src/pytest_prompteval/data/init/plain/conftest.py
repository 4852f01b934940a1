"""The project's own scorer: a case names it in its assert list ({concise: true})."""

from __future__ import annotations

from typing import Any

import pytest_prompteval


@pytest_prompteval.scorer("concise")
def concise(case: Any, request: Any, response: Any) -> float:
    """1 for an answer of at most 40 words, less the longer it gets."""
    words = len(response.text.split())
    return 1.0 if words <= 40 else 40 / words
