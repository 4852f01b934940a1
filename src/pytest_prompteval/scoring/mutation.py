"""Mutation testing of the cases themselves (seed 003): does a case's test suite notice when
its reference solution is broken on purpose? Tests that cannot catch bugs make pass rates lie.

Each mutant changes one place of the reference: an arithmetic operator swapped, a
comparison loosened or flipped, ``and``/``or`` exchanged, a number or boolean constant
changed, a condition negated, a ``not`` or unary minus dropped. A mutant is killed when the
case's tests fail on it. Equivalent mutants (same behaviour, different code) count as
survivors, so a score a little under 1 is normal.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pytest_prompteval.core.cases import Case
from pytest_prompteval.sandbox.client import Limits
from pytest_prompteval.scoring.code import CodeScorer, CodeSpec, measure

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
    for field, value in ast.iter_fields(parent):
        if value is target:
            setattr(parent, field, target.operand)
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

    @property
    def score(self) -> float:
        return self.killed / self.mutants if self.mutants else 1.0


def mutation_test(case: Case, spec: CodeSpec, scorer: CodeScorer) -> MutationReport:
    assert spec.reference is not None
    limits = Limits(scorer.timeout_for(case, spec), scorer.memory_mb)
    killed, survivors = 0, []
    candidates = mutants(spec.reference)
    for description, code in candidates:
        run = scorer.sandbox.run(spec.job(code), limits)
        if measure(spec, code, run).functional:
            survivors.append(description)
        else:
            killed += 1
    return MutationReport(case.id, len(candidates), killed, survivors)
