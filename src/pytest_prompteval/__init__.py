"""pytest-prompteval: test LLM prompts the way engineers test code."""

# ruff: noqa: E402 - the rewriting is turned off before the first of our modules loads
import sys

# pytest rewrites the asserts of every module of a plugin's distribution as it imports it:
# with no bytecode cache (PYTHONDONTWRITEBYTECODE, read-only site-packages) a parse and
# compile of each of ours in every process, about 1.5 s of CPU. None of ours needs it.
for _finder in sys.meta_path:
    if type(_finder).__name__ == "AssertionRewritingHook":
        getattr(_finder, "_must_rewrite", set()).discard(__name__)
        getattr(_finder, "_marked_for_rewrite_cache", {}).clear()

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
