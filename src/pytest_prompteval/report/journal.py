"""The run's journal under --prompteval-results: each result written as it arrives, so an
interrupted run keeps what it did, and the summaries added when the run ends."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_prompteval.core.errors import display
from pytest_prompteval.core.prompts import PromptVersion
from pytest_prompteval.core.result import ItemResult
from pytest_prompteval.core.version import __version__
from pytest_prompteval.report.outputs import Outputs
from pytest_prompteval.report.summary import VersionSummary

if TYPE_CHECKING:
    from pytest_prompteval.core.history import RunHistory

OPTION = "--prompteval-results"


class Journal:
    def __init__(
        self,
        directory: Path | None,
        versions: Callable[[], Sequence[PromptVersion]],
        run_meta: dict[str, Any],
        outputs: Outputs,
    ):
        self.directory = directory
        self.versions = versions  # read with the first result: the engine is built by then
        self.run_meta = run_meta  # the same for every version: scorer, rootdir, shard
        self.outputs = outputs
        # made with the first result, so that --collect-only, --markers and runs that select
        # nothing leave no run behind
        self.history: RunHistory | None = None
        self.written: list[Path] = []

    def add(self, result: ItemResult, data: dict[str, Any]) -> None:
        if self.directory is None or self.outputs.errors:
            return
        try:
            if self.history is None:
                from pytest_prompteval.core.history import RunHistory  # a run that writes one

                self.history = RunHistory(self.directory, self._meta())
            self.history.add(result, data)
        except OSError as exc:
            self.outputs.failed(OPTION, self.directory, exc)

    def _meta(self) -> dict[str, dict[str, Any]]:
        from pytest_prompteval.core.history import command_line

        return {
            v.version: {
                "prompt_file": display(v.path),
                "prompt_sha256": v.sha256,
                "plugin_version": __version__,
                "command_line": command_line(),
                **self.run_meta,
            }
            for v in self.versions()
        }

    def finish(self, summaries: Sequence[VersionSummary], partial: bool) -> None:
        if self.history is None:
            return
        try:
            self.written = self.history.finalize(
                {s.version: s.to_json() for s in summaries}, partial
            )
        except OSError as exc:
            self.outputs.failed(OPTION, self.history.directory, exc)
