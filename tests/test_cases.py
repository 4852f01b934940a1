from __future__ import annotations

import dataclasses
import hmac
from collections.abc import Collection
from pathlib import Path
from typing import Any

import pytest

from pytest_prompteval.core import cases
from pytest_prompteval.core.cases import LoadedCaseFile, load_case_file, load_case_file_cached
from pytest_prompteval.core.errors import PromptevalError
from pytest_prompteval.core.yamlload import line_of

from .conftest import COMPAT, generated_project

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


# The case cache (#28): a file is parsed and checked once per content.


@pytest.fixture
def checked(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[str]:
    """The names of the case files checked, one per check, in order (this test's own
    machine key, so no entry of another test's is found)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user"))
    names: list[str] = []
    check = cases.read_case_file

    def counting(
        path: Path, data: Any, extra_fields: Collection[str] = (), root: Path | None = None
    ) -> LoadedCaseFile:
        names.append(path.name)
        return check(path, data, extra_fields, root)

    monkeypatch.setattr(cases, "read_case_file", counting)
    return names


def same_cases(got: LoadedCaseFile, expected: LoadedCaseFile) -> None:
    """Every field equal (``raw``, ``vars`` and ``root`` too), and every line."""
    assert got == expected
    for mine, theirs in zip(got.cases, expected.cases, strict=True):
        for name in dataclasses.fields(mine):
            assert getattr(mine, name.name) == getattr(theirs, name.name), name.name
        assert mine.raw.key_lines == theirs.raw.key_lines  # type: ignore[attr-defined]
        assert mine.input.key_lines == theirs.input.key_lines  # type: ignore[attr-defined]


CACHED = (
    "description: d\ncases:\n"
    "- id: a1\n  category: loops\n  tags: [fast]\n  input: {code: 'int f();'}\n"
    "  vars: {lang: C}\n  level: 2\n"
    "- id: a2\n  input:\n    n: 1\n  threshold: 1\n  samples: 3\n  description: two\n"
)


def test_a_cached_file_is_built_again_without_its_checks(
    tmp_path: Path, checked: list[str]
) -> None:
    path = write(tmp_path, CACHED)
    cache = tmp_path / "cache"
    cache.mkdir()
    first = load_case_file_cached(path, cache, ("level",), tmp_path)
    assert checked == ["cases.yaml"]
    again = load_case_file_cached(path, cache, ("level",), tmp_path)
    assert checked == ["cases.yaml"]  # built from the entry: not checked again
    same_cases(again, first)
    same_cases(again, load_case_file(path, ("level",), tmp_path))
    assert again.cases[1].threshold == 1.0 and isinstance(again.cases[1].threshold, float)
    assert again.cases[0].root == tmp_path
    assert line_of(again.cases[1].raw, "samples") == 13


def test_what_the_checks_read_changing_checks_the_file_again(
    tmp_path: Path, checked: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path, CACHED)
    cache = tmp_path / "cache"
    cache.mkdir()
    load_case_file_cached(path, cache, ("level",), tmp_path)
    load_case_file_cached(path, cache, ("level", "other"), tmp_path)  # a field declared
    load_case_file_cached(path, cache, ("level",), tmp_path.parent)  # another root
    assert checked == ["cases.yaml"] * 3
    load_case_file_cached(path, cache, ("level", "other"), tmp_path)
    assert checked == ["cases.yaml"] * 3  # each kept apart
    rules = cases._RULES
    monkeypatch.setattr(cases, "_RULES", "edited")  # an editable install's rules edited
    load_case_file_cached(path, cache, ("level",), tmp_path)
    monkeypatch.setattr(cases, "_RULES", rules)
    assert checked == ["cases.yaml"] * 4
    path.write_text(CACHED.replace("n: 1", "n: 2"))  # the content
    assert load_case_file_cached(path, cache, ("level",), tmp_path).cases[1].input == {"n": 2}
    assert checked == ["cases.yaml"] * 5
    with pytest.raises(PromptevalError, match="case 'a1': unknown field 'level'; put template"):
        load_case_file_cached(path, cache, (), tmp_path)  # the declaration dropped


def test_a_file_that_fails_its_checks_is_not_kept_and_fails_the_same_way(
    tmp_path: Path, checked: list[str]
) -> None:
    path = write(tmp_path, "cases:\n- id: a\n  input: {}\n  expected_topic: [x]\n")
    cache = tmp_path / "cache"
    cache.mkdir()
    errors = []
    for _ in range(2):
        with pytest.raises(PromptevalError) as excinfo:
            load_case_file_cached(path, cache, (), tmp_path)
        errors.append(str(excinfo.value))
    assert errors[0] == errors[1]
    assert errors[0].endswith(
        "cases.yaml:4: case 'a': unknown field 'expected_topic'; did you mean 'expected_topics'?"
    )
    assert checked == ["cases.yaml"] * 2 and not list(cache.iterdir())


@pytest.mark.parametrize("how", ["altered", "unsigned", "another key"])
def test_an_entry_not_ours_is_parsed_and_checked_again(
    tmp_path: Path, checked: list[str], how: str
) -> None:
    """A pull request commits ``.pytest_cache``: an entry whose case would fail the checks
    (a pytest marker as its category) is not built from, the file is."""
    path = write(tmp_path, CACHED)
    cache = tmp_path / "cache"
    cache.mkdir()
    first = load_case_file_cached(path, cache, ("level",), tmp_path)
    (entry,) = cache.iterdir()
    signature, _, payload = entry.read_bytes().partition(b"\n")
    planted = payload.replace(b'"loops"', b'"skip"')
    assert planted != payload
    signed = {
        "altered": signature,
        "unsigned": b"",
        "another key": hmac.new(b"k" * 32, entry.name.encode() + b"\n" + planted, "sha256")
        .hexdigest()
        .encode(),
    }[how]
    entry.write_bytes(signed + b"\n" + planted)
    again = load_case_file_cached(path, cache, ("level",), tmp_path)
    assert checked == ["cases.yaml"] * 2
    same_cases(again, first)
    assert again.cases[0].category == "loops"


def test_a_second_collection_does_not_check_the_cases_again(
    pytester: pytest.Pytester, checked: list[str]
) -> None:
    generated_project(pytester, 3, fields="  level: 1\n")
    pytester.makeini("[pytest]\nprompteval_case_fields = level\n")
    first = pytester.runpytest("--prompt=v", "--collect-only", "-q")
    again = pytester.runpytest("--prompt=v", "--collect-only", "-q")
    assert checked == ["c.yaml"]
    assert again.outlines[:-1] == first.outlines[:-1] and again.ret == pytest.ExitCode.OK
    again.stdout.fnmatch_lines(["prompt_cases/c.yaml::c00[[]v[]]", "*3 tests collected*"])
    # the ini's declared fields are part of the entry's name: changed, checked again
    pytester.makeini("[pytest]\nprompteval_case_fields = level other\n")
    pytester.runpytest("--prompt=v", "--collect-only", "-q").assert_outcomes()
    assert checked == ["c.yaml"] * 2
    pytester.makeini("[pytest]\n")
    for _ in range(2):  # not declared: the same error each time, nothing kept
        dropped = pytester.runpytest("--prompt=v", "--collect-only", "-q")
        assert dropped.ret == pytest.ExitCode.INTERRUPTED
        dropped.stdout.fnmatch_lines(["prompt_cases/c.yaml:3: case 'c00': unknown field 'level'*"])
    assert checked == ["c.yaml"] * 4


def test_a_mistake_found_after_the_checks_still_names_its_line_from_the_cache(
    pytester: pytest.Pytester, checked: list[str]
) -> None:
    """The file passes its own checks, so it is kept; a difficulty the scorer does not know
    is found when its items are made, from the kept lines."""
    generated_project(pytester, 2, fields="  difficulty: beginer\n")
    results = [pytester.runpytest("--prompt=v", "--collect-only", "-q") for _ in range(2)]
    assert checked == ["c.yaml"]
    for result in results:
        result.stdout.fnmatch_lines(
            ["prompt_cases/c.yaml:3: case 'c00': unknown difficulty 'beginer'; did you mean *"]
        )
    assert results[0].outlines[:-1] == results[1].outlines[:-1]  # the last says how long
