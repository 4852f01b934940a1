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

The result is saved per judge model under ``<results>/calibrations/``; the run summary
warns when the judge in use has no calibration or a kappa below ``prompteval_min_kappa``.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pytest_prompteval.core.errors import PromptevalError
from pytest_prompteval.core.history import is_run_file, load_run, write_json_atomically
from pytest_prompteval.core.paths import MAX_FILE_BYTES, create_new, output_inside, read_bounded
from pytest_prompteval.core.stats import spearman
from pytest_prompteval.workflows.review import load_reviews, review_path

SCALE = (1, 2, 3, 4, 5)
WEIGHTS = "quadratic"
FOLDER = "calibrations"
OVERALL = "overall"
#: the answers that disagree most, shown per dimension
WORST = 5


def judge_rating(value: float) -> int:
    """A judge's 0-1 score on the 1-5 scale, rounded half up (0.625 -> 3.5 -> 4)."""
    return min(5, max(1, math.floor(1 + 4 * value + 0.5)))


def weighted_kappa(first: Sequence[int], second: Sequence[int]) -> float | None:
    """Cohen's kappa with quadratic weights over the 1-5 scale; None when undefined (no
    pairs, or both raters gave one and the same rating throughout)."""
    n = len(first)
    if n == 0 or n != len(second):
        return None
    k = len(SCALE)
    observed = [[0] * k for _ in SCALE]
    for a, b in zip(first, second, strict=True):
        observed[a - 1][b - 1] += 1
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
class Agreement:
    dimension: str
    pairs: list[Pair] = field(default_factory=list)

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
        table = [[0] * len(SCALE) for _ in SCALE]
        for p in self.pairs:
            table[p.human - 1][p.judge - 1] += 1
        return table

    @property
    def worst(self) -> list[Pair]:
        ranked = sorted(self.pairs, key=lambda p: -abs(p.human - p.judge))
        return [p for p in ranked[:WORST] if p.human != p.judge]

    def figures(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "kappa": self.kappa,
            "spearman": self.spearman,
            "mean_abs_diff": self.mean_abs_diff,
            "confusion": self.confusion,
            "worst": [asdict(p) for p in self.worst],
        }


@dataclass
class Calibration:
    judge_model: str
    dimensions: dict[str, Agreement] = field(default_factory=dict)

    def lowest(self) -> tuple[str, float] | None:
        """The dimension with the lowest kappa, and that kappa."""
        known = [(n, k) for n, a in self.dimensions.items() if (k := a.kappa) is not None]
        return min(known, key=lambda x: x[1]) if known else None


def _human_overall(human_score: float) -> int:
    """A human score (the weighted mean rating / 5) back on the 1-5 scale, half up."""
    return min(5, max(1, math.floor(5 * human_score + 0.5)))


def calibrate(directory: Path) -> dict[str, Calibration]:
    """Per judge model, its agreement with every human rating in ``directory``."""
    by_model: dict[str, Calibration] = {}
    names = sorted(os.listdir(directory)) if directory.is_dir() else []
    for name in names:
        path = directory / name
        if not is_run_file(name) or not os.path.lexists(review_path(path)):
            continue
        reviews = load_reviews(path)
        by_key = {(r.file, r.case_id, r.sample): r for r in load_run(path, directory).results}
        for key, review in sorted(reviews.items()):
            result = by_key.get(key[:3])
            ratings = review.get("ratings")
            if result is None or result.judge is None or not isinstance(ratings, dict):
                continue
            judge = result.judge
            calibration = by_model.setdefault(judge.model, Calibration(judge.model))
            rated = [
                (dimension, rating, judge.dimensions[dimension])
                for dimension, rating in sorted(ratings.items())
                if dimension in judge.dimensions and rating in SCALE
            ]
            if isinstance(review.get("human_score"), int | float):
                rated.append((OVERALL, _human_overall(review["human_score"]), judge.score))
            for dimension, human, judged in rated:
                pair = Pair(name, *key[:3], key[3], human, judge_rating(judged))
                calibration.dimensions.setdefault(dimension, Agreement(dimension)).pairs.append(
                    pair
                )
    return by_model


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
        except (PromptevalError, ValueError) as exc:
            message = exc.message if isinstance(exc, PromptevalError) else str(exc)
            raise PromptevalError(f"unreadable calibration: {message}", path) from None
        if isinstance(data, dict) and data.get("judge_model") == model:
            return path, data
    return None


def lowest_kappa(data: dict[str, Any], path: Path) -> tuple[str, float] | None:
    """A saved calibration's dimension with the lowest kappa, and that kappa. The file is a
    pull request's to change: a kappa no agreement has (outside [-1, 1]; NaN, which no
    comparison with the minimum fails; ``true``) is an error, never agreement."""
    dims = data.get("dimensions")
    known = []
    for name, d in dims.items() if isinstance(dims, dict) else []:
        kappa = d.get("kappa") if isinstance(d, dict) else None
        if kappa is None:
            continue  # too few ratings for a kappa
        # (the computed kappa of full disagreement may round a hair below -1)
        if type(kappa) not in (int, float) or not -1 - 1e-9 <= kappa <= 1 + 1e-9:
            raise PromptevalError(
                f"unreadable calibration: {str(name)!r:.40}: kappa {kappa!r:.40} is not a "
                "number from -1 to 1",
                path,
            )
        known.append((str(name), float(kappa)))
    return min(known, key=lambda x: x[1]) if known else None


def kappa_warning(directory: Path | None, models: Sequence[str], min_kappa: float) -> list[str]:
    """What the run summary says of the judges a run used, given ``prompteval_min_kappa``."""
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
        low = lowest_kappa(data, path)
        if low is None or low[1] < min_kappa:
            shown = "no kappa" if low is None else f"kappa {low[1]:.2f} on {low[0]}"
            lines.append(
                f"the judge {model} agrees with people below prompteval_min_kappa "
                f"{min_kappa:g}: {shown} in its latest calibration ({path.name})"
            )
    return lines
