"""What one item leaves on its report."""

from __future__ import annotations

#: The ``user_properties`` key of an item's result.
RESULT_KEY = "prompteval"
