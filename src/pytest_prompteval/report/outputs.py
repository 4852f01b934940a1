"""The files a run writes at its end (the HTML page, the Markdown), each on its own: one that
cannot be written, or fails to render, is named at the end and loses none of the others."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_prompteval.core.errors import display
from pytest_prompteval.core.paths import write_atomically
from pytest_prompteval.core.result import ItemResult
from pytest_prompteval.report import github
from pytest_prompteval.report.summary import VersionSummary

if TYPE_CHECKING:
    from pytest_prompteval.report.compare import Comparison
    from pytest_prompteval.report.markdown import MarkdownRun


def internal(exc: Exception) -> str:
    return f"internal error of prompteval, please report it: {type(exc).__name__}: {exc}"


class Outputs:
    def __init__(self) -> None:
        self.errors: list[str] = []
        self.html_written: Path | None = None
        self.markdown_written: list[str] = []

    def failed(self, option: str, path: Path, exc: OSError) -> None:
        """A file the option names cannot be written."""
        self.errors.append(f"{option} {display(path)}: {exc.strerror or exc}")

    def guard(self, option: str, write: Callable[[], None]) -> None:
        """One output: a file it cannot write (``failed``) or a figure it cannot render is
        named at the end, and the run goes on to the next output."""
        try:
            write()
        except Exception as exc:  # an output's own bug must not lose the others
            self.errors.append(f"{option}: {internal(exc)}")

    def html(
        self,
        path: Path | None,
        results: Sequence[ItemResult],
        summaries: Sequence[VersionSummary],
        comparisons: Sequence[Comparison],
    ) -> None:
        if path is None:
            return
        # its templates (Jinja2) load only for a run that writes the page
        from pytest_prompteval.report.html import render_html

        title = f"prompteval report: {', '.join(s.version for s in summaries)}"
        page = render_html(results, summaries, comparisons, title)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(path, page)
            self.html_written = path
        except OSError as exc:
            self.failed("--prompteval-html", path, exc)

    def markdown(self, path: Path | None, run: Callable[[], MarkdownRun]) -> None:
        """--prompteval-markdown, and GitHub's step summary when the run has one."""
        step_summary = github.step_summary()
        # the option may name the step summary itself: written once, appended
        targets = list(dict.fromkeys(p for p in (path, step_summary) if p is not None))
        if not targets:
            return
        from pytest_prompteval.report.markdown import render_markdown  # only when written

        text = render_markdown(run(), github.linker())
        for target in targets:
            # the step summary collects every step's output: appended, never replaced
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                if target == step_summary:
                    with target.open("a", encoding="utf-8") as f:
                        f.write(text)
                else:
                    write_atomically(target, text)
                self.markdown_written.append(display(target))
            except OSError as exc:
                self.failed("--prompteval-markdown", target, exc)
