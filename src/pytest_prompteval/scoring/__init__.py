"""Scorers: pure functions of (case, request, response) → Score."""

from pytest_prompteval.scoring.score import Score

__all__ = ["Score"]
