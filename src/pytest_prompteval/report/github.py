"""What GitHub Actions' environment says to the report: the step summary to append to, and
the commit its links point at."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest_prompteval.report.markdown import Linker


def step_summary(environ: Mapping[str, str] = os.environ) -> Path | None:
    """``GITHUB_STEP_SUMMARY``: the job's summary file, which every step appends to."""
    path = environ.get("GITHUB_STEP_SUMMARY")
    return Path(path) if path else None


def linker(environ: Mapping[str, str] = os.environ) -> Linker:
    """Links to the case files at the run's commit on GitHub, else relative links."""
    # the Markdown's module only for a run that writes Markdown
    from pytest_prompteval.report.markdown import github_linker, relative_link

    repository, sha = environ.get("GITHUB_REPOSITORY"), environ.get("GITHUB_SHA")
    if not repository or not sha:
        return relative_link
    return github_linker(environ.get("GITHUB_SERVER_URL", "https://github.com"), repository, sha)
