"""The project's own scorer: a case names it in its assert list ({says_what_changed: true})."""

from __future__ import annotations

from typing import Any

import pytest_prompteval

# The repositories are the tasks' snapshots: their tests run in the sandbox only.
collect_ignore = ["repos"]


@pytest_prompteval.scorer("says_what_changed")
def says_what_changed(case: Any, request: Any, response: Any) -> float:
    """1 when the agent's last words name the file it changed, else 0."""
    return 1.0 if ".py" in response.text else 0.0
