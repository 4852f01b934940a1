"""The run in JUnit XML's terms: each item's result as ``prompteval.<field>`` properties,
and each version's figures as suite properties."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pytest_prompteval.core.result import JUNIT_FIELDS, RESULT_KEY
from pytest_prompteval.core.safetext import safe_line
from pytest_prompteval.report import figures
from pytest_prompteval.report.flaky import CaseSamples, mean_pass_hat_k
from pytest_prompteval.report.summary import GROUPS, VersionSummary, group_labels


def _value(value: object) -> object:
    return safe_line(value) if isinstance(value, str) else value


def item_properties(props: list[tuple[str, object]]) -> list[tuple[str, object]]:
    """The result dict as flat ``prompteval.<field>`` properties, for JUnit XML."""
    flat: list[tuple[str, object]] = []
    for key, value in props:
        if key == RESULT_KEY and isinstance(value, dict):
            # category, difficulty, model: text from files
            flat += [
                (f"prompteval.{f}", "" if value.get(f) is None else _value(value[f]))
                for f in JUNIT_FIELDS
            ]
        else:
            flat.append((key, value))
    return flat


def suite_properties(
    add: Callable[[str, str], None],
    summaries: Sequence[VersionSummary],
    cases: Sequence[CaseSamples],
    ks: Sequence[int],
) -> None:
    """Each version's figures, ``prompteval.<version>.<figure>``, through ``add``."""
    for s in summaries:
        prefix = f"prompteval.{s.version}"
        add(f"{prefix}.pass_rate", figures.exact(s.pass_rate))
        for name in ("ran", "passed", "failed", "errored", "skipped"):
            add(f"{prefix}.{name}", str(getattr(s, name)))
        add(f"{prefix}.mean_score", figures.exact(s.mean_score))
        if s.mean_steps is not None:
            add(f"{prefix}.mean_steps", figures.exact(s.mean_steps))
            for name in ("tool_calls", "tool_errors", "hit_max_steps"):
                add(f"{prefix}.{name}", str(getattr(s, name)))
        for k, value in s.pass_at_k.items():
            add(f"{prefix}.pass@{k}", figures.exact(value))
        mine = [c for c in cases if c.version == s.version]
        for k in ks:
            add(f"{prefix}.pass^{k}", figures.exact(mean_pass_hat_k(mine, k)))
        for group in GROUPS:
            for label in group_labels([s], group):
                if label == figures.NONE:
                    continue  # items without a label: no property named "...quality.-"
                passed, total = s.groups[group][label]
                name = safe_line(f"{prefix}.{group}.{label}")  # a case file's category
                add(name, figures.exact(passed / total))
