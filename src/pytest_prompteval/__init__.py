"""pytest-prompteval: test LLM prompts the way engineers test code."""

from pytest_prompteval.cases import Case
from pytest_prompteval.errors import PromptevalError
from pytest_prompteval.prompts import PromptVersion
from pytest_prompteval.request import Message, Request
from pytest_prompteval.response import Response
from pytest_prompteval.scoring.registry import scorer
from pytest_prompteval.scoring.score import Score
from pytest_prompteval.templates import fill as fill_template

__version__ = "0.1.0"

__all__ = [
    "Case",
    "Message",
    "PromptVersion",
    "PromptevalError",
    "Request",
    "Response",
    "Score",
    "fill_template",
    "scorer",
]
