"""``--prompteval-exit=gates``: the exit code follows the gates alone (pure)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pytest_prompteval.report.compare import Comparison

EXIT_MODES = ("tests", "gates")
#: the primary endpoint a comparison is decided on, and the gate with it
GATE_METRICS = ("pass_rate", "score")
PASSED = 0
#: a gate failed (fail-under, max-regression, a min_pass verdict or a significant
#: regression), or an ordinary test of the same run failed
GATE_FAILED = 1
#: items errored (API failure, missing recording, budget): the gates cannot decide. Clear of
#: pytest's own statuses (0-6 in pytest 9, whose 6 is too many warnings), with room for more.
NO_VERDICT = 10
#: pytest's own statuses that mean the run did not finish normally (interrupted, internal
#: error, usage error, no tests): kept as they are. (Too many warnings, 6, pytest sets
#: after the gates, on a run they passed.)
_KEPT = frozenset({2, 3, 4, 5})


def gates_exit_code(
    pytest_status: int, gate_failures: int, errored: int, other_failures: int = 0
) -> int:
    """A failed ordinary test (one that is not a prompt case) fails the run whatever the
    gates say; then errors: a gate computed without some of its items is no verdict."""
    if pytest_status in _KEPT:
        return pytest_status
    if other_failures:
        return GATE_FAILED
    if errored:
        return NO_VERDICT
    return GATE_FAILED if gate_failures else PASSED


#: newly failing cases a gate message names; the summary lists them all
LISTED = 20


@dataclass(frozen=True)
class GateFailure:
    #: the whole message, naming the cases
    message: str
    #: which gate decided, for a headline: ``2 cases newly fail (max 0)``
    short: str


def comparison_gates(
    comparisons: Sequence[Comparison],
    judged: str,
    max_new_failures: int,
    where: Callable[[str], str] = lambda case: case,
) -> list[str]:
    """The messages of ``comparison_gate_failures``."""
    return [
        g.message for g in comparison_gate_failures(comparisons, judged, max_new_failures, where)
    ]


def comparison_gate_failures(
    comparisons: Sequence[Comparison],
    judged: str,
    max_new_failures: int,
    where: Callable[[str], str] = lambda case: case,
) -> list[GateFailure]:
    """The gates of the judged (--prompt) version against each compared or baseline one: it
    is significantly worse on the primary endpoint (the verdict's own direction, never the
    sign of the other endpoint), or it newly fails more cases than allowed, whatever the
    means do. Each message names the cases the judged version newly fails, ``where`` with
    their file:line."""
    failures = []
    for c in comparisons:
        if judged not in (c.baseline, c.other):
            continue
        reference = c.baseline if c.other == judged else c.other
        new = c.new_failures(judged)
        shown = ", ".join(
            f"{where(case)} {before} → {after}" for case, before, after in new[:LISTED]
        )
        shown += f" (+{len(new) - LISTED} more, in the summary)" if len(new) > LISTED else ""
        too_many = len(new) > max_new_failures
        if c.worse_side() == judged:
            # the cases once, in the new-failures message when that gate fails too
            cases = f"; newly failing: {shown}" if new and not too_many else ""
            decisive = c.decisive
            label = decisive.label if decisive is not None else "the primary endpoint"
            failures.append(
                GateFailure(
                    f"significant regression of {judged} against {reference}: {c.verdict}{cases}",
                    f"{judged} significantly worse than {reference} on {label}",
                )
            )
        if too_many:
            failures.append(
                GateFailure(
                    f"{judged} newly fails {len(new)} cases that pass under {reference} (more "
                    f"than prompteval_max_new_failures {max_new_failures}): {shown}",
                    f"{len(new)} cases newly fail (max {max_new_failures})",
                )
            )
    return failures
