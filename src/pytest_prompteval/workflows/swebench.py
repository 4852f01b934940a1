"""``prompteval import swebench FILE.jsonl --repos DIR``: SWE-bench instances as repository
cases over local clones (or a SWE-bench 5.x folder of tasks: ``tasks/<id>/{task.yaml,
problem_statement.md, gold.patch, test.patch, tests.json}``).

One JSON object a line, with SWE-bench's fields (``instance_id``, ``repo``, ``base_commit``,
``problem_statement``, ``patch``, ``test_patch``, ``FAIL_TO_PASS``, ``PASS_TO_PASS``; the
lists as JSON arrays or, as in the published dataset, JSON strings holding one). Each
becomes a ``kind: repo`` case over ``DIR/<name>`` (``<name>``: the last part of ``repo``) at
``base_commit``, with ``patch`` as its reference patch and ``test_patch`` as its hidden test
patch, both written beside the case file. Nothing is fetched: a missing clone or commit is
named, with the command that brings it.

``--environments FILE`` maps SWE-bench's ``repo`` (or ``repo@version``, which wins) to an
environment, as SWE-bench's harness keeps a spec per repository and version: each case gets
its repository's ``environment`` (a ``requirements_file`` read into ``requirements``) and its
``test_command``.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from pytest_prompteval.core.envspec import EnvironmentSpec, parse_environment
from pytest_prompteval.core.errors import PromptevalError, display
from pytest_prompteval.core.gitversions import GitRefError
from pytest_prompteval.core.paths import NAME, read_bounded
from pytest_prompteval.core.yamldump import block
from pytest_prompteval.core.yamlload import line_of, parse_yaml
from pytest_prompteval.sandbox.workspace import open_clone
from pytest_prompteval.workflows.records import Imported, json_records

TEXT_FIELDS = ("instance_id", "repo", "base_commit", "problem_statement", "patch", "test_patch")
LIST_FIELDS = ("FAIL_TO_PASS", "PASS_TO_PASS")
#: A SWE-bench 5.x task folder's files, by the instance field each holds.
TASK_FILES = {
    "problem_statement": "problem_statement.md",
    "patch": "gold.patch",
    "test_patch": "test.patch",
}
_ENVIRONMENT_KEY = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+(@[A-Za-z0-9_.+-]+)?")


def _text(path: Path) -> str:
    try:
        return read_bounded(path).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PromptevalError(f"cannot read it: not UTF-8 ({exc.reason})", path) from None


def _task(folder: Path) -> Any:
    """A SWE-bench 5.x task folder as the instance a JSON line would hold."""
    meta = parse_yaml(_text(folder / "task.yaml"), folder / "task.yaml")
    if not isinstance(meta, Mapping):
        raise PromptevalError("expected a mapping (repo, base_commit, ...)", folder / "task.yaml")
    try:
        tests = json.loads(_text(folder / "tests.json"))
    except json.JSONDecodeError as exc:
        raise PromptevalError(f"not JSON: {exc.msg}", folder / "tests.json", exc.lineno) from None
    if not isinstance(tests, dict):
        raise PromptevalError("expected {FAIL_TO_PASS: [...], ...}", folder / "tests.json")
    found = {"instance_id": folder.name, **meta}
    for key, name in TASK_FILES.items():
        found[key] = _text(folder / name)
    for key in LIST_FIELDS:
        found[key] = tests.get(key, tests.get(key.lower()))
    return found


def _records(source: Path) -> Iterator[tuple[str, Any]]:
    """(where, instance) for each instance of a JSON-lines file or a folder of tasks; an
    instance that cannot be read is a PromptevalError in its place."""
    if source.is_dir():
        tasks = source / "tasks" if (source / "tasks").is_dir() else source
        for folder in sorted(p for p in tasks.iterdir() if (p / "task.yaml").is_file()):
            try:
                yield display(folder), _task(folder)
            except (OSError, PromptevalError) as exc:
                error = exc if isinstance(exc, PromptevalError) else PromptevalError(str(exc))
                yield display(folder), error
        return
    yield from json_records(source)


def load_environments(path: Path) -> dict[str, EnvironmentSpec]:
    """``--environments FILE``: OWNER/NAME or OWNER/NAME@VERSION -> environment, checked
    (a mistake names FILE:LINE)."""
    data = parse_yaml(_text(path), path)
    if not isinstance(data, Mapping):
        raise PromptevalError(
            "expected a mapping from OWNER/NAME (or OWNER/NAME@VERSION) to an environment",
            path,
            1,
        )
    found = {}
    for key, raw in data.items():
        line = line_of(data, key)
        if not isinstance(key, str) or not _ENVIRONMENT_KEY.fullmatch(key):
            raise PromptevalError(f"{key!r}: expected OWNER/NAME or OWNER/NAME@VERSION", path, line)
        found[key] = parse_environment(raw, repr(key), path, line, path.parent)
    return found


def _environment_fields(spec: EnvironmentSpec) -> dict[str, Any]:
    """The ``environment`` a case file holds for ``spec`` (its test command goes beside)."""
    fields: dict[str, Any] = {}
    if spec.python:
        fields["python"] = spec.python
    if spec.requirements:
        fields["requirements"] = list(spec.requirements)
    if spec.pythonpath:
        fields["pythonpath"] = list(spec.pythonpath)
    if spec.install:
        fields["install"] = spec.install
    return fields


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


def swebench_cases(
    source: Path,
    repos: Path,
    out: Path,
    environments: Mapping[str, EnvironmentSpec] | None = None,
) -> Imported:
    """The cases of ``source`` for the case file ``out/<source stem>.yaml``; its patches go
    to the folder ``out/<source stem>/``."""
    folder = source.stem
    imported = Imported({"description": f"SWE-bench instances from {source.name}", "cases": []})
    seen: dict[str, str] = {}
    for where, raw in _records(source):
        if isinstance(raw, PromptevalError):
            imported.problems.append(f"{where}: {raw}" if raw.path is None else str(raw))
            continue
        instance, why = _instance(raw)
        if why is not None:
            named = raw.get("instance_id") if isinstance(raw, dict) else None
            prefix = f"instance {named!r}: " if isinstance(named, str) else ""
            imported.problems.append(f"{where}: {prefix}{why}")
            continue
        case_id = instance["instance_id"]
        if case_id in seen:
            first = seen[case_id].rpartition(":")[2]
            imported.problems.append(
                f"{where}: instance {case_id!r}: instance_id repeats line {first}"
                if first.isdigit()
                else f"{where}: instance {case_id!r}: instance_id repeats {seen[case_id]}"
            )
            continue
        seen[case_id] = where
        clone = repos / instance["repo"].split("/")[1]
        if problem := _clone_problem(clone, instance):
            imported.problems.append(f"{where}: instance {case_id!r}: {problem}")
            continue
        reference, tests = f"{folder}/{case_id}.diff", f"{folder}/{case_id}.tests.diff"
        imported.patches[reference] = instance["patch"]
        imported.patches[tests] = instance["test_patch"]
        case: dict[str, Any] = {
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
        known = environments or {}
        spec = known.get(f"{instance['repo']}@{raw.get('version')}") or known.get(instance["repo"])
        if spec is not None:
            case["environment"] = _environment_fields(spec)
            if spec.test_command:
                case["test_command"] = spec.test_command
        imported.data["cases"].append(case)
    return imported
