"""``prompteval review RESULTS``: human review in the terminal.

For each result not reviewed yet it shows the case, the answer and the automatic scores,
asks a 1-5 rating per dimension and a comment, and saves ``<results>.review.json`` after
every answer, so a review can stop (``q``) and resume any time. Dimensions: the seed's human
evaluation (correctness 0.4, completeness 0.3, edge-case handling 0.3; code quality is
rated but not weighted), or a review template's rubric with its weights.

Each reviewer has their own entry per result (several people can rate the same answers, in
the terminal or in ``prompteval view``); every rating is merged into the file as it is on
disk and written atomically, so two sessions on one file lose nothing of each other's.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from pytest_prompteval.core.errors import PromptevalError
from pytest_prompteval.core.history import load_run, write_json_atomically
from pytest_prompteval.core.paths import MAX_RESULTS_BYTES, read_bounded
from pytest_prompteval.core.result import ItemResult
from pytest_prompteval.core.safetext import safe_line, safe_text

SEED_DIMENSIONS: tuple[tuple[str, float], ...] = (
    ("correctness", 0.4),
    ("completeness", 0.3),
    ("edge_case_handling", 0.3),
    ("code_quality", 0.0),
)
#: file, case id, sample, reviewer
Key = tuple[str, str, int, str]


def automatic_of(result: ItemResult) -> float | None:
    """The automatic score a human review is set against: ``automatic_score``, or the score
    of a run scored automatically only. Never the judge's score (``or`` once substituted it
    wherever the automatic score was 0)."""
    if result.automatic_score is not None:
        return float(result.automatic_score)
    if result.score is not None and result.scorer != "claude":
        return float(result.score)
    return None


def review_path(results: Path) -> Path:
    return results.with_name(results.name + ".review.json")


def load_reviews(results: Path) -> dict[Key, dict[str, Any]]:
    """The review file's entries by key, checked: the file is in the results folder, which a
    pull request can change, so a malformed or forged one (bad JSON, ``NaN``, a rating of 7,
    a score outside [0, 1], a missing field) is one error naming the file and the entry,
    never a crash or a wrong figure further on."""
    path = review_path(results)
    if not os.path.lexists(path):
        return {}
    try:
        data = json.loads(
            read_bounded(path, MAX_RESULTS_BYTES, results.parent), parse_constant=_no_constant
        )
    except (ValueError, RecursionError) as exc:
        raise PromptevalError(f"not a review file: {exc}", path) from None
    entries = data.get("reviews") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise PromptevalError("not a review file: expected {results, reviews: [...]}", path)
    for index, entry in enumerate(entries):
        problem = _problem(entry)
        if problem:
            raise PromptevalError(f"reviews[{index}]: {problem}", path)
    return {_key(r): r for r in entries}


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def _is_score(value: Any) -> bool:
    return type(value) in (int, float) and 0 <= value <= 1  # NaN compares false


def _problem(entry: Any) -> str | None:
    """What is wrong with one review entry, or None."""
    if not isinstance(entry, dict):
        return "expected a mapping"
    for key in ("file", "case_id"):
        if not isinstance(entry.get(key), str):
            return f"{key}: expected a string"
    for key in ("reviewer", "prompt", "comment"):
        if entry.get(key) is not None and not isinstance(entry[key], str):
            return f"{key}: expected a string"
    sample = entry.get("sample")
    if type(sample) is not int or sample < 0:
        return f"sample {sample!r:.40}: expected a whole number >= 0"
    if entry.get("skipped") is True:
        return None
    ratings = entry.get("ratings", {})  # the figures read human_score; calibrate these
    if not isinstance(ratings, dict):
        return "ratings: expected {dimension: 1-5, ...}"
    for name, rating in ratings.items():
        if type(rating) is not int or not 1 <= rating <= 5:
            return f"ratings: {name} {rating!r:.40} is not a whole number from 1 to 5"
    if not _is_score(entry.get("human_score")):
        return f"human_score {entry.get('human_score')!r:.40} is not a number from 0 to 1"
    automatic = entry.get("automatic_score")
    if automatic is not None and not _is_score(automatic):
        return f"automatic_score {automatic!r:.40} is not a number from 0 to 1"
    return None


def _key(review: dict[str, Any]) -> Key:
    return (review["file"], review["case_id"], review["sample"], review.get("reviewer") or "")


_SAVING = threading.Lock()  # the view saves from several request threads


def save_review(results: Path, review: dict[str, Any]) -> None:
    """Merge one reviewer's entry into the review file as it is now, atomically."""
    with _SAVING:
        reviews = load_reviews(results)
        reviews[_key(review)] = review
        ordered = [reviews[k] for k in sorted(reviews)]
        write_json_atomically(review_path(results), {"results": results.name, "reviews": ordered})


def review_entry(
    result: ItemResult,
    ratings: dict[str, int],
    comment: str,
    reviewer: str,
    dimensions: Sequence[tuple[str, float]],
) -> dict[str, Any]:
    return {
        "file": result.file,
        "case_id": result.case_id,
        "sample": result.sample,
        "prompt": result.prompt,
        "ratings": ratings,
        "comment": comment,
        "reviewer": reviewer,
        "human_score": round(human_score(ratings, dimensions), 6),
        "automatic_score": automatic_of(result),
    }


def human_score(ratings: dict[str, int], dimensions: Sequence[tuple[str, float]]) -> float:
    total = sum(w for _, w in dimensions)
    return sum(ratings[name] * w for name, w in dimensions) / 5 / total


def _ask(prompt: str, stdin: IO[str], out: IO[str]) -> str | None:
    out.write(prompt)
    out.flush()
    line = stdin.readline()
    return None if line == "" else line.strip()


def _shown(result: ItemResult, counter: str) -> str:
    """A result as the reviewer sees it: the answer indented, so no line of it passes for
    the markers or the questions."""
    dims = "  ".join(f"{k} {v:.2f}" for k, v in result.dimensions.items())
    missing = ", ".join(result.missing_topics)
    return (
        f"\n{counter} {safe_line(result.case_id)} [{safe_line(result.prompt)}] "
        f"score {result.score}  {'PASS' if result.passed else 'FAIL'}\n  {safe_line(dims)}\n"
        + (f"  missing topics: {safe_line(missing)}\n" if missing else "")
        + f"--- answer ---\n  {safe_text(result.response or '')}\n--------------\n"
    )


def _rating(name: str, stdin: IO[str], out: IO[str]) -> int | str:
    """The reviewer's rating from 1 to 5 of one dimension; "s" to skip the result, "q" to
    quit (or the input ended)."""
    while True:
        answer = _ask(f"{safe_line(name)} (1-5): ", stdin, out)
        if answer is None or answer == "q":
            return "q"
        if answer == "s":
            return "s"
        if answer.isdigit() and 1 <= int(answer) <= 5:
            return int(answer)
        out.write("  a whole number from 1 to 5, s to skip, q to quit\n")


def run_review(
    results: Path,
    stdin: IO[str],
    out: IO[str],
    dimensions: Sequence[tuple[str, float]] = SEED_DIMENSIONS,
    reviewer: str = "",
) -> int:
    """Review what is left; return how many results were reviewed in this session."""
    run = load_run(results)
    # a named reviewer rates what they have not; without a name, what nobody has
    done_before = {k[:3] for k in load_reviews(results) if not reviewer or k[3] == reviewer}
    todo = [
        r for r in run.results if (r.file, r.case_id, r.sample) not in done_before and r.response
    ]
    out.write(
        f"{len(todo)} of {len(run.results)} results to review "
        f"({len(done_before)} reviewed before). q quits, s skips a result.\n"
    )
    done = 0
    for number, result in enumerate(todo, start=1):
        out.write(_shown(result, f"[{number}/{len(todo)}]"))
        ratings: dict[str, int] = {}
        for name, _ in dimensions:
            rating = _rating(name, stdin, out)
            if rating == "q":
                out.write(f"stopped; {done} reviewed now, saved.\n")
                return done
            if rating == "s":
                break
            ratings[name] = int(rating)
        if len(ratings) < len(dimensions):
            save_review(
                results,
                {
                    "file": result.file,
                    "case_id": result.case_id,
                    "sample": result.sample,
                    "prompt": result.prompt,
                    "reviewer": reviewer,
                    "skipped": True,
                },
            )
            continue
        comment = _ask("comment (optional): ", stdin, out) or ""
        save_review(results, review_entry(result, ratings, comment, reviewer, dimensions))
        done += 1
    out.write(f"\nall reviewed; {done} in this session.\n")
    return done
