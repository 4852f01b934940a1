"""pytest-prompteval: test LLM prompts the way engineers test code."""

from pytest_prompteval.cases import Case
from pytest_prompteval.errors import PromptevalError
from pytest_prompteval.prompts import PromptVersion
from pytest_prompteval.request import Message, Request
from pytest_prompteval.response import Response
from pytest_prompteval.templates import fill as fill_template

__version__ = "0.1.0"

__all__ = [
    "Case",
    "Message",
    "PromptVersion",
    "PromptevalError",
    "Request",
    "Response",
    "fill_template",
]
