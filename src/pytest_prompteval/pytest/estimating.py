"""``--prompteval-estimate`` in a pytest run: the collected items priced, nothing generated."""

from __future__ import annotations

import pytest

from pytest_prompteval.core.errors import PromptevalError
from pytest_prompteval.engine.engine import Engine
from pytest_prompteval.providers.tokencount import TokenCounter
from pytest_prompteval.pytest.work import WorkList
from pytest_prompteval.report.gates import GATE_FAILED, NO_VERDICT
from pytest_prompteval.workflows.estimate import Planned, estimate, estimate_lines


def run_estimate(session: pytest.Session, work: WorkList, engine: Engine) -> None:
    """Print the estimate; a budget it exceeds, or a failed count, ends the session."""
    settings = engine.settings
    planned, unrenderable = [], 0
    for item in work:
        if item is not None:
            try:
                request = item.request()
            except PromptevalError:
                unrenderable += 1  # the run would fail it without a call
                continue
            spec = item.spec
            planned.append(
                Planned(
                    spec.prompt.version,
                    request,
                    spec.sample,
                    spec.samples,
                    spec.agent if spec.code is None else None,
                    spec.case,
                )
            )
    counter = TokenCounter(settings.recordings_dir, engine.store.provider)
    try:
        estimates = estimate(planned, engine.store, counter, engine.prices)
    except PromptevalError as exc:
        pytest.exit(f"prompteval estimate: {exc}", returncode=NO_VERDICT)
    lines = estimate_lines(estimates, counter.calls)
    if counter.note is not None:
        lines.append(counter.note)
    if unrenderable:
        lines.append(f"{unrenderable} items fail before any call (template errors)")
    if settings.scorer != "automatic":
        lines.append(f"judge calls of --prompteval-scorer={settings.scorer} not included")
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_sep("=", "prompteval estimate")
        for line in lines:
            reporter.write_line(line)
    total = sum(e.cost_usd for e in estimates)
    if settings.max_cost is not None and total > settings.max_cost:
        pytest.exit(
            f"prompteval estimate ${total:.4f} exceeds --prompteval-max-cost "
            f"{settings.max_cost:g}: the run would not start",
            returncode=GATE_FAILED,
        )
