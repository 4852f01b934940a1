"""What one item leaves on its report."""

from __future__ import annotations

#: The ``user_properties`` key of an item's result.
RESULT_KEY = "prompteval"
#: The ``user_properties`` key of a sample --prompteval-stop-early did not draw (its version).
STOPPED_EARLY_KEY = "prompteval_stopped_early"
