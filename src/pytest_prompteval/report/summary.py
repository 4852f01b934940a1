"""Aggregate per-item results into per-version figures (pure; the same with or without xdist).

The denominators, defined here once and used by every table (terminal, JUnit, HTML, json,
analyze):

- an item's outcome is passed, failed, error or skipped (``outcome_of``);
- failed includes what the prompt caused (template error, invalid output, code that does
  not run): it scores 0 when it has no score;
- error is infrastructure (the API after retries, a missing recording): not scored, in no
  denominator, counted per version as "N errored, not scored";
- skipped (budget stop, deselection) is in no denominator and counted as skipped;
- pass rate, mean score, group tables and pass@k are over the passed + failed items ("ran").
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from pytest_prompteval.core.errors import INFRASTRUCTURE_KINDS
from pytest_prompteval.core.result import ItemResult
from pytest_prompteval.core.stats import Agreement, agreement, pass_at_k, percentile, spread

Result = ItemResult
GROUPS = ("category", "difficulty", "quality")


DENOMINATORS = (
    "pass rate, mean score, group tables and pass@k are over the items that ran (passed + "
    "failed); a failure the prompt caused scores 0; errored items (infrastructure) and "
    "skipped items are in no denominator"
)


def outcome_of(result: Result) -> str:
    """passed | failed | error | skipped; derived for history written before the field. An
    item the cost budget stopped never ran: pytest reports it skipped, and so do we."""
    outcome = result.outcome
    if outcome:
        return str(outcome)
    if result.passed:
        return "passed"
    error_type = result.error_type
    if error_type == "budget":
        return "skipped"
    return "error" if error_type in INFRASTRUCTURE_KINDS else "failed"


def counts_in_denominators(result: Result) -> bool:
    return outcome_of(result) in ("passed", "failed")


def scored_value(result: Result) -> float:
    """The score of an item that ran: a failure the prompt caused without a score is 0."""
    score = result.score
    return 0.0 if score is None else float(score)


def case_passes(passed_samples: int, samples: int) -> bool:
    """The tie rule between samples: more than half must pass, so 2 of 4 fails."""
    return passed_samples * 2 > samples


def case_key(result: Result) -> tuple[str, str]:
    return (result.file, result.case_id)


def sort_results(results: Iterable[Result]) -> list[Result]:
    """A fixed order, so that float sums do not depend on which xdist worker reported first."""
    return sorted(results, key=lambda r: (r.prompt, r.file, r.case_id, r.sample))


@dataclass
class VersionSummary:
    version: str
    items: int = 0
    passed: int = 0
    failed: int = 0
    errored: int = 0
    skipped: int = 0
    mean_score: float | None = None
    dimensions: dict[str, float] = field(default_factory=dict)
    pass_at_k: dict[int, float | None] = field(default_factory=dict)
    #: per k: (cases pass@k covers, cases that ran); a case with fewer samples than k is out
    pass_at_k_cases: dict[int, tuple[int, int]] = field(default_factory=dict)
    #: pass@k averaged over the cases of each category / difficulty / quality label
    group_pass_at_k: dict[str, dict[str, dict[int, float | None]]] = field(default_factory=dict)
    #: pass@k of each case ("file::case_id"); None where the case has fewer than k samples
    case_pass_at_k: dict[str, dict[int, float | None]] = field(default_factory=dict)
    max_samples: int = 1
    groups: dict[str, dict[str, tuple[int, int]]] = field(default_factory=dict)
    #: per json_field path: (items whose checks of it all passed, items that checked it)
    json_fields: dict[str, tuple[int, int]] = field(default_factory=dict)
    errors: Counter[str] = field(default_factory=Counter)
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    unpriced: int = 0
    latency_p50_ms: float | None = None
    latency_p95_ms: float | None = None
    replayed: int = 0  # calls, not items: a strategy or a judge makes several per item
    live: int = 0
    judged: int = 0
    judge_input_tokens: int = 0
    judge_output_tokens: int = 0
    judge_cost_usd: float = 0.0
    agreement: Agreement | None = None
    #: mean standard deviation of the judge's repeated scores of one item, and the repeats
    judge_spread: float | None = None
    judge_repeats: int = 0
    failed_assertions: Counter[str] = field(default_factory=Counter)
    code_failures: Counter[str] = field(default_factory=Counter)
    answer_calls: int = 0
    code_items: int = 0
    #: agent cases: items that ran (passed or failed) with a conversation, their steps,
    #: tool calls, tool errors, and those of the items that reached max_steps
    agent_items: int = 0
    agent_steps: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    hit_max_steps: int = 0
    #: repository cases: items that ran whose tests ran, and those resolved (every listed
    #: test passes); an errored item is in no denominator here either
    repo_items: int = 0
    resolved: int = 0
    #: of those, items whose agent changed the test infrastructure (restored for the verdict)
    infrastructure_changed: int = 0
    #: simulated users' calls and cost (the cost is in ``cost_usd`` too: the run's spend)
    user_calls: int = 0
    user_cost_usd: float = 0.0

    @property
    def mean_steps(self) -> float | None:
        return self.agent_steps / self.agent_items if self.agent_items else None

    @property
    def ran(self) -> int:
        """The denominator: passed + failed items (not errored, not skipped)."""
        return self.passed + self.failed

    @property
    def pass_rate(self) -> float | None:
        return self.passed / self.ran if self.ran else None

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["ran"] = self.ran
        data["mean_steps"] = self.mean_steps
        data["pass_rate"] = self.pass_rate
        data["pass_at_k"] = {f"pass@{k}": v for k, v in self.pass_at_k.items()}
        data["pass_at_k_cases"] = {
            f"pass@{k}": {"cases": covered, "of": total}
            for k, (covered, total) in self.pass_at_k_cases.items()
        }
        data["group_pass_at_k"] = {
            g: {label: {f"pass@{k}": v for k, v in ks.items()} for label, ks in labels.items()}
            for g, labels in self.group_pass_at_k.items()
        }
        data["case_pass_at_k"] = {
            case: {f"pass@{k}": v for k, v in ks.items()}
            for case, ks in self.case_pass_at_k.items()
        }
        data["groups"] = {
            g: {name: {"passed": p, "total": t} for name, (p, t) in values.items()}
            for g, values in self.groups.items()
        }
        data["json_fields"] = {
            name: {"passed": p, "total": t} for name, (p, t) in self.json_fields.items()
        }
        data["errors"] = dict(self.errors)
        data["failed_assertions"] = dict(self.failed_assertions)
        data["code_failures"] = dict(self.code_failures)
        return data


def group_labels(summaries: Sequence[VersionSummary], group: str) -> list[str]:
    """The labels of a group the versions' items have, sorted; none when no item has one
    (every item is then under ``-``)."""
    labels = sorted({label for s in summaries for label in s.groups.get(group, {})})
    return [] if labels in ([], ["-"]) else labels


def _mean(values: Sequence[float]) -> float | None:
    return statistics.fmean(values) if values else None


def summarize(
    results: Iterable[Result], order: Sequence[str], ks: Sequence[int] = (1,)
) -> list[VersionSummary]:
    """One summary per version, in ``order`` (then any other version, sorted)."""
    by_version: dict[str, list[Result]] = {}
    for result in sort_results(results):
        by_version.setdefault(result.prompt, []).append(result)
    names = [v for v in order if v in by_version] + sorted(set(by_version) - set(order))
    return [summarize_version(name, by_version[name], ks) for name in names]


def per_case_counts(results: Sequence[Result]) -> dict[tuple[str, str], tuple[int, int]]:
    """(samples that ran, passed samples) per case: the raw counts pass@k is computed from.
    An errored sample is left out on its own; its siblings still count."""
    counts: dict[tuple[str, str], tuple[int, int]] = {}
    for r in results:
        if not counts_in_denominators(r):
            continue
        n, c = counts.get(case_key(r), (0, 0))
        counts[case_key(r)] = (n + 1, c + (outcome_of(r) == "passed"))
    return counts


def mean_pass_at_k(counts: Mapping[Any, tuple[int, int]], k: int) -> float | None:
    values = [pass_at_k(n, c, k) for n, c in counts.values() if n >= k]
    return _mean(values)


def _count_fields(counts: dict[str, tuple[int, int]], result: Result) -> None:
    """One item counts once per field: passed when every json_field check of it passed."""
    fields: dict[str, bool] = {}
    for check in result.assertions:
        if check.field is not None:
            fields[check.field] = fields.get(check.field, True) and check.passed
    for name, ok in fields.items():
        passed, total = counts.get(name, (0, 0))
        counts[name] = (passed + ok, total + 1)


def summarize_version(version: str, results: Sequence[Result], ks: Sequence[int]) -> VersionSummary:
    s = VersionSummary(version=version, items=len(results))
    ran = [r for r in results if counts_in_denominators(r)]
    s.mean_score = _mean([scored_value(r) for r in ran])
    dimension_values: dict[str, list[float]] = {}
    latencies = []
    for group in GROUPS:
        s.groups[group] = {}
    for r in results:
        outcome = outcome_of(r)
        s.passed += outcome == "passed"
        s.failed += outcome == "failed"
        s.errored += outcome == "error"
        s.skipped += outcome == "skipped"
        if r.error_type and outcome != "skipped":
            s.errors[r.error_type] += 1
        for name, value in r.dimensions.items():
            dimension_values.setdefault(name, []).append(value)
        if outcome in ("passed", "failed"):
            for group in GROUPS:
                label = getattr(r, group) or "-"
                passed, total = s.groups[group].get(label, (0, 0))
                s.groups[group][label] = (passed + (outcome == "passed"), total + 1)
            _count_fields(s.json_fields, r)
        s.input_tokens += r.input_tokens
        s.output_tokens += r.output_tokens
        if r.response is not None:
            if r.cost_usd is None:
                s.unpriced += 1
            else:
                s.cost_usd += r.cost_usd
        if r.latency_ms is not None:
            latencies.append(r.latency_ms)
        s.replayed += r.calls_replayed
        s.live += r.calls_live
        s.judged += bool(r.judged)
        s.judge_input_tokens += r.judge_input_tokens
        s.judge_output_tokens += r.judge_output_tokens
        s.judge_cost_usd += r.judge_cost_usd
        if outcome != "skipped":  # a skipped item made no call
            s.answer_calls += r.answer_calls
        s.code_items += r.execution is not None
        counted = outcome in ("passed", "failed")
        if r.trajectory is not None:
            s.user_calls += r.user_calls  # spent whatever became of the item
            s.user_cost_usd += r.user_cost_usd
            s.cost_usd += r.user_cost_usd
        if r.trajectory is not None and counted:
            s.agent_items += 1
            s.agent_steps += len(r.trajectory.steps)
            s.tool_calls += len(r.trajectory.calls)
            s.tool_errors += r.trajectory.tool_errors
            s.hit_max_steps += r.trajectory.hit_max_steps
        if r.repo is not None and counted:
            s.repo_items += 1
            s.resolved += r.repo.resolved
            s.infrastructure_changed += bool(r.repo.restored)
        if r.error_class:
            s.code_failures[r.error_class] += 1
        for check in r.assertions:
            if not check.passed:
                s.failed_assertions[check.type] += 1
    for group in GROUPS:
        s.groups[group] = dict(sorted(s.groups[group].items()))
    s.dimensions = {k: statistics.fmean(v) for k, v in dimension_values.items()}
    if latencies:
        s.latency_p50_ms = percentile(latencies, 50)
        s.latency_p95_ms = percentile(latencies, 95)
    counts = per_case_counts(results)
    s.pass_at_k = {k: mean_pass_at_k(counts, k) for k in ks}
    s.pass_at_k_cases = {k: (sum(n >= k for n, _ in counts.values()), len(counts)) for k in ks}
    s.max_samples = max((n for n, _ in counts.values()), default=1)
    s.case_pass_at_k = {
        f"{f}::{c}": {k: pass_at_k(n, passed, k) if n >= k else None for k in ks}
        for (f, c), (n, passed) in counts.items()
    }
    labels = {case_key(r): r for r in results}
    for group in GROUPS:
        by_label: dict[str, dict[tuple[str, str], tuple[int, int]]] = {}
        for key, case_counts in counts.items():
            by_label.setdefault(getattr(labels[key], group) or "-", {})[key] = case_counts
        s.group_pass_at_k[group] = {
            label: {k: mean_pass_at_k(cases, k) for k in ks}
            for label, cases in sorted(by_label.items())
        }
    both = [
        (r.automatic_score, r.judge_score, r.threshold)
        for r in results
        if r.judge_score is not None and r.automatic_score is not None and r.scorer == "hybrid"
    ]
    if both:
        s.agreement = agreement(
            [a for a, _, _ in both], [j for _, j, _ in both], [t for _, _, t in both]
        )
    repeated = [r.judge_repeats for r in results if len(r.judge_repeats or ()) > 1]
    s.judge_spread = _mean([spread(values) for values in repeated])
    s.judge_repeats = max((len(values) for values in repeated), default=0)
    return s
