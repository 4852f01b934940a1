"""Every gate of a run (fail-under, max-regression, min_pass, the comparisons') and the exit
status they give, ``--prompteval-exit=gates`` or not (pure)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pytest_prompteval.core.result import ItemResult
from pytest_prompteval.report import figures
from pytest_prompteval.report.flaky import CaseSamples
from pytest_prompteval.report.summary import VersionSummary

if TYPE_CHECKING:
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


def score_gates(
    judged: str,
    summaries: Sequence[VersionSummary],
    comparisons: Sequence[Comparison],
    fail_under: float | None,
    max_regression: float | None,
) -> list[GateFailure]:
    """--prompteval-fail-under on the judged version's mean score, and
    --prompteval-max-regression on its mean score against each reference."""
    failures = []
    summary = next((s for s in summaries if s.version == judged), None)
    mean = summary.mean_score if summary else None
    if fail_under is not None and (mean is None or mean < fail_under):
        shown = "no score" if mean is None else figures.score(mean)
        failures.append(
            GateFailure(
                f"mean score of {judged} is {shown}, under --prompteval-fail-under {fail_under}",
                f"mean score {shown} (min {fail_under})",
            )
        )
    if max_regression is None:
        return failures
    for c in comparisons:  # each is "judged vs a reference"
        if c.mean_diff is not None and -c.mean_diff > max_regression:
            drop = figures.score(-c.mean_diff)
            failures.append(
                GateFailure(
                    f"{judged} scores {drop} below {c.baseline} on paired cases, more than "
                    f"--prompteval-max-regression {max_regression}",
                    f"mean score down {drop} (max {max_regression})",
                )
            )
    return failures


def min_pass_failures(cases: Iterable[CaseSamples]) -> list[str]:
    """The cases whose samples fall below their min_pass."""
    return [
        f"case {c.case} [{c.version}]: {c.passed}/{c.scored} samples passed, min_pass "
        f"{c.min_pass} needs {c.needed}"
        for c in cases
        if c.verdict is False
    ]


def unscored(results: Iterable[ItemResult]) -> int:
    """Items the gates cannot count: errors, and budget stops, which leave cases unscored as
    errors do (no verdict either way)."""
    return sum(
        r.outcome == "error" or (r.outcome == "skipped" and r.error_type == "budget")
        for r in results
    )


@dataclass(frozen=True)
class GateRules:
    judged: str  # the --prompt version
    exit: str  # an EXIT_MODES
    fail_under: float | None
    max_regression: float | None
    max_new_failures: int


@dataclass(frozen=True)
class GateDecision:
    failures: list[str]
    #: which gate decided each failure, a few words each: the Markdown's headline
    decided: list[str]
    exit_status: int


def decide(
    rules: GateRules,
    summaries: Sequence[VersionSummary],
    comparisons: Sequence[Comparison],
    cases: Sequence[CaseSamples],
    results: Sequence[ItemResult],
    pytest_status: int,
    other_failures: int,
    where: Callable[[str], str] = lambda case: case,
) -> GateDecision:
    """The gates of the run in their order (scores, min_pass, comparisons), and the exit
    status: in gates mode the gates' alone, else the tests' failed by any gate."""
    judged = rules.judged
    gates = score_gates(judged, summaries, comparisons, rules.fail_under, rules.max_regression)
    failures = [g.message for g in gates]
    decided = [g.short for g in gates]
    gates_only = rules.exit == "gates"
    # gates mode: the --prompt version is judged, compared versions are references
    below = min_pass_failures(c for c in cases if not gates_only or c.version == judged)
    failures += below
    decided += [f"{len(below)} cases below their min_pass"] if below else []
    if not gates_only:
        failed = bool(failures) and pytest_status == PASSED
        return GateDecision(failures, decided, GATE_FAILED if failed else pytest_status)
    gates = comparison_gate_failures(comparisons, judged, rules.max_new_failures, where)
    failures += [g.message for g in gates]
    decided += [g.short for g in gates]
    status = gates_exit_code(pytest_status, len(failures), unscored(results), other_failures)
    return GateDecision(failures, decided, status)
