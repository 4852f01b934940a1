"""What one item leaves on its report: an ``ItemResult``, typed, with its JSON form.

The JSON form is flat (``judge_score``, ``tests_passed``, ...), as the history files have
always been, so ``from_json`` reads every earlier history file; fields this version does not
know are kept in ``extra`` and written back.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from pytest_prompteval.core.bounds import MAX_DIFF
from pytest_prompteval.core.usage import Usage

#: The ``user_properties`` key of an item's result.
RESULT_KEY = "prompteval"
#: The ``user_properties`` key of a sample that --prompteval-stop-early did not draw.
STOPPED_EARLY_KEY = "prompteval_stopped_early"
#: The history files' format: 1 had no ``outcome`` per result; 2 does.
SCHEMA_VERSION = 2

JUNIT = {"junit": True}  # a field shown as a JUnit testcase property


@dataclass(frozen=True)
class CheckResult:
    """One ``assert:`` entry's verdict."""

    type: str
    passed: bool
    score: float
    weight: float
    reason: str
    #: a json_field check's field, for the per-field table
    field: str | None = None
    #: a trajectory assertion's failing step (the call that broke it), when one step did
    step: int | None = None


@dataclass(frozen=True)
class JudgeResult:
    """The judge's verdict on the answer (the claude and hybrid scorers)."""

    score: float
    dimensions: dict[str, float]
    notes: str
    repeats: list[float]
    spread: float
    model: str
    template: str

    PREFIX = "judge_"


@dataclass(frozen=True)
class ExecutionResult:
    """A code case's run in the sandbox."""

    error_class: str | None = None
    first_failure: str | None = None
    tests_passed: int = 0
    tests_total: int = 0
    code: str | None = None
    extraction: str | None = None
    timeout_s: float | None = None
    run_seconds: float | None = None


#: The most of the verdict's test output a result keeps, in characters (its end: the
#: failures and pytest's summary are there).
MAX_OUTPUT = 64 << 10


#: Test outcomes that count as passing, as SWE-bench counts them (pytest's ``-rA`` names).
PASSING = ("PASSED", "XFAIL")


@dataclass(frozen=True)
class RepoResult:
    """A repository task's verdict: its tests on the copy the agent left."""

    resolved: bool
    #: each listed test's outcome as pytest names it (``missing``: the run did not name it)
    outcomes: dict[str, str]
    fail_to_pass: list[str]
    pass_to_pass: list[str]
    #: the seed's partial-correctness view: share of fail_to_pass fixed, pass_to_pass kept
    fail_to_pass_fixed: float
    pass_to_pass_kept: float
    #: the agent's change, against the snapshot
    diff: str
    #: test infrastructure the agent changed (conftest.py...), restored for the verdict
    restored: list[str] = field(default_factory=list)
    #: why the test command did not run the tests (its last lines), when it did not
    broken: str | None = None
    #: the end of the test run's output, kept when the item was not resolved
    output: str | None = None

    def passes(self, test: str) -> bool:
        return self.outcomes.get(test) in PASSING

    def __post_init__(self) -> None:
        # the verdict builds it within the bound; a history file may hold anything
        if len(self.diff) > MAX_DIFF:
            cut = self.diff[:MAX_DIFF] + "\n[diff cut: more than the kept bound]\n"
            object.__setattr__(self, "diff", cut)
        if self.output is not None and len(self.output) > MAX_OUTPUT:
            kept = "[output cut: its start]\n" + self.output[-MAX_OUTPUT:]
            object.__setattr__(self, "output", kept)


@dataclass
class ToolCall:
    """One tool call of an agent's conversation and what answered it."""

    name: str
    input: dict[str, Any]
    result: str
    is_error: bool = False
    id: str = ""


@dataclass
class Step:
    """One model call of a conversation: why it stopped, what it said, the tools it called
    and the user turn sent after it (a scripted or simulated user's), if any; and the
    call's own figures (none in a result written before they were kept)."""

    number: int
    stop_reason: str | None
    text: str = ""
    calls: list[ToolCall] = field(default_factory=list)
    turn: str | None = None
    #: the turn came from the simulated user (not the case's script)
    simulated: bool = False
    #: the model's thinking before it answered, if it showed any
    thinking: str = ""
    input_tokens: int | None = None
    output_tokens: int | None = None
    latency_ms: float | None = None
    cost_usd: float | None = None
    replayed: bool | None = None


@dataclass
class Trajectory:
    """An agent case's conversation, step by step; ``failure`` says why it ended badly (a
    tool call nothing answers, ``max_steps`` reached)."""

    steps: list[Step] = field(default_factory=list)
    max_steps: int = 0
    hit_max_steps: bool = False
    failure: str | None = None
    #: a simulated user's calls (its last may say it is done) and the turns it sent
    user_calls: int = 0
    user_turns: int = 0

    @property
    def calls(self) -> list[ToolCall]:
        return [c for s in self.steps for c in s.calls]

    @property
    def tool_errors(self) -> int:
        return sum(c.is_error for c in self.calls)

    @property
    def turns(self) -> int:
        return sum(s.turn is not None for s in self.steps)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Trajectory:
        steps = [
            Step(
                **{
                    **{k: v for k, v in s.items() if k != "calls"},
                    "calls": [ToolCall(**c) for c in s.get("calls", [])],
                }
            )
            for s in data.get("steps", [])
        ]
        return cls(**{**{k: v for k, v in data.items() if k != "steps"}, "steps": steps})


@dataclass(frozen=True)
class ItemResult:
    """Built once, by ``engine/assemble.py``, and never changed after."""

    case_id: str = field(metadata=JUNIT)
    file: str
    prompt: str = field(metadata=JUNIT)
    prompt_sha256: str | None = None
    sample: int = field(default=0, metadata=JUNIT)
    samples: int = 1
    category: str | None = field(default=None, metadata=JUNIT)
    difficulty: str | None = field(default=None, metadata=JUNIT)
    quality: str | None = None
    scorer: str = "automatic"
    threshold: float = 0.7
    model: str | None = field(default=None, metadata=JUNIT)
    #: passed | failed | error (of the calls, not scored) | skipped; None while running
    outcome: str | None = field(default=None, metadata=JUNIT)
    passed: bool = field(default=False, metadata=JUNIT)
    score: float | None = field(default=None, metadata=JUNIT)
    main_score: float | None = None
    automatic_score: float | None = None
    dimensions: dict[str, float] = field(default_factory=dict)
    missing_topics: list[str] = field(default_factory=list)
    incorrect_claims: list[str] = field(default_factory=list)
    assertions: list[CheckResult] = field(default_factory=list)
    input_tokens: int = field(default=0, metadata=JUNIT)
    output_tokens: int = field(default=0, metadata=JUNIT)
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float | None = field(default=None, metadata=JUNIT)
    latency_ms: float | None = field(default=None, metadata=JUNIT)
    #: the answer's calls: the generation, a strategy's later ones, an agent's steps
    answer_calls: int = 1
    #: every call the item made (generation, a strategy's later calls, the judge's), by source
    calls_replayed: int = 0
    calls_live: int = 0
    replayed: bool | None = None
    response: str | None = None
    prefill: str | None = None
    recording: str | None = None
    #: with --prompteval-trusted-recordings, a recording the trusted ref does not have:
    #: "replayed", or "asked again: same answer" / "asked again: different answer"
    unverified: str | None = field(default=None, metadata=JUNIT)
    stop_reason: str | None = None
    request_id: str | None = None
    error_type: str | None = field(default=None, metadata=JUNIT)
    error: str | None = None
    api_error_class: str | None = None
    status: int | None = None
    judged: bool = False
    judge: JudgeResult | None = None
    judge_input_tokens: int = 0
    judge_output_tokens: int = 0
    judge_cost_usd: float = 0.0
    judge_calls: int = 0
    #: an agent case's simulated user's calls, apart from the agent's (the figures above)
    user_input_tokens: int = 0
    user_output_tokens: int = 0
    user_cost_usd: float = 0.0
    user_calls: int = 0
    execution: ExecutionResult | None = None
    #: an agent case's conversation (tool calls, turns), None for a single answer
    trajectory: Trajectory | None = None
    #: a repository task's verdict, None for any other item
    repo: RepoResult | None = None
    min_pass: float | None = None
    #: an inline run of the ``prompteval`` fixture, and the test that made it
    inline: bool = False
    test: str | None = None
    #: fields of a newer (or older) history format, kept as they were
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def judge_score(self) -> float | None:
        return self.judge.score if self.judge else None

    @property
    def judge_notes(self) -> str | None:
        return self.judge.notes if self.judge else None

    @property
    def judge_repeats(self) -> list[float]:
        return self.judge.repeats if self.judge else []

    # Each purpose's usage, from the figures above (a result keeps neither the judge's cache
    # tokens nor which purpose's calls were replayed: ``calls_replayed`` counts them all).

    @property
    def answer_usage(self) -> Usage:
        calls = self.calls_replayed + self.calls_live - self.judge_calls - self.user_calls
        return Usage(
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            cache_read_tokens=self.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens,
            cost_usd=self.cost_usd or 0.0,
            unpriced=int(self.cost_usd is None),
            latency_ms=self.latency_ms or 0.0,
            calls=calls,
        )

    @property
    def judge_usage(self) -> Usage:
        return Usage(
            input_tokens=self.judge_input_tokens,
            output_tokens=self.judge_output_tokens,
            cost_usd=self.judge_cost_usd,
            calls=self.judge_calls,
        )

    @property
    def user_usage(self) -> Usage:
        return Usage(
            input_tokens=self.user_input_tokens,
            output_tokens=self.user_output_tokens,
            cost_usd=self.user_cost_usd,
            calls=self.user_calls,
        )

    @property
    def error_class(self) -> str | None:
        """The code failure's class, for code cases."""
        return self.execution.error_class if self.execution else None

    def to_json(self) -> dict[str, Any]:
        data = {name: getattr(self, name) for name in _OWN}
        data["assertions"] = [dict(vars(c)) for c in self.assertions]
        if self.judge is not None:
            for name, value in dataclasses.asdict(self.judge).items():
                data[JudgeResult.PREFIX + name] = value
        if self.execution is not None:
            data.update(vars(self.execution))
        data["trajectory"] = (
            None if self.trajectory is None else dataclasses.asdict(self.trajectory)
        )
        data["repo"] = None if self.repo is None else dataclasses.asdict(self.repo)
        return {**self.extra, **data} if self.extra else data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ItemResult:
        rest = dict(data)
        if "attempts" in rest:  # its name in older files
            rest.setdefault("answer_calls", rest.pop("attempts"))
        judge = None
        if rest.get("judge_score") is not None:
            given: dict[str, Any] = {
                n: rest[JudgeResult.PREFIX + n]
                for n in _JUDGE_NAMES
                if rest.get(JudgeResult.PREFIX + n) is not None
            }
            judge = JudgeResult(**{**_JUDGE_DEFAULTS, **given})
        for n in _JUDGE_NAMES:
            rest.pop(JudgeResult.PREFIX + n, None)
        execution = None
        if rest.get("scorer") == "execution":
            ran: dict[str, Any] = {n: rest[n] for n in _RUN_NAMES if n in rest}
            execution = ExecutionResult(**ran)
        for n in _RUN_NAMES:
            rest.pop(n, None)
        values = {k: rest.pop(k) for k in _OWN if k in rest}
        if isinstance(values.get("trajectory"), dict):
            values["trajectory"] = Trajectory.from_json(values["trajectory"])
        if isinstance(values.get("repo"), dict):
            values["repo"] = RepoResult(**values["repo"])
        checks = [c for c in values.get("assertions") or [] if isinstance(c, dict)]
        values["assertions"] = [
            CheckResult(
                **{**_CHECK_DEFAULTS, **{k: v for k, v in c.items() if k in _CHECK_DEFAULTS}}
            )
            for c in checks
        ]
        if "calls_replayed" not in values and values.get("replayed") is not None:
            # history before calls were counted: the item's own call
            values["calls_replayed"] = int(bool(values["replayed"]))
            values["calls_live"] = 1 - values["calls_replayed"]
        return cls(**values, judge=judge, execution=execution, extra=rest)


#: Field names, read once (``dataclasses.fields`` costs more than the copying it guides).
_OWN = tuple(
    f.name for f in dataclasses.fields(ItemResult) if f.name not in ("judge", "execution", "extra")
)
_JUDGE_NAMES = tuple(f.name for f in dataclasses.fields(JudgeResult))
_RUN_NAMES = tuple(f.name for f in dataclasses.fields(ExecutionResult))


_JUDGE_DEFAULTS: dict[str, Any] = {
    "score": 0.0, "dimensions": {}, "notes": "", "repeats": [], "spread": 0.0, "model": "",
    "template": "",
}  # fmt: skip
_CHECK_DEFAULTS: dict[str, Any] = {
    "type": "", "passed": False, "score": 0.0, "weight": 1.0, "reason": "", "field": None,
    "step": None,
}  # fmt: skip

#: JUnit testcase properties: the fields marked for CI dashboards, in the type's order.
JUNIT_FIELDS = tuple(f.name for f in dataclasses.fields(ItemResult) if f.metadata.get("junit"))
