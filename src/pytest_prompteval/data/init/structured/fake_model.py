"""A stand-in for Claude: it made this project's first recordings, so that `pytest` runs
offline at once. Its answers are written by hand below, one per prompt version and case;
every recording it made says so in its note. Replace them with Claude's answers:

    ANTHROPIC_API_KEY=sk-... pytest --prompteval-record=all

It is a `python:` provider (any function of yours can be one, your app's own code path):

    pytest --prompteval-provider=python:fake_model:answer --prompteval-record=all
"""

from __future__ import annotations

import json
from typing import Any

ANSWERS: dict[str, dict[str, dict[str, Any]]] = {
    "v1": {
        "site_down": {"priority": "urgent", "category": "outage", "needs_human": False,
                      "summary": "The shop shows errors to every visitor."},
        "double_charge": {"priority": "normal", "category": "billing", "needs_human": False,
                          "summary": "A customer was charged twice for one order and asks "
                          "for one of the two payments to be refunded to the card."},
        "legal_threat": {"priority": "high", "category": "billing", "needs_human": False,
                         "summary": "A customer disputes a charge."},
    },
    "v2": {
        "site_down": {"priority": "urgent", "category": "outage", "needs_human": False,
                      "summary": "The shop shows errors to every visitor."},
        "double_charge": {"priority": "high", "category": "billing", "needs_human": False,
                          "summary": "Charged twice for order 1234."},
        "legal_threat": {"priority": "high", "category": "billing", "needs_human": True,
                         "summary": "A charge disputed, with a lawyer named."},
    },
}  # fmt: skip


def answer(request: Any, *, case: Any, prompt: Any, sample: int) -> str:
    """The answer of prompt version ``prompt.version`` to ``case``, as JSON text."""
    return json.dumps(ANSWERS[prompt.version][case.id])
