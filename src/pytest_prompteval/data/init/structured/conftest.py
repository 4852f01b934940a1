"""The project's own scorer: a case names it in its assert list ({short_summary: true})."""

from __future__ import annotations

import json
from typing import Any

import pytest_prompteval


@pytest_prompteval.scorer("short_summary")
def short_summary(case: Any, request: Any, response: Any) -> float:
    """1 for a summary of at most 12 words, less the longer it gets; 0 for no JSON."""
    try:
        words = len(str(json.loads(response.text).get("summary", "")).split())
    except (ValueError, AttributeError):
        return 0.0
    return 1.0 if words <= 12 else 12 / words
