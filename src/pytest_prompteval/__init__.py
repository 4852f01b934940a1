"""pytest-prompteval: test LLM prompts the way engineers test code."""

from pytest_prompteval.core.cases import Case
from pytest_prompteval.core.errors import PromptevalError
from pytest_prompteval.core.prompts import PromptVersion
from pytest_prompteval.core.request import Message, Request
from pytest_prompteval.core.response import Response
from pytest_prompteval.core.templates import fill as fill_template
from pytest_prompteval.core.version import __version__
from pytest_prompteval.interaction.tools import ToolError, tool
from pytest_prompteval.scoring.registry import scorer
from pytest_prompteval.scoring.score import Score

__all__ = [
    "Case",
    "Message",
    "PromptVersion",
    "PromptevalError",
    "Request",
    "Response",
    "Score",
    "ToolError",
    "__version__",
    "fill_template",
    "scorer",
    "tool",
]
