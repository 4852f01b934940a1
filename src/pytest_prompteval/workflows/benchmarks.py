"""``prompteval import mbpp|humanevalplus|apps|bigcodebench FILE``: code benchmarks' own
files, read where they lie (nothing is fetched), as code cases.

- MBPP (``mbpp.jsonl``: ``task_id, text, code, test_list, test_setup_code,
  challenge_test_list``; sanitized MBPP's ``.json``: ``prompt, test_imports``; MBPP+ as
  evalplus publishes it on Hugging Face: ``test``, a script of ``inputs``/``results``): the
  asserts are basic tests, the challenge asserts and MBPP+'s inputs edge ones; the setup code
  and imports the case's ``test_setup``; the function is the one the first assert calls.
- HumanEval+ (evalplus's ``HumanEvalPlus.jsonl``: ``prompt, entry_point,
  canonical_solution, test, contract, base_input, plus_input, atol``): HumanEval's case
  (``humaneval.py``), each ``plus_input`` one more edge test compared with the canonical
  solution's output within ``atol`` (1e-6 where it is 0, as evalplus does for floats).
- APPS (``question, solutions, input_output, difficulty, starter_code``, the last three as
  JSON text): with ``fn_name``, io tests (an output ``[x]`` also accepts ``x``, as APPS's
  checker does; LeetCode's ``class Solution`` through asserts); without, a program's
  ``stdin``/``stdout`` tests.
- BigCodeBench (``complete_prompt, instruct_prompt, code_prompt, canonical_solution, test,
  entry_point, libs``): its ``unittest`` module, each test method one test.
"""

from __future__ import annotations

import ast
import builtins
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_prompteval.core.errors import PromptevalError
from pytest_prompteval.core.paths import NAME
from pytest_prompteval.core.yamldump import block
from pytest_prompteval.scoring.code.spec import test_methods
from pytest_prompteval.workflows.humaneval import humaneval_case
from pytest_prompteval.workflows.records import Imported, json_records

#: evalplus's tolerance for floats where a task's ``atol`` is 0.
FLOAT_ATOL = 1e-6


class Unusable(Exception):
    """A record that cannot become a case; the message says why, in one line."""


def _field(record: Mapping[str, Any], key: str, kind: type = str, default: Any = None) -> Any:
    value = record.get(key, default)
    if not isinstance(value, kind):
        names: dict[type, str] = {str: "text", list: "a list", dict: "an object"}
        what = names.get(kind, kind.__name__)
        raise Unusable(f"field {key!r}: expected {what}" if key in record else f"no {key!r}")
    return value


def _json_field(record: Mapping[str, Any], key: str) -> Any:
    """A field APPS keeps as JSON text (or already decoded)."""
    value = record.get(key)
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value) if value.strip() else None
    except (ValueError, RecursionError) as exc:
        raise Unusable(f"field {key!r}: not JSON text ({exc})") from None


def _case_id(prefix: str, task_id: Any) -> str:
    if isinstance(task_id, bool) or not isinstance(task_id, int | str) or task_id == "":
        raise Unusable("no task id (task_id, problem_id or id)")
    text = str(task_id).replace("/", "_")
    return text if not isinstance(task_id, int) else f"{prefix}_{text}"


def _called(statement: str) -> str | None:
    """The first function an assert calls that is not a built-in (MBPP's entry point)."""
    try:
        tree = ast.parse(statement)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    for node in ast.walk(tree):
        called = node.func if isinstance(node, ast.Call) else None
        if isinstance(called, ast.Name) and not hasattr(builtins, called.id):
            return called.id
    return None


_NAMES = {"inf": math.inf, "nan": math.nan, "True": True, "False": False, "None": None}


def _literal(node: ast.AST) -> Any:
    """A literal of MBPP+'s test script (``inf`` and ``nan`` as ``math``'s)."""
    if isinstance(node, ast.Name) and node.id in _NAMES:
        return _NAMES[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_literal(node.operand)
    if isinstance(node, ast.List | ast.Tuple):
        return type(node).__name__.lower(), [_literal(e) for e in node.elts]
    return ast.literal_eval(node)


def _plain(value: Any, exact: bool) -> Any:
    """``value`` as JSON holds it; ``exact``: a tuple (or any value JSON would change) is
    refused rather than made a list."""
    if isinstance(value, tuple) and len(value) == 2 and value[0] in ("list", "tuple"):
        if value[0] == "tuple" and exact:
            raise ValueError("a tuple")
        return [_plain(v, exact) for v in value[1]]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {k: _plain(v, exact) for k, v in value.items()}
    raise ValueError(type(value).__name__)


#: evalplus's ``assertion`` for MBPP+'s tests whose values an io test cannot hold (tuples
#: as arguments), with numpy's allclose written out: numpy does not load in a sample's memory.
ASSERTION = """from math import inf, nan


def is_floats(x) -> bool:
    if isinstance(x, float):
        return True
    if isinstance(x, (list, tuple)):
        return all(isinstance(i, float) for i in x)
    return False


def allclose(out, exp, atol):
    if isinstance(exp, (list, tuple)):
        return len(out) == len(exp) and all(allclose(o, e, atol) for o, e in zip(out, exp))
    return abs(out - exp) <= atol + 1e-07 * abs(exp)


def assertion(out, exp, atol):
    exact_match = out == exp
    if atol == 0 and is_floats(exp):
        atol = 1e-6
    if not exact_match and atol != 0:
        assert allclose(out, exp, atol), f"{out!r}, expected {exp!r} within {atol}"
    else:
        assert exact_match, f"{out!r}, expected {exp!r}"
"""


@dataclass
class _Script:
    """MBPP+'s test script read: its tests, their atol, and the setup they need."""

    tests: list[dict[str, Any]]
    atol: float
    setup: str = ""


def _script_tests(script: str, entry_point: str) -> _Script | None:
    """MBPP+'s script (``inputs = [...]``, ``results = [...]``, a loop calling
    ``assertion(entry_point(*inp), exp, atol)``) as one test per input: io tests when the
    values are what JSON holds exactly, else the script's own call with each input's
    literals (tuples stay tuples); None when it is not such a script."""
    parts = _script_parts(script)
    if parts is None:
        return None
    inputs, results, atol = parts
    if (
        len(inputs.elts) != len(results.elts)
        or not all(isinstance(args, ast.List) for args in inputs.elts)
        or isinstance(atol.value, bool)
        or not isinstance(atol.value, int | float)
        or not 0 <= atol.value < math.inf
        or f"{entry_point}(*inp)" not in script
    ):
        return None
    try:
        pairs = [
            (_plain(_literal(args), exact=True), _plain(_literal(result), exact=False))
            for args, result in zip(inputs.elts, results.elts, strict=True)
        ]
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        calls_text = [
            f"assertion({entry_point}(*{ast.get_source_segment(script, args)}), "
            f"{ast.get_source_segment(script, result)}, {atol.value!r})"
            for args, result in zip(inputs.elts, results.elts, strict=True)
        ]
        tests = [{"check": text, "tag": "edge"} for text in calls_text]
        return _Script(tests, float(atol.value), ASSERTION)
    tests = [{"args": args, "expected": result, "tag": "edge"} for args, result in pairs]
    return _Script(tests, float(atol.value))


def _script_parts(script: str) -> tuple[ast.List, ast.List, ast.Constant] | None:
    """The script's ``inputs`` and ``results`` lists and its one assertion's tolerance."""
    try:
        tree = ast.parse(script)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    found = {
        node.targets[0].id: node.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
    }
    calls = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "assertion"
    ]
    inputs, results = found.get("inputs"), found.get("results")
    atol = calls[0].args[2] if len(calls) == 1 and len(calls[0].args) == 3 else None
    if (
        not isinstance(inputs, ast.List)
        or not isinstance(results, ast.List)
        or not isinstance(atol, ast.Constant)
    ):
        return None
    return inputs, results, atol


def mbpp_case(record: Mapping[str, Any]) -> dict[str, Any]:
    asserts = _field(record, "test_list", list)
    if not asserts or not all(isinstance(a, str) for a in asserts):
        raise Unusable("field 'test_list': expected a list of assert statements")
    challenge = _field(record, "challenge_test_list", list, [])
    entry = _called(asserts[0])
    if entry is None:
        raise Unusable("test_list[0] calls no function: the entry point is not known")
    text = record.get("text", record.get("prompt"))
    if not isinstance(text, str):
        raise Unusable("no 'text' (or 'prompt'): the task")
    imports = _field(record, "test_imports", list, [])
    setup = "\n".join([*imports, _field(record, "test_setup_code", str, "")]).strip()
    tests: list[dict[str, Any]] = [{"assert": a} for a in asserts]
    tests += [{"assert": a, "tag": "edge"} for a in challenge if isinstance(a, str)]
    script = record.get("test")
    plus = isinstance(script, str) and bool(script.strip())  # MBPP+: ids apart from MBPP's
    name = "mbppplus" if plus else "mbpp"
    case: dict[str, Any] = {
        "id": _case_id(name, record.get("task_id")),
        "category": name,
        "description": text.strip().splitlines()[0][:200] if text.strip() else entry,
        "entry_point": entry,
        "input": {"text": block(text), "tests": block("\n".join(asserts))},
        # MBPP's code has Windows line ends: the same code, readable in the case file
        "reference": block(_field(record, "code").replace("\r\n", "\n")),
        "tests": tests,
    }
    if isinstance(script, str) and plus:
        converted = _script_tests(script, entry)
        if converted is None:  # run as it is (numpy, if it imports it, needs more memory)
            tests.append({"check": block(script), "tag": "edge"})
        else:
            tests += converted.tests
            case["atol"] = converted.atol or FLOAT_ATOL  # as the script's assertion does
            setup = f"{setup}\n\n{converted.setup}".strip()
    if setup:
        case["test_setup"] = block(setup + "\n")
    return case


def humanevalplus_case(record: Mapping[str, Any]) -> dict[str, Any]:
    task_id = _field(record, "task_id")
    for key in ("prompt", "entry_point", "canonical_solution"):
        _field(record, key)
    test = _field(record, "test", str, "")
    case = humaneval_case(task_id, {**record, "test": test})
    case["category"] = "humanevalplus"
    # HumanEval's check covers the base inputs; without it they are compared as the plus ones
    plus = _field(record, "plus_input", list, [])
    base = [] if test.strip() else _field(record, "base_input", list, [])
    case["tests"] = case["tests"] if test.strip() else []
    for key, tag, inputs in (("base_input", "basic", base), ("plus_input", "edge", plus)):
        if not all(isinstance(args, list) for args in inputs):
            raise Unusable(f"field {key!r}: expected a list of argument lists")
        case["tests"] += [{"args": args, "tag": tag} for args in inputs]
    if not case["tests"]:
        raise Unusable("no tests: neither 'test' nor 'base_input' and 'plus_input'")
    atol = record.get("atol") or 0
    if isinstance(atol, bool) or not isinstance(atol, int | float) or not 0 <= atol < math.inf:
        raise Unusable("field 'atol': expected a number >= 0")
    case["atol"] = atol or FLOAT_ATOL
    contract = record.get("contract")
    if isinstance(contract, str) and contract.strip():
        case["input"]["contract"] = block(contract)
    return case


def _apps_call_tests(
    fn_name: str, starter: str, inputs: list[Any], outputs: list[Any]
) -> tuple[str, list[dict[str, Any]]]:
    """The entry point and io tests of a call-based APPS problem: APPS accepts the output
    or, when the expected one is a non-empty list, its first item."""
    method = "class Solution" in starter
    tests: list[dict[str, Any]] = []
    for args, expected in zip(inputs, outputs, strict=True):
        if not isinstance(args, list):
            raise Unusable("field 'input_output': a call's inputs must be lists of arguments")
        accepted = [expected]
        if isinstance(expected, list) and expected:
            accepted.append(expected[0])
        if method:  # LeetCode's: a method of a fresh Solution()
            tests.append({"assert": f"Solution().{fn_name}(*{args!r}) in {tuple(accepted)!r}"})
        elif len(accepted) > 1:
            tests.append({"args": args, "expected_any": accepted})
        else:
            tests.append({"args": args, "expected": expected})
    return ("Solution" if method else fn_name), tests


def apps_case(record: Mapping[str, Any]) -> dict[str, Any]:
    task_id = record.get("problem_id", record.get("id"))
    io = _json_field(record, "input_output")
    if not isinstance(io, dict) or not isinstance(io.get("inputs"), list):
        raise Unusable("field 'input_output': expected JSON text of {inputs, outputs[, fn_name]}")
    inputs, outputs = io["inputs"], io.get("outputs")
    if not isinstance(outputs, list) or len(outputs) != len(inputs) or not inputs:
        raise Unusable("field 'input_output': expected as many outputs as inputs, at least one")
    starter = record.get("starter_code") or ""
    question = _field(record, "question")
    case: dict[str, Any] = {"id": _case_id("apps", task_id), "category": "apps"}
    difficulty = record.get("difficulty")
    if isinstance(difficulty, str) and difficulty.isidentifier():  # not the scoring table's
        case["tags"] = [difficulty]
    case["description"] = question.strip().splitlines()[0][:200] if question.strip() else ""
    case["input"] = {"question": block(question)}
    if isinstance(starter, str) and starter.strip():
        case["input"]["starter_code"] = block(starter)
    case.update(_apps_tests(io.get("fn_name"), str(starter), inputs, outputs))
    solutions = _json_field(record, "solutions")
    if isinstance(solutions, list) and solutions and isinstance(solutions[0], str):
        case["reference"] = block(solutions[0])
    return case


def _apps_tests(
    fn_name: Any, starter: str, inputs: list[Any], outputs: list[Any]
) -> dict[str, Any]:
    """An APPS problem's tests: a program's stdin tests, or calls of ``fn_name``."""
    if fn_name is None:
        return {
            "kind": "code",  # a program: no entry point
            "tests": [
                {"stdin": block(_joined(i)), "stdout": block(_joined(o))}
                for i, o in zip(inputs, outputs, strict=True)
            ],
        }
    if isinstance(fn_name, str) and fn_name.isidentifier():
        entry_point, tests = _apps_call_tests(fn_name, starter, inputs, outputs)
        return {"entry_point": entry_point, "tests": tests}
    raise Unusable("field 'input_output': fn_name is no function name")


def _joined(value: Any) -> str:
    """An APPS input or output: text, or lines (APPS joins them)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "\n".join(value)
    raise Unusable("field 'input_output': a program's inputs and outputs must be text")


def bigcodebench_case(record: Mapping[str, Any]) -> dict[str, Any]:
    task_id = _field(record, "task_id")
    entry = _field(record, "entry_point")
    test = _field(record, "test")
    methods = test_methods(test)
    if isinstance(methods, str):
        raise Unusable(f"field 'test': expected a unittest module ({methods})")
    input_fields = {"prompt": "complete_prompt", "instruction": "instruct_prompt"}
    case: dict[str, Any] = {
        "id": _case_id("bigcodebench", task_id),
        "category": "bigcodebench",
        "description": f"{task_id}: {entry}",
        "entry_point": entry,
        "input": {name: block(_field(record, key)) for name, key in input_fields.items()},
        "tests": [{"unittest": block(test)}],
    }
    code_prompt, solution = record.get("code_prompt"), record.get("canonical_solution")
    if isinstance(code_prompt, str) and isinstance(solution, str):
        case["reference"] = block(code_prompt + solution)
    try:  # published as Python's repr of a list
        libs = ast.literal_eval(record["libs"]) if isinstance(record.get("libs"), str) else None
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        libs = None
    if isinstance(libs, list) and libs:
        case["notes"] = "libraries: " + ", ".join(map(str, libs))
    return case


#: name -> (what converts one record, the case file's description)
FORMATS: dict[str, tuple[Callable[[Mapping[str, Any]], dict[str, Any]], str]] = {
    "mbpp": (mbpp_case, "MBPP"),
    "humanevalplus": (humanevalplus_case, "HumanEval+ (evalplus)"),
    "apps": (apps_case, "APPS"),
    "bigcodebench": (bigcodebench_case, "BigCodeBench"),
}


#: The deepest nesting of a task's values written to a case file.
MAX_DEPTH = 100


def _deeper_than(value: Any, limit: int) -> bool:
    pending = [(value, 0)]
    while pending:
        item, depth = pending.pop()
        if depth > limit:
            return True
        if isinstance(item, dict):
            pending += [(v, depth + 1) for v in item.values()]
        elif isinstance(item, list):
            pending += [(v, depth + 1) for v in item]
    return False


def benchmark_cases(name: str, source: Path) -> Imported:
    """The cases of ``source`` in the format ``name``, and one line per record that could
    not become one (FILE:LINE, the task, why)."""
    convert, title = FORMATS[name]
    imported = Imported({"description": f"{title} tasks from {source.name}", "cases": []})
    seen: dict[str, str] = {}
    for where, record in json_records(source):
        if isinstance(record, PromptevalError):
            imported.problems.append(f"{where}: {record}")
            continue
        if not isinstance(record, Mapping):
            imported.problems.append(f"{where}: expected a JSON object (a task)")
            continue
        task = record.get("task_id", record.get("problem_id", record.get("id")))
        named = f"task {task!r}: " if isinstance(task, int | str) else ""
        try:
            case = convert(record)
        except Unusable as exc:
            imported.problems.append(f"{where}: {named}{exc}")
            continue
        if not NAME.match(case["id"]):
            imported.problems.append(
                f"{where}: {named}its id {case['id']!r} is not a name of letters, digits and "
                "_ . + -"
            )
            continue
        if _deeper_than(case, MAX_DEPTH):  # YAML's writer recurses: it would fail on it
            imported.problems.append(f"{where}: {named}values nested more than {MAX_DEPTH} deep")
            continue
        if case["id"] in seen:
            imported.problems.append(f"{where}: {named}its id repeats {seen[case['id']]}")
            continue
        seen[case["id"]] = where
        imported.data["cases"].append(case)
    if not imported.data["cases"] and not imported.problems:
        imported.problems.append(f"{source}: no tasks in it")
    return imported
