"""Claude's model ids as Amazon Bedrock and Google Vertex AI spell them, mapped to the Anthropic
API's: one logical model has one id for recording keys and prices, whatever the platform.

- Bedrock: ``anthropic.claude-sonnet-4-5-20250929-v1:0``, with a cross-region inference
  prefix (``us.``, ``eu.``, ``apac.``, ``global.``) or without;
- Vertex AI: ``claude-sonnet-4-5@20250929`` (and ``claude-3-5-sonnet-v2@20241022``).

String operations, not a pattern: a model id comes from a prompt file a pull request may
change, and is read in time linear in its length.
"""

from __future__ import annotations

BEDROCK_VENDOR = "anthropic."
#: the longest cross-region inference prefix Bedrock has, with its dot ("global.")
_MAX_REGION_PREFIX = 8


def _digits(text: str) -> bool:
    return text.isascii() and text.isdigit()


def _without_version(name: str) -> str:
    """``name`` without a trailing ``-v2`` (Vertex) or ``-v1:0`` (Bedrock)."""
    stem, dash_v, version = name.rpartition("-v")
    number, colon, revision = version.partition(":")
    if dash_v and _digits(number) and (not colon or _digits(revision)):
        return stem
    return name


def canonical_model(model: str) -> str:
    """The Anthropic API's id of a platform's model id; any other id unchanged."""
    region, vendor, rest = model.partition(BEDROCK_VENDOR)
    if vendor:
        prefix = region[:-1]
        regional = len(region) <= _MAX_REGION_PREFIX and prefix.isascii() and prefix.isalpha()
        if region and not (regional and region.endswith(".")):
            return model
        name = _without_version(rest)
    elif "@" in model:
        base, _, date = model.partition("@")
        if not _digits(date):
            return model
        name = f"{_without_version(base)}-{date}"
    else:
        return model
    return name if name.startswith("claude-") else model
