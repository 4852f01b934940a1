from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_prompteval.core.errors import PromptevalError
from pytest_prompteval.core.stats import agreement, ranks, spearman
from pytest_prompteval.scoring.judge import load_review_templates, verdict_schema

from .conftest import COMPAT

RUBRIC = COMPAT / "2025-05" / "review_templates.yaml"


@pytest.mark.skipif(not RUBRIC.exists(), reason="compatibility corpus not found")
def test_the_compat_rubric_loads_with_its_weights() -> None:
    templates = load_review_templates(RUBRIC)
    default = templates["default_review"]
    assert {k: w for k, (w, _) in default.dimensions.items()} == {
        "technical_accuracy": 0.30,
        "educational_value": 0.25,
        "clarity_structure": 0.20,
        "completeness": 0.15,
        "practical_insights": 0.10,
    }
    schema = verdict_schema(default)
    assert schema["properties"]["scores"]["required"] == list(default.dimensions)


def test_shipped_default_and_bad_rubrics(tmp_path: Path) -> None:
    assert "default_review" in load_review_templates(None)
    bad = tmp_path / "r.yaml"
    bad.write_text("t:\n  system_prompt: x\n  evaluation_dimensions:\n    a: {weight: -1}\n")
    with pytest.raises(PromptevalError, match=r"r.yaml:4: template 't', dimension 'a': expected"):
        load_review_templates(bad)


def test_case_picks_an_unknown_review_template(pytester: pytest.Pytester) -> None:
    pytester.mkdir("prompts").joinpath("v.yaml").write_text("user_prompt: x\n")
    pytester.mkdir("prompt_cases").joinpath("c.yaml").write_text(
        "cases:\n- id: c1\n  review_template: nope\n  input: {}\n"
    )
    pytester.makepyfile(myapp="def answer(request, **kw):\n    return 'text'\n")
    pytester.syspathinsert()
    result = pytester.runpytest(
        "--prompt=v", "--prompteval-scorer=claude", "--prompteval-provider=python:myapp:answer"
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*c.yaml:3: case 'c1': unknown review_template 'nope'; known: default_review, "
            "agent_review"
        ]
    )


def test_scorer_from_an_entry_point(pytester: pytest.Pytester) -> None:
    site = pytester.mkdir("site")
    site.joinpath("acme_scorers.py").write_text(
        "def brevity(case, request, response):\n    return 1.0 if len(response.text) < 9 else 0\n"
    )
    info = site / "acme_scorers-1.0.dist-info"
    info.mkdir()
    info.joinpath("METADATA").write_text(
        "Metadata-Version: 2.1\nName: acme-scorers\nVersion: 1.0\n"
    )
    info.joinpath("entry_points.txt").write_text(
        "[pytest_prompteval.scorers]\nbrevity = acme_scorers:brevity\n"
    )
    pytester.mkdir("prompts").joinpath("v.yaml").write_text("user_prompt: x\n")
    pytester.mkdir("prompt_cases").joinpath("c.yaml").write_text(
        "cases:\n- id: c1\n  threshold: 0\n  input: {}\n  assert: [{type: brevity}]\n"
    )
    pytester.path.joinpath("myapp.py").write_text("def answer(request, **kw):\n    return 'ok'\n")
    result = pytester.runpytest_subprocess(
        "--prompt=v",
        "--prompteval-provider=python:myapp:answer",
        "-p",
        "no:cacheprovider",
        "-o",
        "pythonpath=. site",
    )
    result.assert_outcomes(passed=1)


def test_ranks_and_spearman_against_hand_computed_values() -> None:
    assert ranks([10, 20, 20, 5]) == [2.0, 3.5, 3.5, 1.0]
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    # scipy.stats.spearmanr([1, 2, 3, 4, 5], [2, 1, 4, 3, 5]) == 0.8
    assert spearman([1, 2, 3, 4, 5], [2, 1, 4, 3, 5]) == pytest.approx(0.8)
    assert spearman([1, 1, 1], [1, 2, 3]) is None
    a = agreement([0.9, 0.4, 0.8], [0.8, 0.6, 0.5], [0.7, 0.7, 0.7])
    assert (a.n, a.mean_abs_diff, a.pass_agreement) == pytest.approx((3, 0.2, 2 / 3))


@given(st.lists(st.tuples(st.integers(-99, 99), st.integers(-99, 99)), min_size=2, max_size=30))
def test_spearman_is_symmetric_bounded_and_rank_invariant(pairs: list[tuple[int, int]]) -> None:
    x, y = [p[0] for p in pairs], [p[1] for p in pairs]
    rho = spearman(x, y)
    assert rho == spearman(y, x)
    if rho is not None:
        assert -1.0 <= rho <= 1.0
        # A strictly increasing transform of x keeps every rank, so the correlation too.
        assert spearman([v * 3 + 7 for v in x], y) == pytest.approx(rho, abs=1e-9)
