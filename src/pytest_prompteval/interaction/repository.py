"""Repository tasks (``kind: repo``) as items: the item's private copy, the tool loop over
it, then the verdict.

The prompt version gives Claude Anthropic's client tools (``text_editor_20250728``,
``bash_20250124``); the workspace runs them in the item's sandbox through the tool loop's
one executor seam (``tool_executor``: the workspace's executor, each call bounded by the
item's deadline and its sandbox failure an error). After the conversation the verdict
(scoring/repo.py) runs the case's tests in a fresh sandbox; the copy is removed after the
item whatever happens. A sandbox that fails is a ``SandboxError``: the item errs, it does
not fail.

Replay. A repository's tool output varies from run to run (timings in pytest's output,
temporary paths), so its tools are of the ``SANDBOX`` kind (``toolkinds.py``), which
re-runs: each step is recorded under the key of its request with every ``tool_result``'s
content left out: the key covers the initial request (prompt, issue, tools) and the model's
own turns (its tool calls). In replay the tools run again, in a fresh copy, and the recorded
turns apply the same edits; a real divergence (a changed prompt, issue, tools or model turn)
is a missing recording naming its step.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from pytest_prompteval.core.cases import Case
from pytest_prompteval.core.content import ToolExecutor, ToolOutcome
from pytest_prompteval.core.errors import PromptevalError, SandboxError, is_infrastructure
from pytest_prompteval.core.prompts import PromptVersion
from pytest_prompteval.core.repocases import RepoCase
from pytest_prompteval.core.request import Request
from pytest_prompteval.core.result import Trajectory
from pytest_prompteval.core.yamlload import line_of
from pytest_prompteval.interaction.agent import AgentSpec, converse
from pytest_prompteval.interaction.deadline import Deadline
from pytest_prompteval.interaction.toolkinds import SANDBOX
from pytest_prompteval.providers.base import CallContext
from pytest_prompteval.providers.ledger import Ledger
from pytest_prompteval.providers.store import Fetched, Store
from pytest_prompteval.sandbox.environments import Environment
from pytest_prompteval.sandbox.install import install
from pytest_prompteval.sandbox.provider import Early, SandboxProvider
from pytest_prompteval.sandbox.workspace import TEXT_EDITOR, TOOL_TYPES, Executor
from pytest_prompteval.scoring.assertions import FILE_TYPES, Assertion, file_job
from pytest_prompteval.scoring.repo import (
    RepoVerdict,
    file_key,
    snapshot_of,
    verdict,
    verdict_sandbox,
)

#: /repo becomes a git repository whose one commit is the snapshot, made in the agent's
#: sandbox before its first call (no config but its own, no hook; the same commit every
#: time, dates fixed; no background maintenance left running after it). The verdict never
#: reads it: its diff is against the snapshot. Three processes, git's: ``rm`` only runs
#: when the snapshot holds a ``.git`` of its own.
AS_REPOSITORY = """\
cd /repo && if [ -e .git ] || [ -L .git ]; then rm -rf .git; fi \\
  && export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null \\
  GIT_AUTHOR_DATE=2000-01-01T00:00:00Z GIT_COMMITTER_DATE=2000-01-01T00:00:00Z \\
  && git init -q --template= . \\
  && printf '[user]\\n\\tname = agent\\n\\temail = agent@sandbox\\n' >> .git/config \\
  && printf '[maintenance]\\n\\tauto = false\\n' >> .git/config && git add -A \\
  && git commit -q --no-verify -m "the repository as the task begins"
"""


@dataclass(frozen=True)
class RepoTask:
    """A repository case with one prompt version: the case, the agent's tools and steps,
    and each client tool's name with its type."""

    case: RepoCase
    agent: AgentSpec
    tools: Mapping[str, str]
    #: folders the agent's sandbox must not show (the project: its recordings, patches)
    hidden: tuple[str, ...] = ()
    #: a text editor's ``max_characters`` (what ``view`` shows), by the tool's name
    max_characters: Mapping[str, int] = field(default_factory=dict)
    #: what the repository's commands run with (built before any call)
    environment: Environment | None = None
    #: the file-state checks of its assertions (``file_job``), taken on the final copy
    files: tuple[Mapping[str, str], ...] = ()


def repo_task(
    case: Case,
    repo: RepoCase,
    prompt: PromptVersion,
    agent: AgentSpec | None,
    environment: Environment | None = None,
    assertions: Sequence[Assertion] = (),
) -> RepoTask:
    """The task, checked: the version gives the client tools the workspace runs, and no
    other (nothing else could answer them in the sandbox); each is of the sandbox's kind,
    and so is any other call the agent makes (the workspace answers it)."""
    where = (prompt.path, prompt.line_of("tools"))
    wanted = " and ".join(f"{{type: {t}, name: ...}}" for t in TOOL_TYPES)
    if agent is None or not agent.tools:
        raise PromptevalError(
            f"case {case.id!r} is a repository case: prompt {prompt.version!r} needs tools: "
            f"{wanted}",
            *where,
        )
    limits: dict[str, int] = {}
    for tool in agent.tools:
        if tool.get("type") not in TOOL_TYPES:
            raise PromptevalError(
                f"case {case.id!r} is a repository case: tool {tool['name']!r} of prompt "
                f"{prompt.version!r} is not one the sandbox runs; give {wanted}",
                *where,
            )
        limit = tool.get("max_characters")
        if limit is not None:
            if tool["type"] != TEXT_EDITOR or type(limit) is not int or limit < 1:
                raise PromptevalError(
                    f"tool {tool['name']!r}: max_characters: expected a whole number of at "
                    f"least 1 on a {TEXT_EDITOR} tool, got {limit!r:.40}",
                    *where,
                )
            limits[str(tool["name"])] = limit
    if agent.rules or agent.turns:
        key = "tool_results" if agent.rules else "turns"
        raise PromptevalError(
            f"case {case.id!r}: {key}: a repository case's tools run in its sandbox, and it "
            "has no scripted turns",
            case.path,
            line_of(case.raw, key),
        )
    tools = {str(t["name"]): str(t["type"]) for t in agent.tools}
    agent = dataclasses.replace(agent, kinds=dict.fromkeys(tools, SANDBOX), other=SANDBOX)
    hidden = () if case.root is None else (str(case.root),)
    files = tuple(dict.fromkeys(file_key(file_job(a)) for a in assertions if a.type in FILE_TYPES))
    return RepoTask(
        repo, agent, tools, hidden, limits, environment, tuple(json.loads(f) for f in files)
    )


@contextlib.contextmanager
def _sandbox(what: str) -> Iterator[None]:
    """The sandbox's own failures as ``SandboxError`` (the item errs)."""
    try:
        yield
    except OSError as exc:
        raise SandboxError(f"{what}: {exc}") from None
    except PromptevalError as exc:
        if is_infrastructure(exc):
            raise
        raise SandboxError(f"{what}: {exc.message}", exc.path, exc.line) from None


def tool_executor(run: Executor, deadline: Deadline | None = None) -> ToolExecutor:
    """The workspace's executor as the tool loop's seam: each call runs at most the time
    the item's deadline leaves."""

    def execute(name: str, arguments: Mapping[str, object]) -> ToolOutcome:
        bounded = run
        if deadline is not None and deadline.left() < run.timeout:
            bounded = Executor(run.workspace, run.tools, deadline.left(), run.max_characters)
        with _sandbox(f"tool call {name}"):
            return bounded(name, arguments)

    return execute


def run_task(
    task: RepoTask,
    store: Store,
    ledger: Ledger,
    request: Request,
    context: CallContext,
    sandboxes: SandboxProvider,
    deadline: Deadline | None = None,
) -> tuple[Fetched, Trajectory, RepoVerdict]:
    """The conversation in the item's copy, then the verdict on what it left, in sandboxes
    of ``sandboxes`` (the verdict's started during the conversation: it takes the copy
    at its first job, once the agent's sandbox and every process of it are gone).
    ``deadline``: the item's (else one of ``item_timeout``)."""
    deadline = deadline or Deadline(task.agent.item_timeout)
    with _sandbox(f"copying {task.case.id!r}'s repository"):
        copy = sandboxes.copy_in(snapshot_of(task.case))
    early: Early | None = None
    try:
        with _sandbox("the repository sandbox"):
            workspace = sandboxes.repo_sandbox(
                copy.path,
                hidden=task.hidden,
                memory_mb=task.case.memory_mb,
                environment=task.environment,
            )
        products: frozenset[str] = frozenset()
        try:  # the agent's sandbox is closed whatever fails from here, starting the verdict's too
            early = Early(
                lambda: verdict_sandbox(sandboxes, task.case, copy, task.hidden, task.environment)
            )
            with _sandbox("the repository sandbox"):
                workspace.run(AS_REPOSITORY, task.case.timeout)
            if task.case.install:  # before any call: a broken environment is an error
                with _sandbox("the repository sandbox"):
                    installed = install(workspace, task.case.install, task.case.timeout)
                if installed.failed:
                    raise SandboxError(f"case {task.case.id!r}: {installed.why()}")
                products = installed.products
            run = Executor(workspace, task.tools, task.case.timeout, task.max_characters)
            tools = tool_executor(run, deadline)
            fetched, trajectory = converse(
                task.agent, store, ledger, request, context, tools, deadline
            )
        finally:
            workspace.close()
        with _sandbox("the verdict's sandbox"):
            found = verdict(
                task.case,
                copy,
                task.hidden,
                task.environment,
                products,
                task.files,
                sandboxes=sandboxes,
                started=early.take(),
            )
    finally:
        if early is not None:
            early.discard()
        copy.remove()
    return fetched, trajectory, found
