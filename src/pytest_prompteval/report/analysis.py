"""What the run's results say: summaries, comparisons with Holm's correction, per-case
samples, and what changed in the prompts and recordings."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pytest_prompteval.core.gitversions import SEPARATOR
from pytest_prompteval.core.prompts import PromptVersion
from pytest_prompteval.core.result import ItemResult
from pytest_prompteval.report.flaky import CaseSamples, case_samples, mean_pass_hat_k
from pytest_prompteval.report.summary import VersionSummary, case_key, summarize

if TYPE_CHECKING:
    from pytest_prompteval.core.history import StoredRun
    from pytest_prompteval.providers.trusted import TrustedRecordings
    from pytest_prompteval.report.compare import Comparison


@dataclass(frozen=True)
class CompareRules:
    ks: tuple[int, ...]
    min_effect: float
    gate_metric: str
    #: --prompt=all: each version against the first before it that shares a case
    all_versions: bool


@dataclass
class Analysis:
    summaries: list[VersionSummary] = field(default_factory=list)
    comparisons: list[Comparison] = field(default_factory=list)
    cases: list[CaseSamples] = field(default_factory=list)
    prompt_changes: list[str] = field(default_factory=list)
    recordings: list[str] = field(default_factory=list)

    def pass_hat(self, ks: Sequence[int]) -> dict[str, dict[int, float | None]]:
        """Per version, pass^k per k of the run."""
        by_version: dict[str, list[CaseSamples]] = {}
        for c in self.cases:
            by_version.setdefault(c.version, []).append(c)
        return {v: {k: mean_pass_hat_k(cs, k) for k in ks} for v, cs in by_version.items()}


def analyse(
    results: Sequence[ItemResult],
    versions: Sequence[PromptVersion],
    rules: CompareRules,
    baseline: StoredRun | None,
    trusted: TrustedRecordings | None,
) -> Analysis:
    order = [v.version for v in versions]
    by_version: dict[str, list[ItemResult]] = {}
    for r in results:
        by_version.setdefault(r.prompt, []).append(r)
    first = order[0]
    # every comparison reads "<the --prompt version> vs <a reference>": its regressions
    # are what the --prompt version newly fails, whichever option named the reference
    pairs = (
        _sharing_pairs(order, by_version) if rules.all_versions else [(v, first) for v in order[1:]]
    )
    references = [(v, by_version.get(v, []), judged) for v, judged in pairs]
    if baseline is not None:
        references.append((f"baseline {baseline.path.name}", baseline.results, first))
    comparisons: list[Comparison] = []
    if references:  # the comparisons' statistics load only for a run that compares
        from pytest_prompteval.report.compare import compare, correct

        comparisons = [
            compare(
                reference_results,
                by_version.get(judged, []),
                (reference, judged),
                rules.ks,
                rules.min_effect,
                rules.gate_metric,
            )
            for reference, reference_results, judged in references
        ]
        correct(comparisons)  # Holm over every test of the run
    return Analysis(
        summarize(list(results), order, rules.ks),
        comparisons,
        case_samples(results),
        _git_version_changes(versions),
        _recording_lines(trusted, results),
    )


def failure_reasons(
    results: Sequence[ItemResult], reason: Callable[[ItemResult], str]
) -> dict[tuple[str, str], str]:
    """Why each failing case failed: its first failing sample's reason."""
    reasons: dict[tuple[str, str], str] = {}
    for r in sorted(results, key=lambda r: r.sample):
        if r.outcome == "failed":
            reasons.setdefault((r.prompt, f"{r.file}::{r.case_id}"), reason(r))
    return reasons


def _sharing_pairs(
    order: Sequence[str], by_version: dict[str, list[ItemResult]]
) -> list[tuple[str, str]]:
    """``--prompt=all``: (reference, version) for each version and the first one before it
    that shares a case with it (v2 against v1), never a prompt that runs other cases."""
    cases = {v: {case_key(r) for r in by_version.get(v, [])} for v in order}
    pairs = []
    for index, version in enumerate(order):
        reference = next((u for u in order[:index] if cases[u] & cases[version]), None)
        if reference is not None:
            pairs.append((reference, version))
    return pairs


def _git_version_changes(versions: Sequence[PromptVersion]) -> list[str]:
    """What changed in the --prompt version against each version read from git."""
    first, *others = versions or (None,)
    lines: list[str] = []
    for other in others:
        if first is not None and SEPARATOR in other.version + first.version:
            from pytest_prompteval.report.promptdiff import prompt_changes  # a git version

            old, new = (other, first) if SEPARATOR in other.version else (first, other)
            lines += prompt_changes(old, new)
    return lines


def _recording_lines(trusted: TrustedRecordings | None, results: Sequence[ItemResult]) -> list[str]:
    """With trusted recordings: what the checkout changed, and what the items did with the
    recordings the trusted ref does not have."""
    if trusted is None:
        return []
    lines = trusted.changes().lines()
    uses = Counter(r.unverified for r in results if r.unverified)
    if uses:
        lines.append(
            "items on unverified recordings: "
            + ", ".join(f"{n} {what}" for what, n in sorted(uses.items()))
        )
    return lines
