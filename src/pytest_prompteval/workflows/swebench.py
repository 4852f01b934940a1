"""``prompteval import swebench FILE.jsonl --repos DIR``: SWE-bench instances as repository
cases over local clones.

One JSON object a line, with SWE-bench's fields (``instance_id``, ``repo``, ``base_commit``,
``problem_statement``, ``patch``, ``test_patch``, ``FAIL_TO_PASS``, ``PASS_TO_PASS``; the
lists as JSON arrays or, as in the published dataset, JSON strings holding one). Each
becomes a ``kind: repo`` case over ``DIR/<name>`` (``<name>``: the last part of ``repo``) at
``base_commit``, with ``patch`` as its reference patch and ``test_patch`` as its hidden test
patch, both written beside the case file. Nothing is fetched: a missing clone or commit is
named, with the command that brings it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_prompteval.core.errors import PromptevalError, display
from pytest_prompteval.core.gitversions import GitRefError
from pytest_prompteval.core.paths import NAME
from pytest_prompteval.core.yamldump import block
from pytest_prompteval.sandbox.workspace import open_clone

TEXT_FIELDS = ("instance_id", "repo", "base_commit", "problem_statement", "patch", "test_patch")
LIST_FIELDS = ("FAIL_TO_PASS", "PASS_TO_PASS")


@dataclass
class Imported:
    """The case file's data, the patch files to write beside it (name -> text) and every
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


def _tests(value: Any) -> list[str] | None:
    """A test list as SWE-bench writes it (an array, or a JSON string of one); None when it
    is neither."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return None
    if isinstance(value, list) and all(isinstance(t, str) and t for t in value):
        return value
    return None


def _instance(raw: Any) -> tuple[dict[str, Any], str | None]:
    """The instance's fields, checked; or the first field at fault and why."""
    if not isinstance(raw, dict):
        return {}, "expected a JSON object (one instance a line)"
    for key in TEXT_FIELDS:
        if not isinstance(raw.get(key), str) or not raw[key].strip():
            return {}, f"{key}: expected a non-empty string"
    if not NAME.match(raw["instance_id"]):
        return {}, "instance_id: expected letters, digits and _ . + - (it becomes an id)"
    if raw["repo"].count("/") != 1 or not all(NAME.match(p) for p in raw["repo"].split("/")):
        return {}, f"repo {raw['repo']!r}: expected OWNER/NAME"
    found = {key: raw[key] for key in TEXT_FIELDS}
    for key in LIST_FIELDS:
        tests = _tests(raw.get(key))
        if tests is None:
            return {}, f"{key}: expected a list of test ids (or a JSON string of one)"
        found[key] = tests
    return found, None


def _clone_problem(clone: Path, instance: dict[str, Any]) -> str | None:
    """Why the instance's clone cannot serve it, or None."""
    url = f"https://github.com/{instance['repo']}"
    try:
        repo = open_clone(clone)
    except GitRefError:
        return f"no clone of {instance['repo']} at {display(clone)} (git clone {url} {clone})"
    try:
        repo.commit(instance["base_commit"])
    except GitRefError:
        return (
            f"{display(clone)} has no commit {instance['base_commit']} "
            f"(git -C {clone} fetch {url} {instance['base_commit']})"
        )
    return None


def swebench_cases(source: Path, repos: Path, out: Path) -> Imported:
    """The cases of ``source`` for the case file ``out/<source stem>.yaml``; its patches go
    to the folder ``out/<source stem>/``."""
    folder = source.stem
    imported = Imported({"description": f"SWE-bench instances from {source.name}", "cases": []})
    seen: dict[str, int] = {}
    for number, line in _lines(source):
        where = display(source, number)
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as exc:
            imported.problems.append(f"{where}: not JSON: {exc.msg} (column {exc.colno})")
            continue
        instance, why = _instance(raw)
        if why is not None:
            named = raw.get("instance_id") if isinstance(raw, dict) else None
            prefix = f"instance {named!r}: " if isinstance(named, str) else ""
            imported.problems.append(f"{where}: {prefix}{why}")
            continue
        case_id = instance["instance_id"]
        if case_id in seen:
            imported.problems.append(
                f"{where}: instance {case_id!r}: instance_id repeats line {seen[case_id]}"
            )
            continue
        seen[case_id] = number
        clone = repos / instance["repo"].split("/")[1]
        if problem := _clone_problem(clone, instance):
            imported.problems.append(f"{where}: instance {case_id!r}: {problem}")
            continue
        reference, tests = f"{folder}/{case_id}.diff", f"{folder}/{case_id}.tests.diff"
        imported.patches[reference] = instance["patch"]
        imported.patches[tests] = instance["test_patch"]
        imported.data["cases"].append(
            {
                "id": case_id,
                "kind": "repo",
                "description": f"{instance['repo']} at {instance['base_commit'][:12]}",
                "repo": {
                    "git": Path(os.path.relpath(clone, out)).as_posix(),
                    "ref": instance["base_commit"],
                },
                "input": {"issue": block(instance["problem_statement"])},
                "fail_to_pass": instance["FAIL_TO_PASS"],
                "pass_to_pass": instance["PASS_TO_PASS"],
                "reference_patch": reference,
                "test_patch": tests,
            }
        )
    return imported
