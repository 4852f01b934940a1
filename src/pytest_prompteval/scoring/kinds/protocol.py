"""The one signature every scorer kind has: what it is given (``Answer``, ``Context``) and
what it gives back (``Scored``).

The seed's automatic scorer, the judge and the code runner each take different arguments;
a kind wraps one of them (or anything else) behind ``score(answer, context)``, so the
engine never asks which kind it holds."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from pytest_prompteval.core.cases import Case
from pytest_prompteval.core.prompts import PromptVersion
from pytest_prompteval.core.request import Request
from pytest_prompteval.core.response import Response
from pytest_prompteval.core.result import ExecutionResult, Trajectory
from pytest_prompteval.providers.ledger import Ledger
from pytest_prompteval.scoring.assertions import Assertion
from pytest_prompteval.scoring.automatic import AutomaticScorer
from pytest_prompteval.scoring.code.spec import CodeSpec
from pytest_prompteval.scoring.judge import Judge, Verdict
from pytest_prompteval.scoring.score import Score

if TYPE_CHECKING:  # each loads with the first code or repository case that needs it
    from pytest_prompteval.sandbox.provider import SandboxProvider
    from pytest_prompteval.scoring.code.runner import CodeRunner
    from pytest_prompteval.scoring.repo import RepoVerdict


@dataclass(frozen=True)
class Shape:
    """What a case is, known at collection: what a kind claims cases by."""

    case: Case
    #: the prompt version's assertions and the case's own
    assertions: tuple[Assertion, ...]
    code: CodeSpec | None
    #: a repository case (``kind: repo``)
    repository: bool


@dataclass(frozen=True)
class Answer:
    """The item's final answer, as a kind scores it."""

    case: Case
    prompt: PromptVersion
    request: Request
    response: Response
    #: the final text and prefill: a code strategy's later calls may have changed them
    text: str
    prefill: str
    trajectory: Trajectory | None = None
    code: CodeSpec | None = None
    #: a repository case's verdict, from its tests in the copy the agent left
    repo: RepoVerdict | None = None


@dataclass(frozen=True)
class Options:
    """The run's settings that decide scoring."""

    #: ``all``: a code case passes when every test does; ``threshold``: on its partial score
    code_pass: str = "all"
    #: which cases the judge reads under hybrid (a sample by case id and seed)
    seed: str = ""
    judge_rate: float = 1.0


@dataclass(frozen=True)
class Scored:
    """What a kind found: the main score (None: the assertions alone decide) and the parts
    the result shows."""

    main: Score | None
    automatic: Score | None = None
    verdict: Verdict | None = None
    execution: ExecutionResult | None = None


@dataclass(frozen=True)
class Context:
    """The engine's services a kind may use; every call goes on ``ledger``, the item's."""

    ledger: Ledger
    options: Options
    automatic: AutomaticScorer
    #: built on first use, so a run that never judges (runs code, a repository's commands)
    #: never needs one
    judge: Callable[[], Judge]
    code_runner: Callable[[], CodeRunner]
    sandboxes: Callable[[], SandboxProvider]
    #: every sample's text of this case and version, for consistency (none with one sample)
    samples: Callable[[], list[str]]
    #: what was found so far, kept on the result if a later step fails (the automatic
    #: score stays when the judge then errs)
    keep: Callable[[Scored], None]


class ScorerKind(Protocol):
    """A way of deciding an item's main score."""

    @property
    def name(self) -> str:
        """The name results give as ``scorer`` (and ``--prompteval-scorer`` takes, for the
        kinds the setting chooses)."""
        ...

    def claims(self, shape: Shape) -> bool:
        """This kind decides every case of this shape, whatever the setting says."""
        ...

    def score(self, answer: Answer, context: Context) -> Scored: ...

    def passes(self, main: Score, threshold: float, options: Options) -> bool:
        """The main score passes (the checks are counted apart)."""
        ...
