"""The project's own scorer: a case names it in its assert list ({no_apology: true})."""

from __future__ import annotations

from typing import Any

import pytest_prompteval


@pytest_prompteval.scorer("no_apology")
def no_apology(case: Any, request: Any, response: Any) -> float:
    """1 for a final answer that does not apologise, else 0."""
    return 0.0 if "sorry" in response.text.lower() else 1.0
