"""Scoring an answer into a ``Score``: the automatic scorer, assertions and a project's
custom scorers are pure functions of the answer; the judge asks Claude (through the same
store and provider as the answer), code and repository verdicts run tests in the sandbox."""

from pytest_prompteval.scoring.score import Score

__all__ = ["Score"]
