"""Each class name in the package means one thing: a name defined twice makes a reader (and
a traceback) guess which one is meant."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest_prompteval

PACKAGE = Path(pytest_prompteval.__file__).parent


def test_no_class_name_is_defined_twice() -> None:
    where: defaultdict[str, list[str]] = defaultdict(list)
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                where[node.name].append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert {name: found for name, found in where.items() if len(found) > 1} == {}
