"""The JSON Schemas of case files and prompt versions agree with the loaders: they accept
every file the project and the public explain corpora hold, and reject what the loaders
reject (a misspelt field first of all)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from pytest_prompteval.cli import build_parser
from pytest_prompteval.core.cases import CASE_FIELDS, load_case_file
from pytest_prompteval.core.errors import PromptevalError
from pytest_prompteval.core.prompts import load_prompt
from pytest_prompteval.core.yamlload import line_of
from pytest_prompteval.scoring.assertions import parse_assertions
from pytest_prompteval.workflows.fileschemas import KINDS, render, schema, shipped_path

from .conftest import COMPAT, ROOT, prompteval

INIT = ROOT / "src" / "pytest_prompteval" / "data" / "init"
CASE_FILES = sorted(
    [
        *ROOT.glob("prompt_cases/*.yaml"),
        *ROOT.glob("examples/*/prompt_cases/*.yaml"),
        *INIT.glob("*/prompt_cases/*.yaml"),
        *COMPAT.glob("*/test_cases/*.yaml"),
    ]
)
PROMPT_FILES = sorted(
    [
        *ROOT.glob("prompts/*.yaml"),
        *ROOT.glob("examples/*/prompts/*.yaml"),
        ROOT / "examples" / "humaneval" / "complete.yaml",
        *INIT.glob("*/prompts/*.yaml"),
        *COMPAT.glob("*/prompts/*.yaml"),
    ]
)


def errors(kind: str, document: Any) -> list[str]:
    validator = jsonschema.Draft7Validator(schema(kind))
    return [e.message for e in validator.iter_errors(document)]


def name(path: Path) -> str:
    return str(path.relative_to(ROOT.parent))


def test_the_shipped_schemas_are_the_generated_ones() -> None:
    for kind in KINDS:
        assert shipped_path(kind).read_text() == render(kind), (
            "run python -m pytest_prompteval.workflows.fileschemas"
        )
        jsonschema.Draft7Validator.check_schema(schema(kind))


def test_the_corpora_are_there() -> None:
    assert any(COMPAT.glob("*/test_cases/*.yaml")), f"no explain corpus at {COMPAT}"
    assert len(CASE_FILES) > 15 and len(PROMPT_FILES) > 15


@pytest.mark.parametrize("path", CASE_FILES, ids=name)
def test_every_case_file_we_know_is_accepted(path: Path) -> None:
    assert errors("case", yaml.safe_load(path.read_text())) == []


@pytest.mark.parametrize("path", PROMPT_FILES, ids=name)
def test_every_prompt_version_we_know_is_accepted(path: Path) -> None:
    assert errors("prompt", yaml.safe_load(path.read_text())) == []


CASE = "cases:\n- id: c1\n  input: {q: x}\n"
#: mistakes in a case file: (what is wrong, the file, what the loader says)
BAD_CASES = [
    ("misspelt case field", CASE + "  assertions: [{contains: x}]\n", "did you mean 'assert'?"),
    ("misspelt file field", "case:\n- id: c1\n  input: {}\n", "unknown field 'case'"),
    ("no input", "cases:\n- id: c1\n", "field 'input': expected a mapping"),
    ("no id", "cases:\n- input: {}\n", "field 'id': expected a string"),
    ("id with a space", "cases:\n- id: c 1\n  input: {}\n", "field 'id': expected a name"),
    ("cases not a list", "cases: {id: c1}\n", "expected a list of cases"),
    ("threshold over 1", CASE + "  threshold: 70\n", "expected a number from 0 to 1"),
    ("no samples", CASE + "  samples: 0\n", "expected a whole number from 1 to 1000"),
    ("pytest's own marker", CASE + "  category: skip\n", "not one of pytest's own markers"),
    ("tags not a list", CASE + "  tags: x86\n", "expected a list of strings"),
    ("topics not a list", CASE + "  expected_topics: loops\n", "expected a list of strings"),
    ("description a number", "description: 5\n" + CASE, "expected a string"),
    ("misspelt assertion", CASE + "  assert: [{contians: x}]\n", "did you mean 'contains'?"),
    ("misspelt option", CASE + "  assert: [{contains: x, wieght: 2}]\n", "unknown option"),
    ("empty value", CASE + "  assert: [{contains: ''}]\n", "non-empty string"),
    ("type without value", CASE + "  assert: [{type: regex}]\n", "expected a regular expression"),
    ("negative limit", CASE + "  assert: [{max_length: -1}]\n", "expected a number >= 0"),
    ("weight below 0", CASE + "  assert: [{contains: x, weight: -1}]\n", "weight: expected"),
    ("two field checks", CASE + "  assert: [{json_field: {path: a, equals: 1, in: [1]}}]\n",
     "exactly one of"),
    ("misspelt field key", CASE + "  assert: [{json_field: {pth: a, equals: 1}}]\n",
     "did you mean 'path'?"),
    ("unknown mode", CASE + "  assert: [{tool_sequence: [a], mode: ordered}]\n", "mode 'ordered'"),
    ("even votes", CASE + "  assert: [{judge: 'is it right?', votes: 2}]\n", "votes: expected"),
    ("mode on the wrong type", CASE + "  assert: [{contains: x, mode: exact}]\n",
     "unknown option(s) mode"),
    ("file_matches key", CASE + "  assert: [{file_matches: {path: a.py, regx: x}}]\n",
     "did you mean 'regex'?"),
    ("a scorer given a value", CASE + "  assert: [{type: mine, value: 3}]\n",
     "unknown assertion or scorer 'mine'"),
]  # fmt: skip
PROMPT = "user_prompt: hi\n"
BAD_PROMPTS = [
    ("misspelt field", PROMPT + "system_promt: x\n", "did you mean 'system_prompt'?"),
    ("no template", "name: x\n", "expected a system_prompt or a user_prompt"),
    ("template a number", "user_prompt: 5\n", "expected a string"),
    ("model_config a string", PROMPT + "model_config: haiku\n", "expected a mapping"),
    ("model section a list", PROMPT + "model: [haiku]\n", "expected a mapping"),
    ("misspelt assertion", PROMPT + "assert: [{regx: x}]\n", "did you mean 'regex'?"),
    ("ablation with more", "ablate: {from: a, remove: system_prompt}\nuser_prompt: x\n",
     "an ablation: unknown field 'user_prompt'"),
    ("ablation misspelt", "ablate: {form: a, remove: system_prompt}\n", "unknown field 'form'"),
]  # fmt: skip


def loader_error(kind: str, path: Path) -> str:
    """What collection says of the file: its loader's error, then its assertions'."""
    try:
        if kind == "case":
            for case in load_case_file(path).cases:
                parse_assertions(case.raw.get("assert"), (path, case.line), f"case {case.id!r}")
        else:
            (path.parent / "a.yaml").write_text(PROMPT)  # the version an ablation derives from
            prompt = load_prompt(path)
            where = (path, line_of(prompt.raw, "assert"))
            parse_assertions(prompt.raw.get("assert"), where, "prompt")
    except PromptevalError as exc:
        return str(exc)
    return ""


@pytest.mark.parametrize(
    ("kind", "text", "said"),
    [("case", text, said) for _, text, said in BAD_CASES]
    + [("prompt", text, said) for _, text, said in BAD_PROMPTS],
    ids=[f"case: {what}" for what, _, _ in BAD_CASES]
    + [f"prompt: {what}" for what, _, _ in BAD_PROMPTS],
)
def test_what_the_loaders_reject_the_schema_rejects(
    tmp_path: Path, kind: str, text: str, said: str
) -> None:
    path = tmp_path / ("cases.yaml" if kind == "case" else "v.yaml")
    path.write_text(text)
    assert said in loader_error(kind, path)
    assert errors(kind, yaml.safe_load(text)), "the schema accepts it"


def test_a_good_file_of_each_kind_passes_both(tmp_path: Path) -> None:
    case = CASE + "  assert: [{contains: x}, {json_field: {path: a, in: [1, 2]}}, {mine: true}]\n"
    assert errors("case", yaml.safe_load(case)) == []
    assert errors("prompt", yaml.safe_load(PROMPT + "model_config: {max_tokens: 9}\n")) == []


def test_a_field_the_loader_learns_must_be_described(monkeypatch: pytest.MonkeyPatch) -> None:
    fields = "pytest_prompteval.workflows.fileschemas.CASE_FIELDS"
    monkeypatch.setattr(fields, CASE_FIELDS | {"newfield"})
    with pytest.raises(RuntimeError, match=r"not described \['newfield'\]"):
        schema("case")


def test_prompteval_schema_prints_them_with_the_declared_fields(tmp_path: Path) -> None:
    (subparsers,) = [a for a in build_parser()._actions if a.dest == "command"]
    (kind,) = [a for a in subparsers.choices["schema"]._actions if a.dest == "kind"]  # type: ignore[index]
    assert tuple(kind.choices or ()) == KINDS
    (tmp_path / "pytest.ini").write_text("[pytest]\nprompteval_case_fields = reviewer\n")
    printed = prompteval(tmp_path, "schema", "case")
    assert printed.returncode == 0, printed.stderr
    document = yaml.safe_load(printed.stdout)
    assert "reviewer" in document["definitions"]["case"]["properties"]
    assert "**/prompt_cases/**/*.yaml" in document["description"]
    printed = prompteval(tmp_path, "schema", "prompt")
    assert printed.stdout == render("prompt")
