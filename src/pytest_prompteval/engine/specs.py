"""An item's spec, built one way for case files and the ``prompteval`` fixture: the prompt
version's assertions, the case's own, a code case's spec and strategy, and the scorer
that decides the item."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from pytest_prompteval.core.cases import Case
from pytest_prompteval.core.errors import PromptevalError
from pytest_prompteval.core.prompts import PromptVersion
from pytest_prompteval.core.repocases import is_repo_case, parse_repo_case
from pytest_prompteval.core.schema import suggestion
from pytest_prompteval.core.yamlload import line_of
from pytest_prompteval.engine.engine import Engine
from pytest_prompteval.engine.evaluate import ItemSpec, scorer_for
from pytest_prompteval.interaction.agent import AgentSpec, parse_agent
from pytest_prompteval.interaction.strategies import Strategy
from pytest_prompteval.scoring.assertions import (
    FILE_TYPES,
    TRAJECTORY_TYPES,
    Assertion,
    parse_assertions,
)
from pytest_prompteval.scoring.code.spec import is_code_case, parse_code_spec

if TYPE_CHECKING:  # a repository case's machinery loads with the first such case
    from pytest_prompteval.interaction.repository import RepoTask

#: (prompt version, sample, samples) -> the item's spec
SpecMaker = Callable[[PromptVersion, int, int], ItemSpec]


def item_specs(engine: Engine, case: Case) -> SpecMaker:
    """The specs of ``case``'s items: its assertions and code spec checked once (errors name
    the file and line), then one spec per version and sample, the version's assertions
    first."""
    if case.difficulty is not None and case.difficulty not in engine.scorer.difficulties:
        known = sorted(engine.scorer.difficulties)
        raise PromptevalError(
            f"case {case.id!r}: unknown difficulty {case.difficulty!r}"
            f"{suggestion(case.difficulty, known)}; known: {', '.join(known)} (a project adds "
            "its own under length_ranges or difficulty_aliases in ini prompteval_scoring's table)",
            case.path,
            line_of(case.raw, "difficulty"),
        )
    scorers = engine.scorers()
    code = parse_code_spec(case) if is_code_case(case) else None
    repo = parse_repo_case(case) if is_repo_case(case) else None
    # built and checked now, at collection: a failed build or a test the repository lacks
    # is the case file's error, before any call
    environment = None
    if repo is not None:
        environment = engine.environment(repo.environment)
        engine.check_test_ids(case, repo, environment)
    own = parse_assertions(
        case.raw.get("assert"),
        (case.path, line_of(case.raw, "assert")),
        f"case {case.id!r}",
        scorers,
    )
    by_version: dict[
        str,
        tuple[tuple[Assertion, ...], Strategy | None, str, AgentSpec | None, RepoTask | None],
    ] = {}

    def spec(prompt: PromptVersion, sample: int, samples: int) -> ItemSpec:
        found = by_version.get(prompt.version)
        if found is None:
            assertions = (*engine.prompt_assertions(prompt), *own)
            strategy = engine.prompt_strategy(prompt) if code is not None else None
            agent = parse_agent(
                case,
                prompt,
                engine.tools(),
                engine.settings.item_timeout,
                engine.settings.max_tool_calls,
            )
            _check_tool_names(case, prompt, assertions, agent)
            task: RepoTask | None = None
            if repo is not None:
                from pytest_prompteval.interaction.repository import repo_task

                task = repo_task(case, repo, prompt, agent, environment, assertions)
            scorer = scorer_for(engine, case, assertions, code, task is not None)
            if task is not None:  # its tools are the sandbox's kind
                agent = task.agent
            found = (assertions, strategy, scorer, agent, task)
            by_version[prompt.version] = found
        assertions, strategy, scorer, agent, task = found
        return ItemSpec(
            case, prompt, sample, samples, assertions, code, strategy, scorer, agent, task
        )

    return spec


def _check_tool_names(
    case: Case,
    prompt: PromptVersion,
    assertions: tuple[Assertion, ...],
    agent: AgentSpec | None,
) -> None:
    """A trajectory assertion needs an agent, and names tools it has: a misspelt name in
    ``tool_not_called`` would pass whatever the agent does."""
    where = (case.path, line_of(case.raw, "assert"))
    for assertion in assertions:
        if assertion.type in FILE_TYPES and not is_repo_case(case):
            raise PromptevalError(
                f"case {case.id!r}: assertion {assertion.type} needs a repository case "
                "(kind: repo): it checks the copy the agent leaves",
                *where,
            )
        if assertion.type not in TRAJECTORY_TYPES:
            continue
        if agent is None:
            raise PromptevalError(
                f"case {case.id!r}: assertion {assertion.type} needs an agent case (tools, "
                f"tool_results or turns in the case or in prompt {prompt.version!r})",
                *where,
            )
        for name in assertion.tools:
            if name not in agent.names:
                raise PromptevalError(
                    f"case {case.id!r}: assertion {assertion.type}: unknown tool {name!r}"
                    f"{suggestion(name, agent.names)} with prompt {prompt.version!r}; known: "
                    f"{', '.join(sorted(agent.names)) or 'none'}",
                    *where,
                )
