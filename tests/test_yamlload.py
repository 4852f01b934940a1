"""The YAML loader: built from parser events, the same values as PyYAML's safe loader, with
the line of every mapping and key; what the fast path leaves out goes to the constructor."""

from __future__ import annotations

import datetime
import glob
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_prompteval.core.errors import PromptevalError
from pytest_prompteval.core.yamlload import MarkedDict, load_yaml

SHARED = Path(__file__).resolve().parents[2] / "shared"
ROOT = Path(__file__).resolve().parents[1]


def load(tmp_path: Path, text: str) -> Any:
    path = tmp_path / "f.yaml"
    path.write_text(text)
    return load_yaml(path)


def plain(value: Any) -> Any:
    """The same value with plain dicts, to compare with yaml.safe_load."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


@pytest.mark.parametrize(
    "text",
    [
        "a: 1\nb: 2.5\nc: true\nd: ~\ne: 2026-11-26\nf: '007'\ng: 0x1f\nh: .inf\ni: ''\n",
        "- [1, 2, {x: y}]\n- {}\n- []\n- !!str 12\n- !!int '3'\n- !!float 1\n",
        "base: &b {k: v, n: [1, 2]}\nuse: *b\nlist: &l [a]\nagain: *l\ns: &s text\nt: *s\n",
        "merged:\n  <<: {a: 1, b: 2}\n  b: 3\n",
        "key: |\n  block\n  text\nfolded: >\n  one\n  two\n",
        "1: one\nfalse: yes\nnull: none\n2.5: x\n",
        "",
        "just a string\n",
        "dup: 1\ndup: 2\n",
        "when: 2026-11-26 10:00:00\n",
    ],
)
def test_same_values_as_the_safe_loader(tmp_path: Path, text: str) -> None:
    expected = yaml.safe_load(text)
    if isinstance(expected, dict):  # keys are always strings here
        expected = {str(k): v for k, v in expected.items()}
    assert plain(load(tmp_path, text)) == expected


def test_lines_of_mappings_and_keys(tmp_path: Path) -> None:
    data = load(tmp_path, "# c\ncases:\n  - id: a\n    input:\n      x: 1\n  - id: b\n")
    assert isinstance(data, MarkedDict)
    assert data.line_of("cases") == 2
    first, second = data["cases"]
    assert (first.line, first.line_of("id"), first.line_of("input")) == (3, 3, 4)
    assert first["input"].line_of("x") == 5
    assert second.line_of("id") == 6
    assert first.line_of("absent") == first.line


def test_aliases_share_the_anchored_value(tmp_path: Path) -> None:
    data = load(tmp_path, "a: &x {k: [1]}\nb: *x\n")
    assert data["a"] is data["b"]


def test_timestamps_and_bools_are_constructed(tmp_path: Path) -> None:
    data = load(tmp_path, "d: 2026-11-26\nb: off\n")
    assert data == {"d": datetime.date(2026, 11, 26), "b": False}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: !!python/object:os.system x\n", "f.yaml:1: invalid YAML: *python/object*"),
        ("a: *nowhere\n", "f.yaml:1: invalid YAML: *undefined alias*"),
        ("a: 1\n---\nb: 2\n", "f.yaml:2: invalid YAML: *single document*"),
        ("a:\n  - b\n c: 1\n", "f.yaml:3: invalid YAML: *"),
        ("a: {b: 1\n", "f.yaml:2: invalid YAML: *"),
    ],
)
def test_errors_name_file_and_line(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(PromptevalError) as info:
        load(tmp_path, text)
    assert info.match(message.replace("*", ".*").replace("?", "."))


def test_every_yaml_file_we_know_loads_as_the_constructor_loads_it() -> None:
    files = [
        Path(f)
        for pattern in (f"{SHARED}/compat/**/*.yaml", f"{ROOT}/prompts/*.yaml")
        for f in glob.glob(pattern, recursive=True)
    ] + sorted((ROOT / "prompt_cases").glob("*.yaml"))
    assert files
    for path in files:
        assert plain(load_yaml(path)) == yaml.safe_load(path.read_text()), path
