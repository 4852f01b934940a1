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
from dataclasses import asdict, dataclass, fields
from functools import cached_property
from typing import Any

from pytest_prompteval.core.errors import INFRASTRUCTURE_KINDS
from pytest_prompteval.core.result import ItemResult, RepoResult, Trajectory
from pytest_prompteval.core.stats import Agreement, agreement, pass_at_k, percentile, spread
from pytest_prompteval.core.usage import Usage, total

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


@dataclass(frozen=True)
class StoredSummary:
    """A version's figures as a run's file keeps them (``VersionSummary.to_json``), read
    back where the results themselves are not: the view's run page of a big run. The names
    and types of ``VersionSummary``'s figures, in the order its JSON has always had."""

    version: str
    items: int
    passed: int
    failed: int
    errored: int
    skipped: int
    mean_score: float | None
    dimensions: dict[str, float]
    pass_at_k: dict[int, float | None]
    pass_at_k_cases: dict[int, tuple[int, int]]
    group_pass_at_k: dict[str, dict[str, dict[int, float | None]]]
    case_pass_at_k: dict[str, dict[int, float | None]]
    max_samples: int
    groups: dict[str, dict[str, tuple[int, int]]]
    json_fields: dict[str, tuple[int, int]]
    errors: Counter[str]
    input_tokens: int
    output_tokens: int
    cost_usd: float
    unpriced: int
    latency_p50_ms: float | None
    latency_p95_ms: float | None
    replayed: int
    live: int
    judged: int
    judge_input_tokens: int
    judge_output_tokens: int
    judge_cost_usd: float
    agreement: Agreement | None
    judge_spread: float | None
    judge_repeats: int
    failed_assertions: Counter[str]
    code_failures: Counter[str]
    answer_calls: int
    code_items: int
    agent_items: int
    agent_steps: int
    tool_calls: int
    tool_errors: int
    hit_max_steps: int
    repo_items: int
    resolved: int
    infrastructure_changed: int
    user_calls: int
    user_cost_usd: float
    ran: int
    mean_steps: float | None
    pass_rate: float | None

    @property
    def spent_usd(self) -> float:
        return self.cost_usd + self.judge_cost_usd + self.user_cost_usd


#: The summary's JSON, in this order (the history files' and json-report's).
JSON_FIELDS = tuple(f.name for f in fields(StoredSummary))


@dataclass(frozen=True)
class VersionSummary:
    """One version's figures, each derived from its items' results when first read."""

    version: str
    #: in ``sort_results`` order, so float sums do not depend on which worker reported first
    results: Sequence[Result]
    ks: Sequence[int] = (1,)

    # -- outcomes: the denominators ------------------------------------------------------

    @cached_property
    def outcomes(self) -> Counter[str]:
        return Counter(outcome_of(r) for r in self.results)

    @property
    def items(self) -> int:
        return len(self.results)

    @property
    def passed(self) -> int:
        return self.outcomes["passed"]

    @property
    def failed(self) -> int:
        return self.outcomes["failed"]

    @property
    def errored(self) -> int:
        return self.outcomes["error"]

    @property
    def skipped(self) -> int:
        return self.outcomes["skipped"]

    @property
    def ran(self) -> int:
        """The denominator: passed + failed items (not errored, not skipped)."""
        return self.passed + self.failed

    @cached_property
    def ran_results(self) -> list[Result]:
        return [r for r in self.results if counts_in_denominators(r)]

    @property
    def pass_rate(self) -> float | None:
        return self.passed / self.ran if self.ran else None

    @cached_property
    def errors(self) -> Counter[str]:
        """Error kinds of the items that were not skipped."""
        return Counter(
            r.error_type for r in self.results if r.error_type and outcome_of(r) != "skipped"
        )

    # -- scores --------------------------------------------------------------------------

    @cached_property
    def mean_score(self) -> float | None:
        return _mean([scored_value(r) for r in self.ran_results])

    @cached_property
    def dimensions(self) -> dict[str, float]:
        values: dict[str, list[float]] = {}
        for r in self.results:
            for name, value in r.dimensions.items():
                values.setdefault(name, []).append(value)
        return {name: statistics.fmean(v) for name, v in values.items()}

    @cached_property
    def groups(self) -> dict[str, dict[str, tuple[int, int]]]:
        """Per group and label: (passed, ran)."""
        return {
            group: dict(
                sorted(
                    _tallies(
                        (getattr(r, group) or "-", outcome_of(r) == "passed")
                        for r in self.ran_results
                    ).items()
                )
            )
            for group in GROUPS
        }

    @cached_property
    def json_fields(self) -> dict[str, tuple[int, int]]:
        """Per json_field path: (items whose checks of it all passed, items that checked it)."""
        return _tallies(
            (name, ok) for r in self.ran_results for name, ok in _checked_fields(r).items()
        )

    @cached_property
    def failed_assertions(self) -> Counter[str]:
        return Counter(c.type for r in self.results for c in r.assertions if not c.passed)

    @cached_property
    def code_failures(self) -> Counter[str]:
        return Counter(r.error_class for r in self.results if r.error_class)

    # -- pass@k --------------------------------------------------------------------------

    @cached_property
    def counts(self) -> dict[tuple[str, str], tuple[int, int]]:
        return per_case_counts(self.results)

    @property
    def pass_at_k(self) -> dict[int, float | None]:
        return {k: mean_pass_at_k(self.counts, k) for k in self.ks}

    @property
    def pass_at_k_cases(self) -> dict[int, tuple[int, int]]:
        """Per k: (cases pass@k covers, cases that ran); a case with fewer samples is out."""
        counts = self.counts.values()
        return {k: (sum(n >= k for n, _ in counts), len(counts)) for k in self.ks}

    @property
    def max_samples(self) -> int:
        return max((n for n, _ in self.counts.values()), default=1)

    @property
    def case_pass_at_k(self) -> dict[str, dict[int, float | None]]:
        """pass@k of each case ("file::case_id"); None where it has fewer than k samples."""
        return {
            f"{f}::{c}": {k: pass_at_k(n, passed, k) if n >= k else None for k in self.ks}
            for (f, c), (n, passed) in self.counts.items()
        }

    @cached_property
    def group_pass_at_k(self) -> dict[str, dict[str, dict[int, float | None]]]:
        """pass@k averaged over the cases of each category / difficulty / quality label."""
        labels = {case_key(r): r for r in self.results}
        grouped: dict[str, dict[str, dict[int, float | None]]] = {}
        for group in GROUPS:
            by_label: dict[str, dict[tuple[str, str], tuple[int, int]]] = {}
            for key, case_counts in self.counts.items():
                by_label.setdefault(getattr(labels[key], group) or "-", {})[key] = case_counts
            grouped[group] = {
                label: {k: mean_pass_at_k(cases, k) for k in self.ks}
                for label, cases in sorted(by_label.items())
            }
        return grouped

    # -- what the calls spent --------------------------------------------------------------

    @cached_property
    def answer(self) -> Usage:
        return total(r.answer_usage for r in self.results)

    @cached_property
    def answered(self) -> Usage:
        """The answers of the items that have one: their cost, and how many had no price."""
        return total(r.answer_usage for r in self.results if r.response is not None)

    @cached_property
    def judge(self) -> Usage:
        return total(r.judge_usage for r in self.results)

    @cached_property
    def user(self) -> Usage:
        """Simulated users' calls, spent whatever became of the item."""
        return total(r.user_usage for r in self.results)

    @property
    def input_tokens(self) -> int:
        return self.answer.input_tokens

    @property
    def output_tokens(self) -> int:
        return self.answer.output_tokens

    @property
    def cost_usd(self) -> float:
        """The answers' cost: neither the judge's nor a simulated user's (``spent_usd``)."""
        return self.answered.cost_usd

    @property
    def unpriced(self) -> int:
        return self.answered.unpriced

    @property
    def spent_usd(self) -> float:
        """What the version's calls cost: its answers', its judge's and its simulated users'."""
        return total((self.answered, self.judge, self.user)).cost_usd

    @cached_property
    def latencies(self) -> list[float]:
        return [r.latency_ms for r in self.results if r.latency_ms is not None]

    @property
    def latency_p50_ms(self) -> float | None:
        return percentile(self.latencies, 50) if self.latencies else None

    @property
    def latency_p95_ms(self) -> float | None:
        return percentile(self.latencies, 95) if self.latencies else None

    @property
    def replayed(self) -> int:  # calls, not items: a strategy or a judge makes several per item
        return sum(r.calls_replayed for r in self.results)

    @property
    def live(self) -> int:
        return sum(r.calls_live for r in self.results)

    @property
    def answer_calls(self) -> int:
        """The answers' calls (a skipped item made none)."""
        return sum(r.answer_calls for r in self.results if outcome_of(r) != "skipped")

    @property
    def user_calls(self) -> int:
        return self.user.calls

    @property
    def user_cost_usd(self) -> float:
        return self.user.cost_usd

    # -- the judge -----------------------------------------------------------------------

    @property
    def judged(self) -> int:
        return sum(bool(r.judged) for r in self.results)

    @property
    def judge_input_tokens(self) -> int:
        return self.judge.input_tokens

    @property
    def judge_output_tokens(self) -> int:
        return self.judge.output_tokens

    @property
    def judge_cost_usd(self) -> float:
        return self.judge.cost_usd

    @cached_property
    def agreement(self) -> Agreement | None:
        both = [
            (r.automatic_score, r.judge_score, r.threshold)
            for r in self.results
            if r.judge_score is not None and r.automatic_score is not None and r.scorer == "hybrid"
        ]
        if not both:
            return None
        return agreement([a for a, _, _ in both], [j for _, j, _ in both], [t for _, _, t in both])

    @cached_property
    def repeated(self) -> list[list[float]]:
        return [r.judge_repeats for r in self.results if len(r.judge_repeats or ()) > 1]

    @property
    def judge_spread(self) -> float | None:
        """Mean standard deviation of the judge's repeated scores of one item."""
        return _mean([spread(values) for values in self.repeated])

    @property
    def judge_repeats(self) -> int:
        return max((len(values) for values in self.repeated), default=0)

    # -- code, agents, repositories ------------------------------------------------------

    @property
    def code_items(self) -> int:
        return sum(r.execution is not None for r in self.results)

    @cached_property
    def conversations(self) -> list[Trajectory]:
        """The conversations of the items that ran (passed or failed)."""
        return [r.trajectory for r in self.ran_results if r.trajectory is not None]

    @property
    def agent_items(self) -> int:
        return len(self.conversations)

    @property
    def agent_steps(self) -> int:
        return sum(len(t.steps) for t in self.conversations)

    @property
    def tool_calls(self) -> int:
        return sum(len(t.calls) for t in self.conversations)

    @property
    def tool_errors(self) -> int:
        return sum(t.tool_errors for t in self.conversations)

    @property
    def hit_max_steps(self) -> int:
        return sum(t.hit_max_steps for t in self.conversations)

    @property
    def mean_steps(self) -> float | None:
        return self.agent_steps / self.agent_items if self.agent_items else None

    @cached_property
    def verdicts(self) -> list[RepoResult]:
        """The repository verdicts of the items that ran whose tests ran (an errored item is
        in no denominator here either)."""
        return [r.repo for r in self.ran_results if r.repo is not None]

    @property
    def repo_items(self) -> int:
        return len(self.verdicts)

    @property
    def resolved(self) -> int:
        """Items resolved: every listed test passes."""
        return sum(v.resolved for v in self.verdicts)

    @property
    def infrastructure_changed(self) -> int:
        """Items whose agent changed the test infrastructure (restored for the verdict)."""
        return sum(bool(v.restored) for v in self.verdicts)

    def to_json(self) -> dict[str, Any]:
        data = {name: getattr(self, name) for name in JSON_FIELDS}
        data["dimensions"] = dict(self.dimensions)
        data["agreement"] = None if self.agreement is None else asdict(self.agreement)
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
        for name in ("errors", "failed_assertions", "code_failures"):
            data[name] = dict(data[name])
        return data


def _tallies(pairs: Iterable[tuple[str, bool]]) -> dict[str, tuple[int, int]]:
    """Per name, in the order first seen: (times true, times seen)."""
    tallies: dict[str, tuple[int, int]] = {}
    for name, ok in pairs:
        passed, seen = tallies.get(name, (0, 0))
        tallies[name] = (passed + ok, seen + 1)
    return tallies


def _checked_fields(result: Result) -> dict[str, bool]:
    """Per json_field path an item checks: whether every check of it passed."""
    checked: dict[str, bool] = {}
    for check in result.assertions:
        if check.field is not None:
            checked[check.field] = checked.get(check.field, True) and check.passed
    return checked


def group_labels(summaries: Sequence[Figures], group: str) -> list[str]:
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


def summarize_version(version: str, results: Sequence[Result], ks: Sequence[int]) -> VersionSummary:
    return VersionSummary(version, results, tuple(ks))


#: What the summary tables read: a version's figures, derived or stored.
Figures = VersionSummary | StoredSummary
