"""The item result is written in one place: frozen, built by engine/assemble.py."""

from __future__ import annotations

import dataclasses

import pytest

from pytest_prompteval.core.result import CheckResult, ItemResult, JudgeResult, RepoResult
from pytest_prompteval.core.usage import Usage, total

from .verdict_data import item


def test_a_result_and_its_parts_cannot_be_changed_after_they_are_built() -> None:
    result = item("v", "c", 0.9)
    check = CheckResult("contains", True, 1.0, 1.0, "found")
    judge = JudgeResult(0.9, {}, "", [], 0.0, "m", "t")
    repo = RepoResult(True, {}, [], [], 1.0, 1.0, "")
    for value, name in ((result, "passed"), (check, "passed"), (judge, "score"), (repo, "diff")):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(value, name, None)
    # a variant is a new value; the JSON of the old one is as it was
    changed = dataclasses.replace(result, passed=False)
    assert (result.passed, changed.passed) == (True, False)
    assert ItemResult.from_json(result.to_json()) == result


def test_usage_adds_up_in_one_place() -> None:
    calls = [
        Usage(10, 5, cache_read_tokens=100, cost_usd=0.25, latency_ms=1.5, calls=1, replayed=1),
        Usage(20, 5, cache_write_tokens=7, unpriced=1, latency_ms=2.0, calls=1),
    ]
    summed = total(calls)
    # cache reads stay apart from input tokens; a call without a price is counted, not priced
    assert (summed.input_tokens, summed.cache_read_tokens, summed.cache_write_tokens) == (
        30,
        100,
        7,
    )
    assert (summed.cost_usd, summed.unpriced, summed.latency_ms) == (0.25, 1, 3.5)
    assert (summed.calls, summed.replayed, summed.live) == (2, 1, 1)
    assert total([]) == Usage()
