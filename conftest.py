"""The example suite's adaptation: audience guidance for the prompts' {audience_guidance}.

This is the pytest_prompteval_template_vars hook a project uses to feed its own prompt
variables; see docs/guides/hooks.md.
"""

from __future__ import annotations

from typing import Any

AUDIENCE_GUIDANCE = {
    "beginner": "Define each technical term the first time you use it; use short sentences.",
    "experienced": "Assume assembly fluency; focus on why the compiler chose these instructions.",
}


def pytest_prompteval_template_vars(case: Any, prompt: Any) -> dict[str, str]:
    audience = case.raw.get("audience", "beginner")
    return {"audience": audience, "audience_guidance": AUDIENCE_GUIDANCE[audience]}
