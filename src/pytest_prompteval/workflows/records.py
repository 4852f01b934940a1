"""What the ``import`` commands read and make: a file of records (one JSON object a line,
or one JSON array), and the cases converted with every problem found."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_prompteval.core.errors import PromptevalError, display

TOO_DEEP = "values nested too deeply to read"


@dataclass
class Imported:
    """The case file's data, the files to write beside it (name -> text) and every
    problem found, each one line naming FILE:LINE."""

    data: dict[str, Any]
    patches: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def _lines(source: Path) -> Iterator[tuple[int, str]]:
    try:
        with source.open(encoding="utf-8") as handle:
            for number, line in enumerate(handle, 1):
                if line.strip():
                    yield number, line
    except (OSError, UnicodeDecodeError) as exc:
        raise PromptevalError(f"cannot read it: {exc}", source) from None


def json_records(source: Path) -> Iterator[tuple[str, Any]]:
    """(where, record) for each line of a JSON-lines file, or each item of a file holding
    one JSON array (sanitized MBPP's ``.json``); a record that cannot be read is a
    PromptevalError in its place."""
    lines = _lines(source)
    first = next(lines, None)
    if first is not None and first[1].lstrip().startswith("["):
        text = first[1] + "".join(line for _, line in lines)
        try:
            items = json.loads(text)
        except json.JSONDecodeError as exc:
            error = PromptevalError(f"not JSON: {exc.msg} (column {exc.colno})")
            yield display(source, first[0] + exc.lineno - 1), error
            return
        except RecursionError:
            yield display(source, first[0]), PromptevalError(TOO_DEEP)
            return
        for index, item in enumerate(items if isinstance(items, list) else [items]):
            yield f"{display(source)}[{index}]", item
        return
    for number, line in [first, *lines] if first is not None else []:
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            record = PromptevalError(f"not JSON: {exc.msg} (column {exc.colno})")
        except RecursionError:
            record = PromptevalError(TOO_DEEP)
        yield display(source, number), record
