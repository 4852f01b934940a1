"""The scorer kinds the plugin ships: the seed's automatic scorer and the judge (chosen by
``--prompteval-scorer``), code run against its tests, a repository's tests, and the
assertions alone."""

from __future__ import annotations

from dataclasses import dataclass

from pytest_prompteval.core.result import ExecutionResult
from pytest_prompteval.scoring.hybrid import judged
from pytest_prompteval.scoring.judge import Verdict
from pytest_prompteval.scoring.kinds.protocol import Answer, Context, Options, Scored, Shape
from pytest_prompteval.scoring.score import Score

#: ``ItemResult.scorer`` of a code case, scored by running its tests
EXECUTION = "execution"
#: ``ItemResult.scorer`` of an item scored by its assertions alone
ASSERTIONS_ONLY = "assertions"
#: ``ItemResult.scorer`` of a repository case, decided by the repository's tests
REPOSITORY = "repository"


def _reaches(main: Score, threshold: float) -> bool:
    return bool(main.value >= threshold)


@dataclass(frozen=True)
class Explaining:
    """The seed's automatic scorer (topics, clarity, length by difficulty...), with the
    judge's verdict beside it on every case or a sample of them."""

    name: str
    #: the judge reads every case (``claude``), a sample (``hybrid``) or none
    judges: bool = False
    sampled: bool = False
    #: the verdict decides; else it is recorded beside the automatic score, which does
    verdict_decides: bool = False

    def claims(self, shape: Shape) -> bool:
        return False  # the setting chooses it

    def _verdict(self, answer: Answer, context: Context) -> Verdict | None:
        options = context.options
        if not self.judges or (
            self.sampled and not judged(answer.case.id, options.seed, options.judge_rate)
        ):
            return None
        judge = context.judge()
        text = answer.response.text
        return judge.verdict(answer.case, answer.prompt, text, context.ledger, answer.trajectory)

    def score(self, answer: Answer, context: Context) -> Scored:
        automatic = context.automatic.score(answer.case, answer.response.text, context.samples())
        context.keep(Scored(None, automatic))
        verdict = self._verdict(answer, context)
        main = verdict.score if verdict is not None and self.verdict_decides else automatic
        return Scored(main, automatic, verdict)

    def passes(self, main: Score, threshold: float, options: Options) -> bool:
        return _reaches(main, threshold)


AUTOMATIC = Explaining("automatic")
CLAUDE = Explaining("claude", judges=True, verdict_decides=True)
HYBRID = Explaining("hybrid", judges=True, sampled=True)


class CodeTests:
    """Code: run in the sandbox against the case's tests."""

    name = EXECUTION

    def claims(self, shape: Shape) -> bool:
        return shape.code is not None

    def score(self, answer: Answer, context: Context) -> Scored:
        assert answer.code is not None  # claimed for code cases only
        runner = context.code_runner()
        main, metrics = runner.score(answer.case, answer.code, answer.text, answer.prefill)
        execution = ExecutionResult(
            error_class=metrics.error_class,
            first_failure=metrics.first_failure,
            tests_passed=metrics.tests_passed,
            tests_total=metrics.tests_total,
            **metrics.details,
        )
        return Scored(main, execution=execution)

    def passes(self, main: Score, threshold: float, options: Options) -> bool:
        """All tests pass (with --prompteval-code-pass threshold: the partial score reaches
        the threshold)."""
        if options.code_pass == "all":
            return bool(main.dimensions["functional_correctness"] == 1.0)
        return _reaches(main, threshold)


class RepositoryTests:
    """A repository case: resolved when every listed test passes in the agent's copy."""

    name = REPOSITORY

    def claims(self, shape: Shape) -> bool:
        return shape.repository

    def score(self, answer: Answer, context: Context) -> Scored:
        repo = answer.repo
        assert repo is not None  # claimed for repository cases only
        fixed, kept = repo.fixed, repo.kept
        dimensions = {"fail_to_pass_fixed": fixed, "pass_to_pass_kept": kept}
        return Scored(Score(1.0 if repo.passed else (fixed + kept) / 2, dimensions))

    def passes(self, main: Score, threshold: float, options: Options) -> bool:
        return all(v == 1.0 for v in main.dimensions.values())


class AssertionsOnly:
    """No main score: the item's assertions alone decide it."""

    name = ASSERTIONS_ONLY

    def claims(self, shape: Shape) -> bool:
        return False  # what is left when no other kind fits

    def score(self, answer: Answer, context: Context) -> Scored:
        return Scored(None)

    def passes(self, main: Score, threshold: float, options: Options) -> bool:
        return _reaches(main, threshold)
