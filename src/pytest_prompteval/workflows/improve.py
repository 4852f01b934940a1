"""``prompteval improve --prompt VERSION``: ask Claude how to improve a prompt version.

Reads the latest stored run of the version, sums up its failure patterns (missing topics,
incorrect claims, failing assertions, error classes, judge notes, the worst cases), sends
them with the prompt file to Claude through the same provider and recordings as the tests
(so a re-run with the same inputs pays nothing), and returns prioritised suggestions and an
improved system and user prompt, through a forced tool call with a JSON schema.
"""

from __future__ import annotations

import json
import os
import statistics
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from pytest_prompteval.core.cases import Case
from pytest_prompteval.core.errors import PromptevalError
from pytest_prompteval.core.history import RUN_FILE, StoredRun, load_run
from pytest_prompteval.core.paths import check_name, output_inside, read_bounded
from pytest_prompteval.core.pricing import PriceTable
from pytest_prompteval.core.prompts import PromptVersion, load_prompt
from pytest_prompteval.core.safetext import safe_line, safe_text
from pytest_prompteval.providers.base import CallContext
from pytest_prompteval.providers.ledger import Ledger
from pytest_prompteval.providers.store import Store
from pytest_prompteval.scoring.judge import structured_call

PRIORITIES = ("high", "medium", "low")
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "suggestions": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "properties": {
                    "issue": {"type": "string"},
                    "current_text": {"type": "string"},
                    "suggested_text": {"type": "string"},
                    "rationale": {"type": "string"},
                    "priority": {"enum": list(PRIORITIES)},
                },
                "required": ["issue", "current_text", "suggested_text", "rationale", "priority"],
            },
        },
        "expected_impact": {"type": "string"},
        "improved_system_prompt": {"type": "string"},
        "improved_user_prompt": {"type": "string"},
    },
    "required": [
        "suggestions",
        "expected_impact",
        "improved_system_prompt",
        "improved_user_prompt",
    ],
}
SYSTEM = (
    "You are an expert prompt engineer. You get a prompt version used with Claude and the "
    "failure patterns its test suite found. Propose concrete, prioritised edits that fix "
    "the patterns without breaking what works, quoting the current text you would change. "
    "Keep every {placeholder} the prompt uses. Submit with the tool."
)


def latest_run(results: Path, version: str) -> StoredRun:
    # the version's own runs: not their review files, nor a version whose name ends so
    names = sorted(os.listdir(results)) if results.is_dir() else []
    candidates = [results / n for n in names if (m := RUN_FILE.match(n)) and m.group(2) == version]
    # a run that selected nothing has nothing to learn from (older plugins stored such runs)
    for path in reversed(candidates):
        run = load_run(path, results)
        if run.results:
            return run
    raise PromptevalError(
        f"no stored run of {version!r} with results in {results}; run the suite first"
    )


def failure_patterns(run: StoredRun) -> dict[str, Any]:
    results = run.results
    scores = [r.score for r in results if r.score is not None]
    worst = sorted((r for r in results if r.score is not None), key=lambda r: r.score or 0.0)
    return {
        "items": len(results),
        "passed": sum(bool(r.passed) for r in results),
        "mean_score": statistics.fmean(scores) if scores else None,
        **_most_common(results),
        "judge_notes": [r.judge_notes for r in results if r.judge_notes][:10],
        "worst_cases": [
            {
                "case_id": r.case_id,
                "score": r.score,
                "missing_topics": r.missing_topics,
                "answer_start": (r.response or "")[:400],
            }
            for r in worst[:5]
        ],
    }


def _most_common(results: Sequence[Any]) -> dict[str, dict[str, int]]:
    """The topics missed, claims judged incorrect, assertions failed and error classes,
    most common first."""
    missing = Counter(t for r in results for t in r.missing_topics)
    claims = Counter(c for r in results for c in r.incorrect_claims)
    assertions = Counter(a.type for r in results for a in r.assertions if not a.passed)
    classes = Counter(
        r.error_class or r.error_type for r in results if r.error_class or r.error_type
    )
    return {
        "missing_topics": dict(missing.most_common(15)),
        "incorrect_claims": dict(claims.most_common(10)),
        "failed_assertions": dict(assertions.most_common()),
        "error_classes": dict(classes.most_common()),
    }


def suggest(
    prompt: PromptVersion, run: StoredRun, store: Store, prices: PriceTable, model: str
) -> tuple[dict[str, Any], dict[str, Any], Ledger]:
    patterns = failure_patterns(run)
    text = read_bounded(prompt.path).decode()
    user = (
        f'<prompt_file name="{prompt.path.name}">\n{text}\n</prompt_file>\n'
        f"<failure_patterns>\n{json.dumps(patterns, indent=1)}\n</failure_patterns>"
    )
    context = CallContext(
        Case(id=f"improve-{prompt.version}", input={}, path=prompt.path, line=1),
        prompt,
        0,
        "improve",
    )
    ledger = Ledger(prices)
    answer = structured_call(store, ledger, model, context, SYSTEM, user, SCHEMA)
    answer["suggestions"].sort(key=lambda s: PRIORITIES.index(s["priority"]))
    return answer, patterns, ledger


def render(answer: dict[str, Any], patterns: dict[str, Any]) -> list[str]:
    mean = patterns["mean_score"]
    lines = [
        "=== PROMPT IMPROVEMENT SUGGESTIONS ===",
        f"Average score: {'-' if mean is None else f'{mean:.2f}'} "
        f"({patterns['passed']}/{patterns['items']} passed)",
        "",
    ]
    for s in answer["suggestions"]:  # the judge's words: escaped, continuation lines indented
        lines += [
            f"[{s['priority']}] {safe_text(s['issue'])}",
            f"  current:   {safe_line(repr(s['current_text']))}",
            f"  suggested: {safe_line(repr(s['suggested_text']))}",
            f"  rationale: {safe_text(s['rationale'], '    ')}",
            "",
        ]
    lines.append(f"Expected impact: {safe_text(answer['expected_impact'])}")
    return lines


def write_improved(
    prompt: PromptVersion, answer: dict[str, Any], prompts: Path, version: str
) -> Path:
    """A new prompt version file ``prompts/<version>.yaml``; ``version`` follows the case-id
    rule (no folders, no ``..``) and an existing file is never overwritten."""
    check_name(version, "--output")
    output = output_inside(prompts, f"{version}.yaml")
    if output.exists():
        raise PromptevalError("exists already; pick another --output name", output)
    data = dict(prompt.raw)
    data.update(
        name=f"{prompt.name} (improved)",
        description=f"Made by prompteval improve from {prompt.version}",
        system_prompt=answer["improved_system_prompt"],
        user_prompt=answer["improved_user_prompt"],
    )
    text = yaml.safe_dump(_plain(data), sort_keys=False, allow_unicode=True, width=100)
    with output.open("x", encoding="utf-8") as handle:  # "x": never overwrite
        handle.write(text)
    return output


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def load_version(prompts: Path, version: str) -> PromptVersion:
    for suffix in (".yaml", ".yml"):
        if (prompts / f"{version}{suffix}").exists():
            return load_prompt(prompts / f"{version}{suffix}")
    raise PromptevalError(f"no prompt version {version!r} in {prompts}")
