from __future__ import annotations

from pathlib import Path

import pytest

from pytest_prompteval.core.cases import Case
from pytest_prompteval.core.tables import load_table
from pytest_prompteval.scoring.automatic import AutomaticScorer


def case(**raw: object) -> Case:
    fields = {"id": "c1", "input": raw.pop("input", {}), "path": Path("c.yaml"), "line": 1}
    known = {k: raw[k] for k in ("difficulty", "expected_topics") if k in raw}
    if "expected_topics" in known:
        known["expected_topics"] = tuple(known["expected_topics"])  # type: ignore[arg-type]
    return Case(**fields, **known, raw={**fields, **raw})  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def scorer() -> AutomaticScorer:
    return AutomaticScorer(load_table("scoring"))


GOOD = (
    "The loop optimization walks a pointer through the array instead of an index. "
    "An early exit skips the loop when n is zero, and pointer arithmetic moves rdi by four."
)


def test_topics_patterns_and_keyword_fallback(scorer: AutomaticScorer) -> None:
    result = scorer.score(
        case(
            expected_topics=[
                "loop_optimization",
                "pointer_arithmetic",
                "early_termination",
                "register_pressure",
            ],
            difficulty="advanced",
        ),
        GOOD,
    )
    assert result.missing_topics == ["register_pressure"]
    assert result.dimensions["accuracy"] == 0.75
    assert scorer.covers("register_pressure", "high pressure on every register")


def test_incorrect_claims_cost_technical_accuracy(scorer: AutomaticScorer) -> None:
    text = "The branch predictor will always guess right and the compiler always does this."
    result = scorer.score(case(), text)
    assert len(result.incorrect_claims) == 2
    assert result.dimensions["technical_accuracy"] == pytest.approx(0.6)


def test_length_by_difficulty_with_gradual_penalty(scorer: AutomaticScorer) -> None:
    assert scorer.length_score("x" * 200, "beginner") == 1.0
    assert scorer.length_score("x" * 40, "beginner") == pytest.approx(0.5)
    assert scorer.length_score("x" * 450, "beginner") == pytest.approx(0.5)
    assert scorer.length_score("x" * 700, "expert") == 1.0  # an alias of advanced
    assert scorer.length_score("x" * 10_000, "advanced") == 0.0


def test_clarity_prefers_moderate_sentences_and_term_density(scorer: AutomaticScorer) -> None:
    balanced = (
        "The compiler keeps the running sum in the eax register while it walks through the "
        "array one element at a time. Each time round it adds four bytes to rdi and then "
        "compares that with the end that was computed before the first iteration started."
    )
    rambling = " ".join(["and then it goes on"] * 30) + "."
    assert scorer.clarity_score(balanced) > 0.9
    assert scorer.clarity_score(rambling) == pytest.approx((0 + 2 / 3) / 2)
    assert scorer.clarity_score("") == 0.0


def test_completeness_counts_the_assembly_mnemonics(scorer: AutomaticScorer) -> None:
    asm = [
        {"text": "f:"},
        {"text": "  imul edi, edi"},
        {"text": "  lea eax, [rdi+4]"},
        {"text": "  ret"},
    ]
    result = scorer.score(
        case(input={"asm": asm}, expected_topics=["function_inlining"]),
        "The call was inlined: imul squares and lea adds four.",
    )
    assert result.details["missing_terms"] == ["ret"]
    assert result.dimensions["completeness"] == pytest.approx((1.0 + 2 / 3) / 2)


def test_consistency_only_with_several_samples_and_weights_renormalised(
    scorer: AutomaticScorer,
) -> None:
    single = scorer.score(case(), GOOD)
    assert "consistency" not in single.dimensions
    dims = single.dimensions
    weights = {
        "accuracy": 0.25,
        "technical_accuracy": 0.25,
        "clarity": 0.2,
        "completeness": 0.15,
        "length": 0.1,
    }
    expected = sum(dims[k] * w for k, w in weights.items()) / sum(weights.values())
    assert single.value == pytest.approx(expected, abs=1e-6)

    same = scorer.score(case(), GOOD, [GOOD, GOOD, GOOD])
    assert same.dimensions["consistency"] == 1.0
    varied = scorer.score(case(), GOOD, [GOOD, "Something else entirely about nothing."])
    assert varied.dimensions["consistency"] < 0.2
    assert varied.value < same.value


def test_topics_by_audience_from_the_compat_format(scorer: AutomaticScorer) -> None:
    c = case(
        audience="beginner",
        expected_topics_by_audience={"beginner": ["recursion"], "expert": ["pgo"]},
    )
    assert scorer.score(c, "A recursive call.").missing_topics == []
