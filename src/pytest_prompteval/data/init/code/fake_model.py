"""A stand-in for Claude: it made this project's first recordings, so that `pytest` runs
offline at once. Its answers are written by hand below, one per prompt version and case;
every recording it made says so in its note. Replace them with Claude's answers:

    ANTHROPIC_API_KEY=sk-... pytest --prompteval-record=all

It is a `python:` provider (any function of yours can be one, your app's own code path):

    pytest --prompteval-provider=python:fake_model:answer --prompteval-record=all
"""

from __future__ import annotations

from typing import Any

FENCE = "```"
CLAMP = '''def clamp(x, low, high):
    """x, kept within low and high."""
    return max(low, min(x, high))'''
WORDS_V1 = '''def count_words(text):
    """The number of words in text."""
    return len(text.split(" "))'''
WORDS_V2 = '''def count_words(text):
    """The number of words in text: runs of white space separate them."""
    return len(text.split())'''
ANSWERS = {
    "v1": {"clamp": CLAMP, "count_words": WORDS_V1},
    "v2": {"clamp": CLAMP, "count_words": WORDS_V2},
}


def answer(request: Any, *, case: Any, prompt: Any, sample: int) -> str:
    """The answer of prompt version ``prompt.version`` to ``case``: code in a fenced block."""
    return f"{FENCE}python\n{ANSWERS[prompt.version][case.id]}\n{FENCE}"
