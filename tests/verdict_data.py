"""Result dicts for the verdict tests: the fields summary and comparison read."""

from __future__ import annotations

from typing import Any

from pytest_prompteval.core.result import ItemResult


def item(
    prompt: str,
    case: str,
    score: float | None,
    *,
    threshold: float = 0.7,
    sample: int = 0,
    error_type: str | None = None,
    **extra: Any,
) -> ItemResult:
    passed = error_type is None and score is not None and score >= threshold
    return ItemResult.from_json(
        {
            "prompt": prompt,
            "file": "c.yaml",
            "case_id": case,
            "sample": sample,
            "category": extra.pop("category", None),
            "difficulty": extra.pop("difficulty", None),
            "quality": None,
            "scorer": "automatic",
            "threshold": threshold,
            "passed": passed,
            "score": score,
            "automatic_score": score,
            "dimensions": {},
            "assertions": [],
            "missing_topics": [],
            "incorrect_claims": [],
            "input_tokens": 0,
            "output_tokens": 0,
            "cost_usd": None,
            "latency_ms": None,
            "replayed": True,
            "response": None if error_type else "answer",
            "error_type": error_type,
            "error": None,
            **extra,
        }
    )
