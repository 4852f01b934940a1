"""Review files (``<run>.review.json``) sit in the results folder a pull request can change:
each command that reads one (analyze, calibrate, review) refuses a malformed or forged one
in one line naming the file and the entry, never a traceback or a wrong figure."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_prompteval.testing import AnthropicServer

from .conftest import prompteval

GOOD = {
    "file": "c.yaml",
    "case_id": "one",
    "sample": 0,
    "prompt": "v",
    "ratings": {"correctness": 4, "completeness": 4, "edge_case_handling": 4, "code_quality": 4},
    "comment": "",
    "reviewer": "ana",
    "human_score": 0.8,
    "automatic_score": 0.5,
}


@pytest.fixture
def results(pytester: pytest.Pytester, anthropic_server: AnthropicServer) -> Path:
    anthropic_server.responder = lambda request: "an answer"
    pytester.makeini("[pytest]\n")
    pytester.mkdir("prompts").joinpath("v.yaml").write_text("user_prompt: '{text}'\n")
    pytester.mkdir("prompt_cases").joinpath("c.yaml").write_text(
        "cases:\n- id: one\n  input: {text: hi}\n"
    )
    pytester.runpytest("--prompt=v")
    (found,) = (pytester.path / "prompt_results").glob("*_v.json")
    return found


def forged(entry: dict[str, object]) -> str:
    return json.dumps({"results": "x", "reviews": [{**GOOD, **entry}]})


FORGED = [
    ("{not json", "not a review file: Expecting property name"),
    ('{"reviews": [{"human_score": NaN}]}', "not a review file: NaN is not a number JSON"),
    ('{"reviews": {}}', "not a review file: expected {results, reviews: [...]}"),
    ("[" * 100_000 + "]" * 100_000, "not a review file: "),
    ('{"reviews": [[]]}', "reviews[0]: expected a mapping"),
    (forged({"human_score": 5}), "reviews[0]: human_score 5 is not a number from 0 to 1"),
    (forged({"automatic_score": -1}), "automatic_score -1 is not a number from 0 to 1"),
    (forged({"ratings": {"correctness": 7}}),
     "reviews[0]: ratings: correctness 7 is not a whole number from 1 to 5"),
    (forged({"ratings": {"correctness": True}}), "correctness True is not a whole number"),
    (forged({"ratings": [5]}), "reviews[0]: ratings: expected {dimension: 1-5, ...}"),
    (forged({"human_score": None}), "reviews[0]: human_score None is not a number from 0 to 1"),
    (forged({"sample": "0"}), "reviews[0]: sample '0': expected a whole number >= 0"),
    (forged({"case_id": None}), "reviews[0]: case_id: expected a string"),
    (forged({"reviewer": ["x"]}), "reviews[0]: reviewer: expected a string"),
]  # fmt: skip


def test_a_malformed_or_forged_review_file_is_one_line_naming_it(
    pytester: pytest.Pytester, results: Path
) -> None:
    """Every reader for the first two; analyze for each of the others."""
    review = results.with_name(results.name + ".review.json")
    for number, (text, error) in enumerate(FORGED):
        review.write_text(text)
        readers = [["analyze"], ["calibrate"], ["review", str(results)]]
        for command in readers if number < 2 else readers[:1]:
            done = prompteval(pytester.path, *command, stdin="q\n")
            assert done.returncode == 2, (command, done.stdout, done.stderr)
            (line,) = done.stderr.splitlines()
            assert line.startswith(f"prompteval: error: prompt_results/{review.name}: "), line
            assert error in line, (command, line)


def test_a_skipped_entry_and_a_full_one_are_read(pytester: pytest.Pytester, results: Path) -> None:
    skipped = {k: GOOD[k] for k in ("file", "case_id", "sample", "prompt", "reviewer")}
    entries = [GOOD, {**skipped, "reviewer": "bo", "skipped": True}]
    review = results.with_name(results.name + ".review.json")
    review.write_text(json.dumps({"results": results.name, "reviews": entries}))
    done = prompteval(pytester.path, "analyze")
    assert done.returncode == 0, done.stderr
    assert "v: 1 human reviews" in done.stdout
