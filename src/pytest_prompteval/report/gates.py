"""``--prompteval-exit=gates``: the exit code follows the gates alone (pure)."""

from __future__ import annotations

EXIT_MODES = ("tests", "gates")
PASSED = 0
#: a gate failed (fail-under, max-regression, a min_pass verdict or a significant
#: regression), or an ordinary test of the same run failed
GATE_FAILED = 1
#: items errored (API failure, missing recording, budget): the gates cannot decide
NO_VERDICT = 6
#: pytest's own statuses that mean the run did not finish normally (interrupted, internal
#: error, usage error, no tests): kept as they are
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
