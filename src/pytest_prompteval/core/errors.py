"""Errors that are the user's to fix: shown as one message, without an internal traceback."""

from __future__ import annotations

import os
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
