from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypeAlias

if TYPE_CHECKING:
    from pytest_prompteval.core.cases import Case
    from pytest_prompteval.core.prompts import PromptVersion
    from pytest_prompteval.core.request import Request
    from pytest_prompteval.core.response import Response


@dataclass(frozen=True)
class CallContext:
    """Why a request is sent: for providers that run a project's own code path."""

    case: Case
    prompt: PromptVersion
    sample: int
    #: written into the recording's label (one of ``labels.PURPOSES``): "generation" for
    #: the prompt's own request (a strategy's later ones and an agent's steps too, which the
    #: ledger counts apart), "judge" for a verdict on an answer, "user" for a simulated
    #: user's turn, "improve" for `prompteval improve`'s answer.
    purpose: str = "generation"


#: A call to make: the request, and why it is sent.
Call: TypeAlias = "tuple[Request, CallContext]"


class Provider(Protocol):
    #: Written into every recording the provider makes, so a reader knows where it came from.
    @property
    def label(self) -> str: ...

    #: Whether the provider can answer now (an API provider without a key cannot).
    @property
    def live(self) -> bool: ...

    def complete(self, request: Request, context: CallContext) -> Response: ...

    def close(self) -> None:
        """Release connections; called once at the end of the session."""
