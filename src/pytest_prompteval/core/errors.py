"""Errors that are the user's to fix: shown as one message, without an internal traceback."""

from __future__ import annotations

import os
import traceback
from pathlib import Path


def display(path: Path | str, line: int | None = None) -> str:
    """A path as the user typed it: relative to the working directory when inside it."""
    # string work, not Path.relative_to: this runs for every item's recording
    shown = str(Path(path))
    cwd = os.getcwd()
    if shown.startswith(cwd + os.sep) and os.path.isabs(shown):
        shown = shown[len(cwd) + 1 :]
    return f"{shown}:{line}" if line else shown


class PromptevalError(Exception):
    """A problem in the user's cases, prompts, recordings or provider, with its location."""

    #: The error class the summary counts it under.
    kind = "error"

    def __init__(self, message: str, path: Path | str | None = None, line: int | None = None):
        self.message = message
        self.path = path
        self.line = line
        super().__init__(str(self))

    def __str__(self) -> str:
        if self.path is None:
            return self.message
        return f"{display(self.path, self.line)}: {self.message}"


class TemplateError(PromptevalError):
    """A prompt names a placeholder the case does not fill."""

    kind = "template"


class ApiError(PromptevalError):
    """The model API answered with an error, or could not be reached (after retries)."""

    kind = "api_error"

    def __init__(
        self,
        message: str,
        *,
        error_class: str | None = None,
        status: int | None = None,
        request_id: str | None = None,
    ):
        super().__init__(message)
        #: what failed: the SDK's exception class, or ``MalformedResponseError``
        self.error_class = error_class
        #: the last attempt's HTTP status (None: no response, e.g. a reset connection)
        self.status = status
        self.request_id = request_id


class StopRun(ApiError):
    """An API error that no later call can avoid (spend limit, bad key): the session stops."""

    kind = "api_stop"


class SandboxError(PromptevalError):
    """A repository task's sandbox failed (cannot isolate here, ended, did not answer): the
    machine's fault, not the agent's."""

    kind = "sandbox"


class VerdictError(PromptevalError):
    """A repository task's verdict cannot be reached through no fault of the agent: the
    case's test patch does not apply to the snapshot's test files, or its test command
    fails on the snapshot too (the case or its environment is broken)."""

    kind = "verdict"


#: Errors of the calls, not of the prompt: reported as pytest errors and left out of every
#: score (a missing recording, a budget stop, an API failure, an invalid judge verdict, an
#: exception in the project's own provider, judge, scorer or tool code, a repository task's
#: sandbox failing or its verdict out of reach: a test patch or test command of the case).
INFRASTRUCTURE_KINDS = frozenset(
    {
        "api_error",
        "api_stop",
        "missing_recording",
        "unreadable_recording",
        "unverified_recording",
        "budget",
        "judge_invalid",
        "user_code",
        "tool",
        "sandbox",
        "verdict",
    }
)


def is_infrastructure(exc: PromptevalError) -> bool:
    return exc.kind in INFRASTRUCTURE_KINDS


class UserCodeError(PromptevalError):
    """The project's own code (a ``python:`` provider, a custom scorer) raised."""

    kind = "user_code"


class ToolCodeError(UserCodeError):
    """A Python tool raised something other than ``ToolError`` (a bug in the tool, never
    shown to the model), or returned what cannot be sent."""

    kind = "tool"


_OURS = str(Path(__file__).resolve().parents[1])


def user_code_error(
    what: str, exc: BaseException, error: type[UserCodeError] = UserCodeError
) -> UserCodeError:
    """``exc`` raised inside ``what`` (the project's code), shown with the project's frames
    only: the frames of this plugin and of the interpreter's libraries say nothing to fix."""
    frames = [
        f
        for f in traceback.extract_tb(exc.__traceback__)
        if not f.filename.startswith(_OURS) and "site-packages" not in f.filename
    ]
    lines = [f"{what} raised {type(exc).__name__}: {exc}"]
    lines += [f"  {display(f.filename, f.lineno)} in {f.name}: {f.line}" for f in frames]
    return error("\n".join(lines))
