"""The project's own scorer: a case names it in its assert list ({documented: true})."""

from __future__ import annotations

from typing import Any

import pytest_prompteval


@pytest_prompteval.scorer("documented")
def documented(case: Any, request: Any, response: Any) -> float:
    """1 when the answer's function has a docstring, else 0."""
    return 1.0 if '"""' in response.text else 0.0
