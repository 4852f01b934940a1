from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

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


@dataclass(frozen=True)
class Capabilities:
    """What a provider offers beyond answering a request: each use asks here, never the
    provider's class, so a provider built on another inherits none it lacks."""

    #: Message Batches through its SDK ``client()`` (``--prompteval-batch``, half price)
    batches: bool = False
    #: the token-counting endpoint through its SDK ``client()`` (``--prompteval-estimate``)
    token_counting: bool = False
    #: its model ids are the Anthropic API's, as the SDK's list of deprecated models has them
    api_model_ids: bool = False


class Provider(Protocol):
    #: Written into every recording the provider makes, so a reader knows where it came from.
    @property
    def label(self) -> str: ...

    #: Where it answers, for the lines that say what it lacks ("Amazon Bedrock").
    @property
    def name(self) -> str: ...

    @property
    def capabilities(self) -> Capabilities: ...

    #: Whether the provider can answer now (an API provider without a key cannot).
    @property
    def live(self) -> bool: ...

    #: Why it cannot answer now, naming what to set (None when it can): the line a run that
    #: is to record stops on instead of its first call, and a missing recording's hint.
    @property
    def unavailable(self) -> str | None: ...

    def complete(self, request: Request, context: CallContext) -> Response: ...

    def warm(self) -> None:
        """Get ready for the first call in the background (while pytest collects)."""

    def close(self) -> None:
        """Release connections; called once at the end of the session."""


class SdkProvider(Provider, Protocol):
    """A provider whose capabilities go through an ``anthropic`` SDK client."""

    def client(self) -> Any: ...

    def secrets(self) -> tuple[str | None, ...]:
        """Credentials the client found beyond the environment's (``secrets.scrub``)."""
