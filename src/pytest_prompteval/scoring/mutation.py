"""Mutation testing of the cases themselves (seed 003): does a case's test suite notice when
its reference solution is broken on purpose? Tests that cannot catch bugs make pass rates lie.

Each mutant changes one place of the reference: an arithmetic operator swapped, a
comparison loosened or flipped, ``and``/``or`` exchanged, a number or boolean constant
changed, a condition negated, a ``not`` or unary minus dropped. A mutant is killed when the
case's tests fail on it.

A survivor (it passed the case's tests and properties) is then set against the reference on
probe inputs near the case's own (``probe_inputs``). One that answers like the reference on
all of them is "possibly equivalent" (``x < low`` against ``x <= low`` where both return
``low``): listed apart and out of the score, which no test could raise. A case with no
mutants has no score, not a perfect one.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from pytest_prompteval.core.cases import Case
from pytest_prompteval.sandbox.client import Limits
from pytest_prompteval.scoring.code.measure import measure
from pytest_prompteval.scoring.code.runner import CodeRunner
from pytest_prompteval.scoring.code.spec import CodeSpec, CodeTest

BINARY = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Add,
    ast.Div: ast.Mult,
    ast.FloorDiv: ast.Mult,
    ast.Mod: ast.FloorDiv,
    ast.Pow: ast.Mult,
}
COMPARE = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}
MAX_MUTANTS = 60


def _mutations(node: ast.AST) -> Iterator[tuple[str, Any]]:
    """(description, how to change a copy of ``node``) for each mutation of this node."""
    if isinstance(node, ast.BinOp) and type(node.op) in BINARY:
        new = BINARY[type(node.op)]
        yield (
            f"{type(node.op).__name__} -> {new.__name__}",
            lambda n, new=new: setattr(n, "op", new()),
        )
    elif isinstance(node, ast.Compare) and type(node.ops[0]) in COMPARE:
        relation = COMPARE[type(node.ops[0])]
        yield (
            f"{type(node.ops[0]).__name__} -> {relation.__name__}",
            lambda n, relation=relation: n.ops.__setitem__(0, relation()),
        )
    elif isinstance(node, ast.BoolOp):
        swap: type[ast.boolop] = ast.Or if isinstance(node.op, ast.And) else ast.And
        yield (
            f"{type(node.op).__name__} -> {swap.__name__}",
            lambda n, swap=swap: setattr(n, "op", swap()),
        )
    elif isinstance(node, ast.Constant) and isinstance(node.value, bool):
        yield f"{node.value} -> {not node.value}", lambda n: setattr(n, "value", not n.value)
    elif isinstance(node, ast.Constant) and isinstance(node.value, int):
        yield f"{node.value} -> {node.value + 1}", lambda n: setattr(n, "value", n.value + 1)
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not | ast.USub):
        yield f"drop {type(node.op).__name__}", None  # replaced by its operand, below
    if isinstance(node, ast.If | ast.While | ast.IfExp):
        yield (
            "negate condition",
            lambda n: setattr(n, "test", ast.UnaryOp(op=ast.Not(), operand=n.test)),
        )


def mutants(source: str) -> list[tuple[str, str]]:
    """(description with line, mutated source), at most MAX_MUTANTS, in source order."""
    tree = ast.parse(source)
    nodes = list(ast.walk(tree))
    found = []
    for index, node in enumerate(nodes):
        for description, change in _mutations(node):
            mutated: ast.AST = copy.deepcopy(tree)
            target = list(ast.walk(mutated))[index]
            if change is None:
                mutated = _drop_unary(mutated, index)
            else:
                change(target)
            try:
                text = ast.unparse(ast.fix_missing_locations(mutated))
            except (ValueError, TypeError, AttributeError):
                continue
            found.append((f"line {getattr(node, 'lineno', '?')}: {description}", text))
    unique = {text: description for description, text in found}
    return [(d, t) for t, d in unique.items() if t != ast.unparse(tree)][:MAX_MUTANTS]


def _drop_unary(tree: ast.AST, position: int) -> ast.AST:
    parents = {
        id(child): parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)
    }
    target = list(ast.walk(tree))[position]
    assert isinstance(target, ast.UnaryOp)
    parent = parents[id(target)]
    for name, value in ast.iter_fields(parent):
        if value is target:
            setattr(parent, name, target.operand)
        elif isinstance(value, list):
            for i, item in enumerate(value):
                if item is target:
                    value[i] = target.operand
    return tree


@dataclass
class MutationReport:
    case: str
    mutants: int
    killed: int
    survivors: list[str]
    possibly_equivalent: list[str] = field(default_factory=list)

    @property
    def score(self) -> float | None:
        """Killed over the mutants a test could kill; None when there are none."""
        distinguishable = self.mutants - len(self.possibly_equivalent)
        return self.killed / distinguishable if distinguishable else None

    def to_json(self) -> dict[str, Any]:
        return {
            "case": self.case,
            "mutants": self.mutants,
            "killed": self.killed,
            "score": self.score,
            "survivors": self.survivors,
            "possibly_equivalent": self.possibly_equivalent,
        }


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _literal_calls(source: str, names: set[str]) -> list[list[Any]]:
    """The literal argument lists of the calls to ``names`` in a test's source
    (``assert clamp(5, 0, 10) == 5``, ``candidate([1, 2])`` in a check)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    calls = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in names
            and not node.keywords
        ):
            try:
                calls.append([ast.literal_eval(arg) for arg in node.args])
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                continue  # an argument that is not a literal: not a probe
    return calls


def _test_inputs(spec: CodeSpec) -> list[list[Any]]:
    """The argument lists the case's tests call the function with, of every kind of test."""
    vectors = []
    for test in spec.tests:
        if test.kind == "args":
            vectors.append(list(test.body))
        elif test.kind == "assert":
            vectors += _literal_calls(test.body, {spec.entry_point})
        elif test.kind != "stdin":  # a program's input is text, no call
            vectors += _literal_calls(test.body, {"candidate", spec.entry_point})
    return vectors


def probe_inputs(spec: CodeSpec) -> list[list[Any]]:
    """The case's own argument lists (of ``args`` tests, and the literal calls of ``assert``
    and ``check`` tests), and each with one number moved at a time: to a value the tests use
    at that position, a number of the reference's source or 0, each +-1. One at a time keeps
    the relations between arguments the tests hold (low <= high)."""
    assert spec.reference is not None
    vectors = _test_inputs(spec)
    constants: set[float] = {0}
    for node in ast.walk(ast.parse(spec.reference)):
        value = node.value if isinstance(node, ast.Constant) else None
        if isinstance(value, int | float) and _is_number(value):
            constants.add(value)
    probes = {repr(v): v for v in vectors}
    for vector in vectors:
        for i, value in enumerate(vector):
            if not _is_number(value):
                continue
            column = {v[i] for v in vectors if len(v) > i and _is_number(v[i])}
            for seed in sorted(column | constants):
                for moved in (seed - 1, seed, seed + 1):
                    probe = [*vector[:i], moved, *vector[i + 1 :]]
                    probes.setdefault(repr(probe), probe)
    return list(probes.values())


def _probe(spec: CodeSpec, probes: list[list[Any]]) -> CodeSpec:
    """A job whose one check runs the mutant and the reference on every probe input and
    compares what they return or raise (the reference runs beside the check, not in the
    mutant's process)."""
    check = (
        "import copy\n"
        "def _outcome(function, args):\n"
        "    try:\n"
        "        return ('returns', function(*copy.deepcopy(args)))\n"
        "    except Exception as exc:\n"
        "        return ('raises', type(exc).__name__)\n"
        "def check(candidate):\n"
        "    reference = {}\n"
        f"    exec({spec.reference!r}, reference)\n"
        f"    for args in {probes!r}:\n"
        f"        expected = _outcome(reference[{spec.entry_point!r}], args)\n"
        "        assert _outcome(candidate, args) == expected, args\n"
    )
    return dataclasses.replace(spec, tests=(CodeTest("check", check),), properties=None)


def mutation_test(case: Case, spec: CodeSpec, scorer: CodeRunner) -> MutationReport:
    """Every mutant's run is handed to the sandbox pool at once, then the survivors'
    probes: the pool's servers run them side by side."""
    assert spec.reference is not None
    limits = Limits(scorer.timeout_for(case, spec), scorer.memory_mb)
    report = MutationReport(case.id, 0, 0, [])
    candidates = mutants(spec.reference)
    report.mutants = len(candidates)
    runs = [scorer.sandbox.submit(spec.job(code), limits) for _, code in candidates]
    outputs = scorer.calibration(case, spec).outputs  # what reference-compared tests need
    survivors = [
        (description, code)
        for (description, code), run in zip(candidates, runs, strict=True)
        if measure(spec, code, run.result(), outputs).functional
    ]
    report.killed = len(candidates) - len(survivors)
    probes = probe_inputs(spec)
    if not probes:  # nothing to probe with: every survivor stays one
        report.survivors = [description for description, _ in survivors]
        return report
    probe = _probe(spec, probes)
    probed = [scorer.sandbox.submit(probe.job(code), limits) for _, code in survivors]
    for (description, code), run in zip(survivors, probed, strict=True):
        if measure(probe, code, run.result()).functional:
            report.possibly_equivalent.append(description)
        else:
            report.survivors.append(description)
    return report
