"""What ``prompteval list`` and ``check-cases`` see: pytest's own collection, run in-process.

They run the very loaders and checks collection runs (the project's ini, its conftest hooks,
declared fields and scorers, duplicate ids across files), and report every problem found,
not only the first, without making a call.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pytest_prompteval.core.cases import Case, LoadedCaseFile
from pytest_prompteval.core.errors import PromptevalError
from pytest_prompteval.core.gitversions import SEPARATOR
from pytest_prompteval.core.prompts import PromptVersion, available_versions, load_prompt
from pytest_prompteval.core.request import Request
from pytest_prompteval.pytest.adapters import COMMAND_ONLY
from pytest_prompteval.pytest.items import CaseFile, CaseItem
from pytest_prompteval.pytest.run import RUN_KEY, build_settings


@dataclass
class Inventory:
    case_files: list[LoadedCaseFile] = field(default_factory=list)
    prompts: list[PromptVersion] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    #: with ``requests=True``: every item's (case, prompt version, sample, request)
    requests: list[tuple[Case, PromptVersion, int, Request]] = field(default_factory=list)


class _Collector:
    def __init__(self, inventory: Inventory, requests: bool = False):
        self.inventory = inventory
        self.requests = requests

    @pytest.hookimpl(tryfirst=True)
    def pytest_configure(self, config: pytest.Config) -> None:
        # Each prompt version on its own, so one bad file hides neither the others nor the
        # cases; the good ones are the run's versions.
        settings = build_settings(config)
        fields = set(settings.prompt_fields).union(
            str(n) for answer in config.hook.pytest_prompteval_prompt_fields() for n in answer or ()
        )
        for path in available_versions(settings.prompt_dir).values():
            try:
                self.inventory.prompts.append(load_prompt(path, fields))
            except PromptevalError as exc:
                self.inventory.problems.append(str(exc))
        # NAME@REF versions given (the ones CI compares against) are collected as well
        at_refs = [v for v in config.option.prompteval_compare or () if SEPARATOR in v]
        versions = [p.version for p in self.inventory.prompts] + at_refs
        config.option.prompteval_prompt = versions[0] if versions else None
        config.option.prompteval_compare = versions[1:]

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        # Without a good prompt version the cases are checked all the same.
        session.config.stash[RUN_KEY].checking = True

    @pytest.hookimpl(wrapper=True)
    def pytest_make_collect_report(
        self, collector: pytest.Collector
    ) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
        report = yield
        if report.failed:
            self.inventory.problems.append(str(report.longrepr).strip())
        elif isinstance(collector, CaseFile) and collector.loaded is not None:
            self.inventory.case_files.append(collector.loaded)
        return report

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        for item in session.items if self.requests else ():
            if isinstance(item, CaseItem):
                try:
                    request = item.work.request()
                except PromptevalError:
                    continue  # a template error: the item makes no call
                self.inventory.requests.append((item.case, item.prompt, item.spec.sample, request))


def collect(
    case_dirs: Sequence[Path],
    prompts: Path,
    requests: bool = False,
    options: Sequence[str] = (),
    files: Sequence[Path] = (),
) -> tuple[Inventory, int]:
    """Collect ``case_dirs`` with every prompt version in ``prompts``; (what was seen,
    pytest's exit code: 0, or why it stopped). ``requests``: also build every item's
    request, as the run would. ``options``: a run's options that shape its items
    (``--prompteval-samples``, ``--compare NAME@REF``). ``files``: collect these case files
    of ``case_dirs`` only."""
    inventory = Inventory()
    existing = [str(d.resolve()) for d in case_dirs if d.is_dir()]
    inventory.problems += [f"{d}: no such case directory" for d in case_dirs if not d.is_dir()]
    if not existing and not prompts.is_dir():
        return inventory, 0
    args: list[Any] = [
        "--collect-only",
        "-p",
        "no:terminal",
        *COMMAND_ONLY,
        "-p",
        "no:xdist",
        "-o",
        "addopts=",
        "-o",
        "prompteval_exit=tests",  # a listing decides nothing
        "-o",
        "prompteval_cases=" + "\n".join(existing),
        "-o",
        f"prompteval_prompts={prompts.resolve()}",
        *options,
        # prompts alone: checked, nothing collected
        *([str(f.resolve()) for f in files] or existing or [str(prompts.resolve())]),
    ]
    output = io.StringIO()
    with contextlib.redirect_stderr(output):  # where pytest reports a usage error
        code = pytest.main(args, plugins=[_Collector(inventory, requests)])
    if code in (pytest.ExitCode.USAGE_ERROR, pytest.ExitCode.INTERNAL_ERROR):
        said = output.getvalue().strip()
        usage = [
            line.removeprefix("ERROR: ") for line in said.splitlines() if line.startswith("ERROR: ")
        ]
        inventory.problems += usage or [f"pytest stopped (exit code {int(code)}): {said}"]
    return inventory, int(code)
