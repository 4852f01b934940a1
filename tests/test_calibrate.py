"""``prompteval calibrate``: human ratings against the judge's, and the summary's warning."""

from __future__ import annotations

import json
import random
import time
from pathlib import Path
from typing import Any

import pytest
from scipy import stats

from pytest_prompteval.core.errors import PromptevalError
from pytest_prompteval.core.history import RunHistory, load_run
from pytest_prompteval.core.result import ItemResult, JudgeResult
from pytest_prompteval.report.summary import summarize
from pytest_prompteval.testing import AnthropicServer, tool_use
from pytest_prompteval.workflows import calibrate as calibrate_module
from pytest_prompteval.workflows.calibrate import (
    Calibration,
    HumanAgreement,
    Pair,
    judge_rating,
    kappa_warning,
    latest,
    save,
    weighted_kappa,
)
from pytest_prompteval.workflows.review import (
    SEED_DIMENSIONS,
    review_entry,
    review_path,
    save_review,
)

from .conftest import prompteval

HUMAN = [1, 2, 3, 4, 5]
JUDGE_SCORES = [0.0, 0.25, 0.5, 1.0, 0.9]  # on the 1-5 scale: 1, 2, 3, 5, 5


def test_quadratic_kappa_against_the_hand_computed_value() -> None:
    # Observed: one disagreement, (4, 5), weight (4-5)^2/16 = 1/16.
    # Expected: judge marginals 1,1,1,0,2 against uniform human ones; sum_i (i-j)^2 per j is
    # 30, 15, 10, 15, 30, so sum w E = (30 + 15 + 10 + 2 * 30) / 16 / 5 = 115/80 = 1.4375.
    # kappa = 1 - (1/16) / (115/80) = 1 - 1/23 = 22/23.
    judged = [judge_rating(s) for s in JUDGE_SCORES]
    assert judged == [1, 2, 3, 5, 5]
    assert weighted_kappa(HUMAN, judged) == pytest.approx(22 / 23)
    assert weighted_kappa(judged, HUMAN) == pytest.approx(22 / 23)  # symmetric
    assert weighted_kappa([3, 3], [3, 3]) is None  # no variation: undefined, not 1
    assert weighted_kappa([1, 5], [5, 1]) == pytest.approx(-1.0)
    assert judge_rating(0.625) == 4  # 3.5 rounds half up


def _history(results: Path) -> Path:
    history = RunHistory(results, {"v": {}})
    for i, score in enumerate(JUDGE_SCORES):
        history.add(
            ItemResult(
                case_id=f"c{i}", file="cases.yaml", prompt="v", outcome="passed", passed=True,
                score=score, response=f"answer {i}",
                judge=JudgeResult(score, {"correctness": score, "clarity": 0.5}, "", [], 0,
                                  "judge-model", "default_review"),
            )
        )  # fmt: skip
    results_of = [r for r, _ in history.results["v"]]
    (path,) = history.finalize({"v": summarize(results_of, ["v"])[0].to_json()}, partial=False)
    for result, human in zip(results_of, HUMAN, strict=True):
        ratings = {name: human for name, _ in SEED_DIMENSIONS}
        save_review(path, review_entry(result, ratings, "", "ana", SEED_DIMENSIONS))
    return path


def test_prompteval_calibrate_prints_and_saves_the_figures(tmp_path: Path) -> None:
    _history(tmp_path / "results")
    done = prompteval(tmp_path, "calibrate", "--results", "results")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    rho = stats.spearmanr(HUMAN, [1, 2, 3, 5, 5]).statistic
    assert "judge judge-model: human 1-5 vs judge 1 + 4 x score, kappa quadratic" in out
    # correctness, and overall (human score vs judge score): the same pairs; clarity is not
    # one of the seed's dimensions, so it has no pairs
    assert out.count(f"5  0.96 (too few answers to tell)  {rho:.3f}     0.200") == 2, out
    assert "clarity" not in out
    assert "disagree: c3 sample 0 (" in out and "ana): human 4, judge 5" in out
    assert "    4  0  0  0  0  1" in out  # the confusion row of human 4
    (saved,) = (tmp_path / "results" / "calibrations").glob("*_judge-model.json")
    data = json.loads(saved.read_text())
    assert data["weights"] == "quadratic"
    assert data["dimensions"]["correctness"]["kappa"] == pytest.approx(22 / 23)
    assert data["dimensions"]["correctness"]["mean_abs_diff"] == pytest.approx(0.2)


def test_a_calibration_that_cannot_be_saved_is_one_line_after_its_figures(
    tmp_path: Path,
) -> None:
    _history(tmp_path / "results")
    (tmp_path / "results" / "calibrations").write_text("not a folder")
    done = prompteval(tmp_path, "calibrate", "--results", "results")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "kappa quadratic" in done.stdout  # the figures are shown all the same
    assert done.stderr == (
        "prompteval: error: results/calibrations: cannot save the calibration: File exists\n"
    )


def test_calibrate_without_ratings_says_what_to_do(tmp_path: Path) -> None:
    (tmp_path / "results").mkdir()
    done = prompteval(tmp_path, "calibrate", "--results", "results")
    assert done.returncode == 1 and "has both a human rating and a judge's score" in done.stdout


VERDICT = {
    "scores": {"correctness": 80, "completeness": 70, "clarity": 80, "usefulness": 70},
    "missing_topics": [],
    "incorrect_claims": [],
    "notes": "fine",
}


def _responder(request: dict[str, Any]) -> Any:
    return tool_use(request, VERDICT) if "tools" in request else "The loop is unrolled."


def _calibration(results: Path, model: str, kappa_pairs: list[tuple[int, int]]) -> Path:
    agreement = HumanAgreement(
        "correctness",
        [Pair("r", "f", f"c{i}", 0, "", h, j) for i, (h, j) in enumerate(kappa_pairs)],
    )
    return save(results, Calibration(model, {"correctness": agreement}))


def test_calibrations_of_one_judge_in_the_same_instant_keep_apart_and_the_last_counts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(time, "time_ns", lambda: 1_780_000_000_123_456_789)
    first = _calibration(tmp_path, "judge-model", [(1, 1), (5, 5)])
    second = _calibration(tmp_path, "judge-model", [(1, 5), (5, 1)])
    assert first != second and first.exists() and second.exists()
    found = latest(tmp_path, "judge-model")
    assert found is not None and found[0] == second
    assert found[1]["dimensions"]["correctness"]["kappa"] < 0
    (tmp_path / "calibrations" / second.name.replace("0123457", "0123458")).touch()
    assert latest(tmp_path, "judge-model") == found  # a name taken, its file not yet written


def test_the_summary_warns_when_the_judge_is_uncalibrated_or_below_min_kappa(
    pytester: pytest.Pytester, anthropic_server: AnthropicServer
) -> None:
    anthropic_server.responder = _responder
    pytester.mkdir("prompts").joinpath("v.yaml").write_text("user_prompt: Explain.\n")
    pytester.mkdir("prompt_cases").joinpath("c.yaml").write_text("cases:\n- id: c1\n  input: {}\n")
    pytester.makeini("[pytest]\nprompteval_min_kappa = 0.6\n")
    args = ["--prompt=v", "--prompteval-scorer=claude"]
    first = pytester.runpytest(*args)
    first.assert_outcomes(passed=1)
    (run,) = (pytester.path / "prompt_results").glob("*_v.json")
    model = json.loads(run.read_text())["results"][0]["judge_model"]
    first.stdout.fnmatch_lines(
        [f"prompteval warning: the judge {model} has no calibration (prompteval_min_kappa 0.6)*"]
    )
    low = _calibration(pytester.path / "prompt_results", model, [(1, 5), (5, 1), (3, 3)] * 4)
    second = pytester.runpytest(*args)
    second.stdout.fnmatch_lines(
        [
            f"prompteval warning: the judge {model} agrees with people below "
            f"prompteval_min_kappa 0.6: kappa -1.00 [[]-1.00, -0.41[]] (95%) on correctness in "
            f"its latest calibration ({low.name})"
        ]
    )
    low.unlink()
    _calibration(pytester.path / "prompt_results", model, [(1, 1), (3, 3), (5, 5), (4, 4)] * 3)
    third = pytester.runpytest(*args)
    assert "prompteval warning" not in third.stdout.str()
    # without the ini key, no judge is checked
    pytester.makeini("[pytest]\n")
    assert "prompteval warning" not in pytester.runpytest(*args).stdout.str()


def test_min_kappa_is_checked_as_a_number(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nprompteval_min_kappa = high\n")
    result = pytester.runpytest("--prompt=v")
    assert "prompteval_min_kappa" in result.stderr.str() + result.stdout.str()
    assert "Traceback" not in result.stderr.str()


def _pairs(kappa_pairs: list[tuple[int, int]]) -> HumanAgreement:
    return HumanAgreement(
        "correctness",
        [Pair("r", "f", f"c{i}", 0, "", h, j) for i, (h, j) in enumerate(kappa_pairs)],
    )


def test_two_agreeing_answers_are_too_few_to_tell(tmp_path: Path) -> None:
    # Kappa 1.00 from two answers once silenced the warning.
    _calibration(tmp_path, "judge-model", [(1, 1), (5, 5)])
    (line,) = kappa_warning(tmp_path, ["judge-model"], 0.6)
    assert line.startswith(
        "the judge judge-model: too few answers to tell whether it agrees with people "
        "(prompteval_min_kappa 0.6): correctness under 10 answers"
    )
    assert _pairs([(1, 1), (5, 5)]).kappa_text() == "1.00 (too few answers to tell)"


def test_the_warning_follows_the_kappa_interval_not_its_point(tmp_path: Path) -> None:
    # A judge of true kappa about 0.5 escaped a 0.6 threshold in 15 of these 40 calibrations
    # of 20 answers by its point estimate; now it must show its interval above it.
    rng = random.Random(3)
    escaped = 0
    for run in range(40):
        pairs = []
        for _ in range(20):
            human = rng.randint(1, 5)
            judge = human if rng.random() < 0.45 else rng.randint(1, 5)
            pairs.append((human, judge))
        folder = tmp_path / str(run)
        folder.mkdir()
        _calibration(folder, "m", pairs)
        escaped += not kappa_warning(folder, ["m"], 0.6)
    assert escaped <= 3  # one-sided 2.5% of 40, within simulation error
    good = _pairs([(h, h) for h in HUMAN] * 4)
    assert good.interval == (1.0, 1.0) and good.kappa_text() == "1.00 [1.00, 1.00]"
    _calibration(tmp_path, "good", [(h, h) for h in HUMAN] * 4)
    assert kappa_warning(tmp_path, ["good"], 0.6) == []


def test_each_answer_counts_once_and_reviewers_agreement_is_its_own(tmp_path: Path) -> None:
    path = _history(tmp_path / "results")
    (first, *_) = load_run(path, tmp_path / "results").results
    for reviewer, rating in (("bob", 2), ("cy", 1)):
        ratings = {name: rating for name, _ in SEED_DIMENSIONS}
        save_review(path, review_entry(first, ratings, "", reviewer, SEED_DIMENSIONS))
    (calibration,) = calibrate_module.calibrate(tmp_path / "results").values()
    agreement = calibration.dimensions["correctness"]
    assert agreement.n == 5  # 5 answers, one of them rated by three people
    (pair,) = [p for p in agreement.pairs if p.case_id == "c0"]
    assert (pair.reviewer, pair.human) == ("ana, bob, cy", 1)  # (1 + 2 + 1) / 3 half up
    assert agreement.reviewers is not None and agreement.reviewers["answers"] == 1


def test_hostile_review_and_calibration_files(tmp_path: Path) -> None:
    # A NaN human score crashed calibrate; a forged kappa silenced the warning. A review
    # file holding either is one line naming it.
    path = _history(tmp_path / "results")
    review = review_path(path)
    data = json.loads(review.read_text())
    for key, value, why in (
        ("human_score", float("nan"), "not a review file: NaN"),
        ("ratings", {"correctness": True}, "reviews[0]: ratings: correctness True is not"),
    ):
        broken = json.loads(json.dumps(data))
        broken["reviews"][0][key] = value
        review.write_text(json.dumps(broken))
        done = prompteval(tmp_path, "calibrate", "--results", "results")
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        assert f"{review.name}: {why}" in done.stderr
    review.write_text('{"reviews": [{"case_id": 1}]}')
    done = prompteval(tmp_path, "calibrate", "--results", "results")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"{review.name}: reviews[0]: file: expected a string" in done.stderr
    forged = _calibration(tmp_path, "m", [(1, 5), (5, 1), (3, 3)] * 4)
    saved = json.loads(forged.read_text())
    saved["dimensions"]["correctness"]["kappa"] = 1.0
    saved["dimensions"]["correctness"]["kappa_interval"] = [0.99, 1.0]
    forged.write_text(json.dumps(saved))
    (line,) = kappa_warning(tmp_path, ["m"], 0.6)
    assert "has no valid calibration" in line and "kappa 1.0 is not its table's" in line
    for table in (float("nan"), [[1] * 5] * 4, [[-1] * 5] * 5, [[True] * 5] * 5, [[10**6] * 5] * 5):
        saved["dimensions"]["correctness"]["confusion"] = table
        forged.write_text(json.dumps(saved))
        (line,) = kappa_warning(tmp_path, ["m"], 0.6)
        assert "has no valid calibration" in line, table
    # nested past the parser's recursion limit: one line naming the file, never a traceback
    forged.write_text("[" * 100_000)
    with pytest.raises(PromptevalError, match="unreadable calibration"):
        kappa_warning(tmp_path, ["m"], 0.6)
    review.write_text('{"reviews": ' + "[" * 100_000)
    done = prompteval(tmp_path, "calibrate", "--results", "results")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-500:]
