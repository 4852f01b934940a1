"""An agent's conversation walked through the answers there are, without the model: the
estimate prices the steps past them, a message batch sends the next step of each
conversation in its next round."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pytest_prompteval.core.cases import Case
from pytest_prompteval.core.content import RanTool, ToolOutcome
from pytest_prompteval.core.request import Request
from pytest_prompteval.core.response import Response
from pytest_prompteval.interaction.agent import AgentSpec, conversation, executor, take_held
from pytest_prompteval.interaction.deadline import Deadline
from pytest_prompteval.interaction.toolkinds import UNKEYED, ReplayPolicy
from pytest_prompteval.providers.ledger import Purpose

#: the answer there is (a recording) to a request made for a purpose ("generation" and
#: "agent": the agent's; "user": a simulated user's), or None
Known = Callable[[Request, Purpose], Response | None]
#: keeps a step's answer with the Python tools' outcomes its calls ran
Keep = Callable[[Request, Response], None]


class _NotHeld(Exception):
    """A recorded tool's outcome the answer does not hold, and no tool is to run: the
    walk ends at that step."""


class _Unanswered(Exception):
    """A simulated user's call no answer covers."""

    def __init__(self, request: Request):
        self.request = request


@dataclass
class Walked:
    #: the agent's steps, and the simulated user's calls, the answers there are cover
    steps: list[Response] = field(default_factory=list)
    user: list[Response] = field(default_factory=list)
    #: the first request none answers, and whose it is; None: the conversation ends
    missing: Request | None = None
    purpose: Purpose = "agent"


def walk_recorded(
    agent: AgentSpec,
    case: Case,
    request: Request,
    known: Known,
    keep: Keep | None = None,
    deadline: Deadline | None = None,
) -> Walked:
    """The steps the answers there are cover, and the first request none answers, each
    call answered as its tool's kind replays: scripted results as in a run; a recorded
    tool's outcome the one its answer holds, else (given ``keep``) the tool runs and its
    outcome is kept with the answer, so the item does not run it again; a re-run tool runs
    nothing here, its outcome what the recording's key holds."""
    scripted = executor(agent, case)
    held: list[RanTool] = []
    ran: list[RanTool] = []

    def execute(name: str, arguments: Mapping[str, Any]) -> ToolOutcome:
        kind = agent.kind(name)
        if kind.policy is ReplayPolicy.RERUN:
            return UNKEYED
        if not kind.recorded_here:
            return scripted(name, arguments)
        given, found = take_held(held, name, arguments)
        if found is not None:
            return found
        if keep is None:
            raise _NotHeld
        outcome = scripted(name, arguments)
        ran.append(RanTool(name, given, outcome))
        return outcome

    walked = Walked()

    def user(asked: Request) -> str:
        answer = known(asked, "user")
        if answer is None:
            raise _Unanswered(asked)
        walked.user.append(answer)
        return answer.text

    walk = conversation(agent, request, execute, user, deadline)
    asked = next(walk)
    while True:
        response = known(asked, "agent")
        if response is None:
            walked.missing = asked
            return walked
        walked.steps.append(response)
        held[:], ran[:] = response.tools_ran, []
        said = asked
        try:
            asked = walk.send(response)
        except StopIteration:
            return walked
        except _NotHeld:
            walked.missing = asked
            return walked
        except _Unanswered as exc:
            walked.missing, walked.purpose = exc.request, "user"
            return walked
        finally:
            if ran and keep is not None:
                keep(said, dataclasses.replace(response, tools_ran=tuple(ran)))
