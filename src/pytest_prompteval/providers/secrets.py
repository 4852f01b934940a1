"""Credentials kept out of every line the plugin writes: an error a platform sends back may
quote what it was given (a token, a key id), and its text goes into results and reports."""

from __future__ import annotations

import os
from collections.abc import Iterable

#: where the SDK's clients read credentials from the environment
CREDENTIAL_VARIABLES = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_BEARER_TOKEN_BEDROCK",
    "ANTHROPIC_VERTEX_ACCESS_TOKEN",
)
#: shorter values are no credential, and replacing them would garble the text
MIN_LENGTH = 8


def scrub(text: str, found: Iterable[str | None] = ()) -> str:
    """``text`` with each credential of the environment, and each of ``found`` (those a
    client resolved elsewhere: a profile, default credentials), replaced by its name."""
    named = [(os.environ.get(name), f"[{name}]") for name in CREDENTIAL_VARIABLES]
    named += [(value, "[credential]") for value in found]
    for value, name in sorted(named, key=lambda pair: -len(pair[0] or "")):
        if value and len(value) >= MIN_LENGTH:
            text = text.replace(value, name)
    return text
