from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_prompteval.core.templates import MissingVariables, fill, format_value, literal


def test_placeholders_literal_braces_and_other_braces() -> None:
    template = 'Explain {arch} for {{audience}}; JSON like {"a": 1} and {} stay.'
    assert fill(template, {"arch": "x86_64"}) == (
        'Explain x86_64 for {audience}; JSON like {"a": 1} and {} stay.'
    )


def test_missing_placeholders_are_all_listed_once() -> None:
    with pytest.raises(MissingVariables) as excinfo:
        fill("{a} {b} {a} {c}", {"b": 1})
    assert excinfo.value.names == ["a", "c"]


@given(st.text(alphabet=st.sampled_from("{}ab_1 ")))
def test_a_literal_template_fills_to_its_text(text: str) -> None:
    assert fill(literal(text), {"a": "x", "ab": "y", "b": "z"}) == text


def test_a_literal_template_escapes_only_what_a_template_reads() -> None:
    assert literal('{"a": {b}} {{c}} {} x}}') == '{"a": {{b}}} {{{{c}}}} {} x}}}}'


@given(st.text())
def test_values_are_never_re_expanded(value: str) -> None:
    # C++ and JSON full of braces pass through untouched, even text that looks like a
    # placeholder or an escaped brace.
    assert fill("<{code}>", {"code": value, "x": "boom"}) == f"<{value}>"


@pytest.mark.parametrize(
    ("value", "text"),
    [(None, ""), (3, "3"), (True, "True"), (["-O2", "-g"], "-O2, -g"), ({"a": 1}, '{"a": 1}')],
)
def test_value_formatting(value: object, text: str) -> None:
    assert format_value(value) == text
