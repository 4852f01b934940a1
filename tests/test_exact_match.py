"""Exact match: a sample is the reference when it compiles to the same code, positions aside."""

from __future__ import annotations

import pytest

from pytest_prompteval.sandbox import SampleReport
from pytest_prompteval.scoring.code.measure import measure
from pytest_prompteval.scoring.code.spec import CodeSpec, CodeTest

REFERENCE = "def add(a, b):\n    return a + b\n"
RAN = SampleReport(events=[{"phase": "syntax", "ok": True}, {"phase": "load", "ok": True}])


def exact(code: str, reference: str = REFERENCE) -> bool:
    tests = (CodeTest("assert", "add(1, 2) == 3"),)
    spec = CodeSpec(entry_point="add", tests=tests, reference=reference)
    return measure(spec, code, RAN).exact_match


@pytest.mark.parametrize(
    "code",
    [
        REFERENCE,
        "def add(a, b):  # the sum\n\n    return (a + b)\n",
        "def add(a,b): return a+b",
        "def add(a, b):\n    return a + b\n# sample 7\n",
    ],
)
def test_comments_layout_and_parentheses_do_not_count(code: str) -> None:
    assert exact(code)


@pytest.mark.parametrize(
    ("code", "reference"),
    [
        ("def add(a, b):\n    return b + a\n", REFERENCE),
        ("def add(x, y):\n    return x + y\n", REFERENCE),
        ("def add(a, b):\n    return True\n", "def add(a, b):\n    return 1\n"),
        ("def add(a, b):\n    return -0.0\n", "def add(a, b):\n    return 0.0\n"),
        ("def add(a, b):\n    return (1, True)\n", "def add(a, b):\n    return (1, 1)\n"),
        ('def add(a, b):\n    "Add."\n    return a + b\n', REFERENCE),
        ("def add(a, b):\n    return a + b\nadd = None\n", REFERENCE),
        ("def add(a, b:\n    return a + b\n", REFERENCE),
    ],
)
def test_what_the_code_does_or_says_counts(code: str, reference: str) -> None:
    assert not exact(code, reference)


def test_a_set_written_in_another_order_is_the_same_constant() -> None:
    assert exact(
        "def add(a, b):\n    return a in {1, 2, 3}\n",
        "def add(a, b):\n    return a in {3, 1, 2}\n",
    )
