"""``prompteval calibrate``: how well the judge agrees with people on the same answers.

Every human rating in the results folder's review files (``prompteval review`` or
``prompteval view``) is set beside the judge's score of the same answer, per dimension the
two share, and ``overall`` (the human score against the judge's score). The judge's 0-1
score is put on the people's 1-5 scale as ``1 + 4 * score`` rounded half up.

Per dimension: Cohen's weighted kappa with **quadratic** weights, Spearman's rank
correlation, the mean absolute difference (in points of the 1-5 scale), the 5x5 confusion
table and the answers that disagree most. Quadratic weights, because the ratings are
ordinal: a judge that says 4 where a person said 5 nearly agrees, one that says 1 does not,
and the penalty should grow faster than the distance (linear weights count a 4-point miss
as only four 1-point misses). Quadratic kappa also equals the intraclass correlation of the
two raters (Fleiss & Cohen 1973), which is the figure the literature on LLM judges reports.

Each answer counts once: the ratings several reviewers gave one answer are combined (their
mean, rounded half up), and how well the reviewers agree with each other is reported on its
own. Kappa comes with a 95% interval (percentile bootstrap over the answers, seeded), and
under MIN_ANSWERS answers a calibration is "too few answers to tell".

The result is saved per judge model under ``<results>/calibrations/``; the run summary
warns when the judge in use has no calibration, too few answers, or a kappa whose interval
does not lie above ``prompteval_min_kappa``. The files read (runs, reviews, calibrations)
are hostile input: a value that is not what it should be is one clear error, and the
summary recomputes kappa and its interval from a saved calibration's confusion table rather
than trusting the figures written beside it.
"""

from __future__ import annotations

import json
import math
import os
import random
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeGuard

from pytest_prompteval.core.errors import PromptevalError
from pytest_prompteval.core.history import is_run_file, load_run, write_json_atomically
from pytest_prompteval.core.paths import MAX_FILE_BYTES, create_new, output_inside, read_bounded
from pytest_prompteval.core.result import JudgeResult
from pytest_prompteval.core.stats import spearman
from pytest_prompteval.workflows.review import load_reviews, review_path

SCALE = (1, 2, 3, 4, 5)
WEIGHTS = "quadratic"
FOLDER = "calibrations"
OVERALL = "overall"
#: the answers that disagree most, shown per dimension
WORST = 5
#: fewer answers than this cannot tell a judge's agreement from chance variation
MIN_ANSWERS = 10
#: a saved calibration with more answers than this is not believed
MAX_ANSWERS = 20_000
BOOTSTRAP = 1000


def judge_rating(value: float) -> int:
    """A judge's 0-1 score on the 1-5 scale, rounded half up (0.625 -> 3.5 -> 4)."""
    return min(5, max(1, math.floor(1 + 4 * value + 0.5)))


def weighted_kappa(first: Sequence[int], second: Sequence[int]) -> float | None:
    """Cohen's kappa with quadratic weights over the 1-5 scale; None when undefined (no
    pairs, or both raters gave one and the same rating throughout)."""
    if len(first) != len(second):
        return None
    return table_kappa(confusion_table(first, second))


def confusion_table(first: Sequence[int], second: Sequence[int]) -> list[list[int]]:
    table = [[0] * len(SCALE) for _ in SCALE]
    for a, b in zip(first, second, strict=True):
        table[a - 1][b - 1] += 1
    return table


def table_kappa(observed: Sequence[Sequence[int]]) -> float | None:
    """Quadratic weighted kappa of a 5x5 confusion table."""
    k = len(SCALE)
    n = sum(map(sum, observed))
    if n == 0:
        return None
    rows = [sum(row) for row in observed]
    cols = [sum(observed[i][j] for i in range(k)) for j in range(k)]
    disagreement = expected = 0.0
    for i in range(k):
        for j in range(k):
            weight = (i - j) ** 2 / (k - 1) ** 2
            disagreement += weight * observed[i][j]
            expected += weight * rows[i] * cols[j] / n
    if expected == 0:
        return None
    return 1 - disagreement / expected


def kappa_interval(table: Sequence[Sequence[int]], seed: int = 0) -> tuple[float, float] | None:
    """95% percentile bootstrap interval of the table's kappa, resampling its answers
    (seeded: the same table gives the same interval); None under MIN_ANSWERS answers."""
    cells = [(i, j) for i in range(len(SCALE)) for j in range(len(SCALE))]
    weights = [table[i][j] for i, j in cells]
    n = sum(weights)
    if n < MIN_ANSWERS:
        return None
    rng = random.Random(seed)
    kappas = []
    for _ in range(BOOTSTRAP):
        resampled = [[0] * len(SCALE) for _ in SCALE]
        for i, j in rng.choices(cells, weights, k=n):
            resampled[i][j] += 1
        value = table_kappa(resampled)
        kappas.append(-1.0 if value is None else value)  # no variation: no agreement shown
    kappas.sort()
    return kappas[int(0.025 * BOOTSTRAP)], kappas[int(0.975 * BOOTSTRAP) - 1]


@dataclass(frozen=True)
class Pair:
    """One answer rated by a person and by the judge."""

    run: str
    file: str
    case_id: str
    sample: int
    reviewer: str
    human: int
    judge: int


@dataclass
class HumanAgreement:
    """How the judge agrees with people on one dimension: its answers, each once (its
    reviewers' ratings combined)."""

    dimension: str
    pairs: list[Pair] = field(default_factory=list)
    #: how the reviewers agree with each other on the answers several of them rated
    reviewers: dict[str, Any] | None = None

    @property
    def n(self) -> int:
        return len(self.pairs)

    @property
    def kappa(self) -> float | None:
        return weighted_kappa([p.human for p in self.pairs], [p.judge for p in self.pairs])

    @property
    def spearman(self) -> float | None:
        return spearman([p.human for p in self.pairs], [p.judge for p in self.pairs])

    @property
    def mean_abs_diff(self) -> float | None:
        if not self.pairs:
            return None
        return sum(abs(p.human - p.judge) for p in self.pairs) / self.n

    @property
    def confusion(self) -> list[list[int]]:
        """Rows: the person's rating 1-5; columns: the judge's."""
        return confusion_table([p.human for p in self.pairs], [p.judge for p in self.pairs])

    @property
    def interval(self) -> tuple[float, float] | None:
        return kappa_interval(self.confusion)

    def kappa_text(self) -> str:
        """kappa with its interval, or why there is none."""
        kappa = "-" if self.kappa is None else f"{self.kappa:.2f}"
        if self.n < MIN_ANSWERS:
            return f"{kappa} (too few answers to tell)"
        low, high = self.interval or (math.nan, math.nan)
        return f"{kappa} [{low:.2f}, {high:.2f}]"

    @property
    def worst(self) -> list[Pair]:
        ranked = sorted(self.pairs, key=lambda p: -abs(p.human - p.judge))
        return [p for p in ranked[:WORST] if p.human != p.judge]

    def figures(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "kappa": self.kappa,
            "kappa_interval": self.interval,
            "reviewers": self.reviewers,
            "spearman": self.spearman,
            "mean_abs_diff": self.mean_abs_diff,
            "confusion": self.confusion,
            "worst": [asdict(p) for p in self.worst],
        }


@dataclass
class Calibration:
    judge_model: str
    dimensions: dict[str, HumanAgreement] = field(default_factory=dict)


def _human_overall(human_score: float) -> int:
    """A human score (the weighted mean rating / 5) back on the 1-5 scale, half up."""
    return min(5, max(1, math.floor(5 * human_score + 0.5)))


def _unit(value: object) -> bool:
    """A finite number from 0 to 1 (not a bool): a score as the files may hold it."""
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and 0 <= value <= 1
    )


def _rating(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value in SCALE


def calibrate(directory: Path) -> dict[str, Calibration]:
    """Per judge model, its agreement with every human rating in ``directory``: each answer
    once, its reviewers' ratings combined. Ratings or scores that are not what they should
    be (NaN, out of range, not numbers) are left out, never used."""
    # per (model, dimension, answer): the judge's rating and each reviewer's
    answers: dict[tuple[str, str, tuple[str, str, str, int]], tuple[int, dict[str, int]]] = {}
    names = sorted(os.listdir(directory)) if directory.is_dir() else []
    for name in names:
        path = directory / name
        if not is_run_file(name) or not os.path.lexists(review_path(path)):
            continue
        try:
            reviews = load_reviews(path)
        except (KeyError, TypeError, ValueError, AttributeError, RecursionError):
            raise PromptevalError(
                "not a review file (a 'reviews' list of entries with file, case_id, sample)",
                review_path(path),
            ) from None
        by_key = {(r.file, r.case_id, r.sample): r for r in load_run(path, directory).results}
        for key, review in sorted(reviews.items(), key=lambda item: repr(item[0])):
            result = by_key.get(key[:3])
            ratings = review.get("ratings") if isinstance(review, dict) else None
            if result is None or result.judge is None or not isinstance(ratings, dict):
                continue
            judge = result.judge
            for dimension, human, judged in _rated(review, ratings, judge):
                if not _unit(judged):
                    continue
                answer = (name, *key[:3])
                entry = answers.setdefault(
                    (judge.model, dimension, answer), (judge_rating(judged), {})
                )
                entry[1][str(key[3])] = human
    return _by_model(answers)


def _rated(
    review: dict[str, Any], ratings: dict[Any, Any], judge: JudgeResult
) -> list[tuple[str, Any, Any]]:
    """(dimension, the reviewer's rating, the judge's) for each dimension both rated, and
    overall when the reviewer gave a score."""
    rated = [
        (str(dimension), rating, judge.dimensions[dimension])
        for dimension, rating in sorted(ratings.items(), key=lambda item: str(item[0]))
        if dimension in judge.dimensions and _rating(rating)
    ]
    if _unit(review.get("human_score")):
        rated.append((OVERALL, _human_overall(review["human_score"]), judge.score))
    return rated


def _by_model(
    answers: dict[tuple[str, str, tuple[str, str, str, int]], tuple[int, dict[str, int]]],
) -> dict[str, Calibration]:
    """Each answer's reviewers' ratings combined, per judge model and dimension."""
    by_model: dict[str, Calibration] = {}
    for (model, dimension, answer), (judged, humans) in sorted(answers.items()):
        calibration = by_model.setdefault(model, Calibration(model))
        agreement = calibration.dimensions.setdefault(dimension, HumanAgreement(dimension))
        combined = math.floor(sum(humans.values()) / len(humans) + 0.5)
        agreement.pairs.append(Pair(*answer, ", ".join(sorted(humans)), combined, judged))
        if len(humans) > 1:
            agreement.reviewers = _between_reviewers(agreement.reviewers, humans)
    return by_model


def _between_reviewers(sofar: dict[str, Any] | None, humans: dict[str, int]) -> dict[str, Any]:
    """The reviewers' agreement with each other: every pair of reviewers of an answer, both
    ways, in one table (quadratic kappa), over the answers several rated."""
    table = [[0] * len(SCALE) for _ in SCALE] if sofar is None else sofar["confusion"]
    ratings = list(humans.values())
    for i, a in enumerate(ratings):
        for b in ratings[i + 1 :]:
            table[a - 1][b - 1] += 1
            table[b - 1][a - 1] += 1
    answers = (0 if sofar is None else sofar["answers"]) + 1
    return {"answers": answers, "kappa": table_kappa(table), "confusion": table}


def _model_part(model: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "+" for c in model)


def _reserve(folder: Path, model: str) -> Path:
    """A name of its own for a new calibration, taken (an empty file) so that another
    calibration of the same judge in the same microsecond takes the next one."""
    nanoseconds = time.time_ns()
    stamp = time.strftime("%Y%m%d_%H%M%S", time.localtime(nanoseconds // 10**9))
    micro = nanoseconds // 1000 % 10**6
    for step in range(1000):
        target = output_inside(folder, f"{stamp}_{micro + step:07d}_{_model_part(model)}.json")
        try:
            create_new(target).close()
        except FileExistsError:
            continue
        return target
    raise PromptevalError("no free name for a calibration in this microsecond", folder)


def save(directory: Path, calibration: Calibration) -> Path:
    """``<results>/calibrations/<time>_<microseconds>_<judge model>.json``: the latest is
    what the run summary checks."""
    folder = directory / FOLDER
    try:
        folder.mkdir(exist_ok=True)
        target = _reserve(folder, calibration.judge_model)
        write_json_atomically(
            target,
            {
                "judge_model": calibration.judge_model,
                "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                "weights": WEIGHTS,
                "dimensions": {n: a.figures() for n, a in sorted(calibration.dimensions.items())},
            },
        )
    except OSError as exc:
        raise PromptevalError(
            f"cannot save the calibration: {exc.strerror or exc}", folder
        ) from None
    return target


def latest(directory: Path, model: str) -> tuple[Path, dict[str, Any]] | None:
    """The judge model's latest saved calibration, if any."""
    folder = directory / FOLDER
    suffix = f"_{_model_part(model)}.json"
    names = sorted(n for n in os.listdir(folder) if n.endswith(suffix)) if folder.is_dir() else []
    for name in reversed(names):
        path = folder / name
        try:
            content = read_bounded(path, MAX_FILE_BYTES, folder)
            if not content:
                continue  # a name taken for a calibration being written
            data = json.loads(content)
        except (PromptevalError, ValueError, RecursionError) as exc:
            message = exc.message if isinstance(exc, PromptevalError) else str(exc)
            raise PromptevalError(f"unreadable calibration: {message}", path) from None
        if isinstance(data, dict) and data.get("judge_model") == model:
            return path, data
    return None


def _is_confusion(table: Any) -> TypeGuard[list[list[int]]]:
    """Whether ``table`` is a 5x5 table of counts."""
    return (
        isinstance(table, list)
        and len(table) == len(SCALE)
        and all(isinstance(row, list) and len(row) == len(SCALE) for row in table)
        and all(
            isinstance(x, int) and not isinstance(x, bool) and x >= 0 for row in table for x in row
        )
    )


def saved_figures(
    data: dict[str, Any],
) -> dict[str, tuple[int, float | None, tuple[float, float] | None]]:
    """Per dimension of a saved calibration: (answers, kappa, interval), recomputed from its
    confusion table, never read from the figures beside it. ValueError saying what is wrong
    when the file is not a calibration (it is hostile input: it may be forged or broken)."""
    dims = data.get("dimensions")
    if not isinstance(dims, dict) or not dims:
        raise ValueError("no 'dimensions' mapping")
    figures = {}
    for name, dim in dims.items():
        table = dim.get("confusion") if isinstance(dim, dict) else None
        if not _is_confusion(table):
            raise ValueError(f"dimension {name!r}: 'confusion' is not a 5x5 table of counts")
        n = sum(map(sum, table))
        if n > MAX_ANSWERS:
            raise ValueError(f"dimension {name!r}: {n} answers, more than {MAX_ANSWERS}")
        kappa = table_kappa(table)
        stated = dim.get("kappa")
        if kappa is not None and not (
            isinstance(stated, int | float) and abs(stated - kappa) <= 1e-6
        ):
            raise ValueError(f"dimension {name!r}: kappa {stated!r} is not its table's")
        figures[str(name)] = (n, kappa, kappa_interval(table))
    return figures


def kappa_warning(directory: Path | None, models: Sequence[str], min_kappa: float) -> list[str]:
    """What the run summary says of the judges a run used, given ``prompteval_min_kappa``:
    no calibration, one that is not valid, too few answers, or a dimension whose kappa
    interval does not lie above it (clearly below when even its upper end is)."""
    lines = []
    for model in models:
        found = latest(directory, model) if directory is not None else None
        if found is None:
            lines.append(
                f"the judge {model} has no calibration (prompteval_min_kappa {min_kappa:g}): "
                "rate answers with `prompteval view` or `prompteval review`, then run "
                "`prompteval calibrate`"
            )
            continue
        path, data = found
        try:
            dims = saved_figures(data)
        except ValueError as exc:
            lines.append(
                f"the judge {model} has no valid calibration (prompteval_min_kappa "
                f"{min_kappa:g}): {path.name}: {exc}"
            )
            continue
        few = sorted(name for name, (n, _, _) in dims.items() if n < MIN_ANSWERS)
        if few:
            lines.append(
                f"the judge {model}: too few answers to tell whether it agrees with people "
                f"(prompteval_min_kappa {min_kappa:g}): {', '.join(few)} under {MIN_ANSWERS} "
                f"answers in its latest calibration ({path.name})"
            )
            continue
        rated = [
            (interval[0], name, kappa, interval)
            for name, (_, kappa, interval) in dims.items()
            if kappa is not None and interval is not None
        ]
        if not rated:
            lines.append(
                f"the judge {model} agrees with people below prompteval_min_kappa "
                f"{min_kappa:g}: no kappa in its latest calibration ({path.name})"
            )
            continue
        _, name, kappa, (low, high) = min(rated)
        if low < min_kappa:
            how = "agrees with people below" if high < min_kappa else "is not shown to reach"
            lines.append(
                f"the judge {model} {how} prompteval_min_kappa {min_kappa:g}: kappa "
                f"{kappa:.2f} [{low:.2f}, {high:.2f}] (95%) on {name} in its latest "
                f"calibration ({path.name})"
            )
    return lines
