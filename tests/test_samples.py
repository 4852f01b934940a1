"""Several samples per case: independent recordings, and a consistency dimension for real."""

from __future__ import annotations

import json

import pytest

APP = """
CALLS = []
TEXTS = [
    "The loop optimization unrolls the loop body four times over.",
    "The loop optimization unrolls the loop body four times over.",
    "Vectorization packs four integers in one SSE register instead.",
]

def answer(request, *, case, prompt, sample):
    CALLS.append(sample)
    return TEXTS[sample]
"""


def test_samples_are_recorded_once_each_and_scored_for_consistency(
    pytester: pytest.Pytester, xdist_args: list[str]
) -> None:
    pytester.mkdir("prompts").joinpath("v.yaml").write_text("user_prompt: Explain.\n")
    pytester.mkdir("prompt_cases").joinpath("c.yaml").write_text(
        "cases:\n- id: c1\n  expected_topics: [loop_optimization]\n  input: {}\n"
    )
    pytester.makepyfile(myapp=APP)
    pytester.makeini("[pytest]\npythonpath = .\n")
    args = [
        "--prompt=v",
        "--prompteval-samples=3",
        "--prompteval-provider=python:myapp:answer",
        "--json-report",
        "--json-report-file=r.json",
        *xdist_args,
    ]
    pytester.runpytest(*args).assert_outcomes(passed=3)
    report = json.loads(pytester.path.joinpath("r.json").read_text())
    results = {t["nodeid"]: t["metadata"]["prompteval"] for t in report["tests"]}
    assert sorted(results) == [f"prompt_cases/c.yaml::c1[v-s{i}]" for i in range(3)]
    consistency = {r["dimensions"]["consistency"] for r in results.values()}
    assert len(consistency) == 1  # every sample item sees all samples
    (value,) = consistency
    # Pairs: s0~s1 identical (1.0); s2 shares one word of 16 with each ("four").
    assert value == pytest.approx((1 + 1 / 16 + 1 / 16) / 3, abs=1e-6)
    recordings = [
        json.loads(p.read_text())
        for p in pytester.path.joinpath("prompt_recordings").glob("*.json")
    ]
    assert sorted(r["sample"] for r in recordings) == [0, 1, 2]
    assert {r["origin"] for r in recordings} == {"python:myapp:answer"}

    # Replay: the same figures, no provider needed.
    replay = pytester.runpytest("--prompt=v", "--prompteval-samples=3", "--prompteval-record=none")
    replay.assert_outcomes(passed=3)
