"""A stand-in for Claude: it made this project's first recordings, so that `pytest` runs
offline at once. Its answers are written by hand below, one per prompt version and case;
every recording it made says so in its note. Replace them with Claude's answers:

    ANTHROPIC_API_KEY=sk-... pytest --prompteval-record=all

It is a `python:` provider (any function of yours can be one, your app's own code path):

    pytest --prompteval-provider=python:fake_model:answer --prompteval-record=all
"""

from __future__ import annotations

from typing import Any

ANSWERS = {
    "v1": {
        "return_window": "Thanks for asking! You can return any item, a jacket included, "
        "within 30 days of delivery. Just pack it in its original box, print the label from "
        "your account and drop it at any post office. Refunds usually take a few days after "
        "we receive it. Let us know if there is anything else we can help you with today!",
        "shipping_time": "Orders ship in 2-4 working days.",
        "human_contact": "You can call our support team by phone any time.",
    },
    "v2": {
        "return_window": "You can return the jacket within 30 days of delivery.",
        "shipping_time": "Your order arrives in 2-4 working days.",
        "human_contact": "Write to help@example.com and a person will answer.",
    },
}


def answer(request: Any, *, case: Any, prompt: Any, sample: int) -> str:
    """The answer of prompt version ``prompt.version`` to ``case``."""
    return ANSWERS[prompt.version][case.id]
