"""Result dicts for the verdict tests: the fields summary and comparison read."""

from __future__ import annotations

from typing import Any

from scipy import stats as scipy_stats

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


def exact_mcnemar_power(n: int, discordant: float, difference: float, alpha: float) -> float:
    """By brute force with scipy: every number of discordant pairs and every split of them."""
    up = (discordant + difference) / (2 * discordant)
    return float(
        sum(
            scipy_stats.binom.pmf(d, n, discordant) * scipy_stats.binom.pmf(k, d, up)
            for d in range(1, n + 1)
            for k in range(d + 1)
            if scipy_stats.binomtest(k, d).pvalue < alpha
        )
    )
