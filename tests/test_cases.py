from __future__ import annotations

from pathlib import Path

import pytest

from pytest_prompteval.core.cases import load_case_file
from pytest_prompteval.core.errors import PromptevalError

from .conftest import COMPAT

COMPAT_FILES = sorted(COMPAT.glob("*/test_cases/*.yaml"))


@pytest.mark.skipif(not COMPAT_FILES, reason="compatibility corpus not found")
@pytest.mark.parametrize("path", COMPAT_FILES, ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_every_compat_file_loads_unchanged(path: Path) -> None:
    case_file = load_case_file(path)  # no fields declared
    assert case_file.cases
    for case in case_file.cases:
        assert case.input, case.id
        # Declared fields are kept for templates and hooks, never dropped.
        assert set(case.raw) >= {"id", "input"}
    if path.name == "audience_variations.yaml":
        first = case_file.cases[0]
        assert (first.raw["audience"], first.raw["explanation_type"]) == ("beginner", "assembly")


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "cases.yaml"
    path.write_text(text)
    return path


def test_case_fields_and_lines(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "description: d\ncases:\n"
        "- id: a1\n  category: loops\n  difficulty: beginner\n  tags: [fast, x86]\n"
        "  input: {code: 'int f();'}\n  expected_topics: [loop_optimization]\n  extra: 1\n"
        "- id: a2\n  input: {}\n  threshold: 0.5\n  samples: 3\n",
    )
    first, second = load_case_file(path, extra_fields=("extra",)).cases
    assert (first.id, first.line, first.category, first.tags) == ("a1", 3, "loops", ("fast", "x86"))
    assert first.markers == ("loops", "beginner", "fast", "x86")
    assert first.raw["extra"] == 1
    assert (second.line, second.threshold, second.samples) == (10, 0.5, 3)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("cases: [\n  {id: a, input: {}\n", r"cases.yaml:3: invalid YAML"),
        ("- just a list\n", "cases.yaml:1: expected a mapping with 'description' and 'cases'"),
        ("description: x\n", "field 'cases': expected a list of cases, got nothing"),
        (
            "cases:\n- id: a\n  input: {}\n  category: [1, 2]\n",
            "cases.yaml:4: case 'a', field 'category': expected a non-empty string, got list",
        ),
        (
            "cases:\n- id: a\n  input: 'text'\n",
            "cases.yaml:3: case 'a', field 'input': expected a mapping of the request's fields",
        ),
        ("cases:\n- category: c\n  input: {}\n", "cases.yaml:2: case '#1', field 'id': expected"),
        (
            "cases:\n- id: a\n  input: {}\n  threshold: 2\n",
            "cases.yaml:4: case 'a', field 'threshold': expected a number from 0 to 1, got int 2",
        ),
        (
            "cases:\n- id: a b\n  input: {}\n",
            "case 'a b', field 'id': expected a name of letters, digits",
        ),
        (
            "cases:\n- id: a\n  input: {}\n  category: skip\n",
            "field 'category': expected a name that is not one of pytest's own markers",
        ),
        (
            "cases:\n- id: a\n  input: {}\n- id: b\n  input: {}\n- id: a\n  input: {}\n",
            "cases.yaml:6: duplicate case id 'a': first defined at",
        ),
    ],
    ids=[
        "yaml",
        "top",
        "no-cases",
        "type",
        "input",
        "no-id",
        "range",
        "id-chars",
        "reserved",
        "duplicate",
    ],
)
def test_validation_errors_name_file_line_case_and_field(
    tmp_path: Path, text: str, expected: str
) -> None:
    with pytest.raises(PromptevalError) as excinfo:
        load_case_file(write(tmp_path, text))
    assert expected in str(excinfo.value)
