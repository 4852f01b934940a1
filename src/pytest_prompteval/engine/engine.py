"""The engine: every service an evaluation needs, built and wired once from Settings.

Items, the ``prompteval`` fixture, batches and ``prompteval improve`` all evaluate through one
Engine, so they share the budget, the rate gate, the recordings and the judge: no path can
silently lack one of them.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_prompteval.core.cases import Case
from pytest_prompteval.core.envspec import EnvironmentSpec
from pytest_prompteval.core.errors import PromptevalError, display
from pytest_prompteval.core.gitversions import load_version_at, repository, split_version
from pytest_prompteval.core.paths import check_inside
from pytest_prompteval.core.pricing import PriceTable
from pytest_prompteval.core.prompts import PromptVersion, available_versions, load_prompt
from pytest_prompteval.core.repocases import RepoCase
from pytest_prompteval.core.schema import Declared, suggestion
from pytest_prompteval.core.tables import load_table
from pytest_prompteval.core.templates import placeholders
from pytest_prompteval.core.yamlload import line_of
from pytest_prompteval.engine.settings import ALL_VERSIONS, SettingError, Settings
from pytest_prompteval.interaction.strategies import Strategy, parse_strategy
from pytest_prompteval.interaction.tools import PythonTool, ToolFunction, python_tools
from pytest_prompteval.providers.anthropic import AnthropicProvider, warn_deprecated
from pytest_prompteval.providers.base import Provider
from pytest_prompteval.providers.budget import Budget
from pytest_prompteval.providers.platforms import BedrockProvider, VertexProvider
from pytest_prompteval.providers.python_callable import PREFIX, CallableProvider
from pytest_prompteval.providers.ratelimit import RateGate
from pytest_prompteval.providers.store import Store
from pytest_prompteval.scoring.assertions import Assertion, parse_assertions
from pytest_prompteval.scoring.automatic import AutomaticScorer
from pytest_prompteval.scoring.judge import Judge, load_review_templates
from pytest_prompteval.scoring.registry import entry_point_scorers

if TYPE_CHECKING:  # each built only for a run that uses it (a code or repository case,
    # trusted recordings)
    from pytest_prompteval.providers.trusted import TrustedRecordings
    from pytest_prompteval.sandbox.environments import Environment
    from pytest_prompteval.sandbox.provider import SandboxProvider
    from pytest_prompteval.scoring.code.runner import CodeRunner

ScorerFunction = Callable[..., Any]


#: the providers named by a word, each Claude through one of the SDK's clients
PLATFORMS = {"anthropic": AnthropicProvider, "bedrock": BedrockProvider, "vertex": VertexProvider}


def make_provider(
    spec: str,
    rootpath: Path,
    option: str = "--prompteval-provider",
    gate: RateGate | None = None,
) -> Provider:
    platform = PLATFORMS.get(spec)
    if platform is not None:
        return platform(gate=gate)
    if spec.startswith(PREFIX):
        # the project's own modules import as its tests do: from the rootdir
        if str(rootpath) not in sys.path:
            sys.path.insert(0, str(rootpath))
        return CallableProvider(spec)
    raise SettingError(
        f"{option} {spec!r}: expected {', '.join(map(repr, PLATFORMS))} or "
        f"{PREFIX}package.module:function{suggestion(spec, PLATFORMS)}"
    )


def resolve_versions(
    prompt_dir: Path, names: list[str], fields: Collection[str], root: Path
) -> tuple[PromptVersion, ...]:
    available = available_versions(prompt_dir)
    if ALL_VERSIONS in names:
        names = list(available)
    unknown = [n for n in names if n not in available and split_version(n)[1] is None]
    if unknown or not names:
        listing = ", ".join(available) or f"none: no *.yaml files in {prompt_dir}"
        raise SettingError(
            f"unknown prompt version {', '.join(map(repr, unknown))} (prompt directory "
            f"{display(prompt_dir)}); available: {listing}"
        )
    for name in names:
        path = available.get(name)
        if path is not None and os.path.realpath(path) != str(path):
            check_inside(root, path)  # a link out of the project is not read
    return tuple(
        load_prompt(available[n], fields)
        if n in available
        else load_version_at(root, prompt_dir, n, fields)
        for n in dict.fromkeys(names)
    )


def _trusted(root: Path, folder: Path, ref: str) -> TrustedRecordings:
    from pytest_prompteval.providers.trusted import TrustedRecordings

    try:
        return TrustedRecordings(repository(root), folder, ref)
    except PromptevalError as exc:
        raise SettingError(f"--prompteval-trusted-recordings: {exc.message}") from None


class Engine:
    """``run_dir``: a directory every process of the run shares (budget ledger, rate-limit
    pauses); None for a process on its own, such as a ``prompteval`` command."""

    def __init__(
        self,
        settings: Settings,
        run_dir: Path | None = None,
        scorers: Callable[[], Mapping[str, ScorerFunction]] | None = None,
        declared: Declared | None = None,
        tools: Callable[[], Mapping[str, ToolFunction]] | None = None,
    ):
        self.settings = settings
        #: fields the project declares for its cases and prompts (ini keys and hooks)
        self.declared = declared or Declared(
            frozenset(settings.case_fields), frozenset(settings.prompt_fields)
        )
        self.versions: tuple[PromptVersion, ...] = (
            resolve_versions(
                settings.prompt_dir,
                list(settings.versions),
                self.declared.prompt_fields,
                settings.rootpath,
            )
            if settings.versions
            else ()
        )
        # a case field a prompt names as {placeholder} is known by that use
        used = {
            name
            for v in self.versions
            for template in (v.system_prompt, v.user_prompt, v.assistant_prefill)
            for name in placeholders(template or "")
        }
        self.declared = dataclasses.replace(
            self.declared, case_fields=self.declared.case_fields | used
        )
        self.prices = PriceTable(
            load_table("prices", settings.prices, allow_lower_prices=settings.allow_lower_prices)
        )
        self.scorer = AutomaticScorer(load_table("scoring", settings.scoring))
        self.review_templates = load_review_templates(settings.review_templates)
        if (
            settings.review_template is not None
            and settings.review_template not in self.review_templates
        ):
            raise SettingError(
                f"--prompteval-review-template {settings.review_template!r}: unknown; known: "
                f"{', '.join(self.review_templates)}"
            )
        self._scorers = scorers
        self._tools = tools
        self._found_tools: dict[str, PythonTool] | None = None
        self._found_scorers: Mapping[str, ScorerFunction] | None = None
        self._prompt_assertions: dict[str, tuple[tuple[Assertion, ...], Strategy | None]] = {}
        self.budget: Budget | None = None
        self.gate: RateGate | None = None
        if run_dir is not None:
            if settings.max_cost is not None:
                self.budget = Budget(settings.max_cost, run_dir / "budget", self.prices)
            self.gate = RateGate(settings.concurrency, run_dir / "ratelimit.json")
        self.trusted = (
            None
            if settings.trusted_recordings is None
            else _trusted(settings.rootpath, settings.recordings_dir, settings.trusted_recordings)
        )
        self.store = self._store(settings.provider, "--prompteval-provider")
        if settings.judge_provider == settings.provider:
            self.judge_store = self.store
        else:
            self.judge_store = self._store(settings.judge_provider, "--prompteval-judge-provider")
        self._judge: Judge | None = None
        self._code: CodeRunner | None = None
        self._sandboxes: SandboxProvider | None = None
        self._prompts = {v.version: v for v in self.versions}
        self._models_warned: set[str] = set()  # deprecated models reported so far
        self._warn_deprecated(self.versions, settings.model_override)
        self._environments: dict[EnvironmentSpec | None, Environment] = {}
        #: where a build says it started (the terminal); None: silent
        self.progress: Callable[[str], None] | None = None

    def _store(self, spec: str, option: str) -> Store:
        provider = make_provider(spec, self.settings.rootpath, option, self.gate)
        store = Store(
            self.settings.recordings_dir,
            self.settings.record_mode(lambda: provider.live),
            provider,
            note=self.settings.record_note,
        )
        store.budget = self.budget
        store.trusted = self.trusted
        store.strict = self.settings.exit == "gates"
        return store

    def warm(self) -> None:
        """Import the SDK and build its client now, in a thread, so that it overlaps
        collection (a replay-only run never needs it)."""
        for store in (self.store, self.judge_store):
            if store.mode != "none":
                store.provider.warm()

    def prompt(self, version: str) -> PromptVersion:
        """A prompt version by name, loaded on first use (the fixture names its own)."""
        if version not in self._prompts:
            (self._prompts[version],) = resolve_versions(
                self.settings.prompt_dir,
                [version],
                self.declared.prompt_fields,
                self.settings.rootpath,
            )
            self._warn_deprecated([self._prompts[version]])
        return self._prompts[version]

    def _warn_deprecated(
        self, versions: Collection[PromptVersion], override: str | None = None
    ) -> None:
        if self.store.provider.capabilities.api_model_ids:
            chosen = {override: "--prompteval-model"} if override else None
            warn_deprecated(versions, self._models_warned, chosen)

    def scorers(self) -> Mapping[str, ScorerFunction]:
        """Custom scorers by name, found once: entry points, then the run's plugins."""
        if self._found_scorers is None:
            self._found_scorers = {
                **entry_point_scorers(),
                **(self._scorers() if self._scorers is not None else {}),
            }
        return self._found_scorers

    def tools(self) -> Mapping[str, PythonTool]:
        """The project's Python tools by name, found once among the run's plugins."""
        if self._found_tools is None:
            self._found_tools = python_tools(self._tools() if self._tools is not None else {})
        return self._found_tools

    def prompt_assertions(self, prompt: PromptVersion) -> tuple[Assertion, ...]:
        """A prompt version's own ``assert:`` entries, which apply to every case."""
        return self._prompt_parts(prompt)[0]

    def prompt_strategy(self, prompt: PromptVersion) -> Strategy | None:
        """A prompt version's ``strategy:`` for code cases."""
        return self._prompt_parts(prompt)[1]

    def _prompt_parts(self, prompt: PromptVersion) -> tuple[tuple[Assertion, ...], Strategy | None]:
        """A prompt version's assertions and strategy, checked once (a bad ``strategy:`` is
        reported for every case, as an error naming the prompt file)."""
        found = self._prompt_assertions.get(prompt.version)
        if found is None:
            strategy = parse_strategy(prompt)
            assertions = tuple(
                parse_assertions(
                    prompt.raw.get("assert"),
                    (prompt.path, prompt.line_of("assert")),
                    f"prompt {prompt.version!r}",
                    self.scorers(),
                )
            )
            found = self._prompt_assertions[prompt.version] = (assertions, strategy)
        return found

    def judge(self) -> Judge:
        """The judge, built on first use so that runs without one never need it."""
        if self._judge is None:
            s = self.settings
            self._judge = Judge(
                self.judge_store,
                s.judge_model,
                self.review_templates,
                s.review_template,
                s.judge_repeats,
            )
        return self._judge

    @property
    def sandboxes(self) -> SandboxProvider:
        """Where generated code and repositories' commands run: made on first use, so that a
        run with neither loads none of the sandbox's modules."""
        if self._sandboxes is None:
            from pytest_prompteval.sandbox.provider import NamespaceSandboxes

            s = self.settings
            self._sandboxes = NamespaceSandboxes(s.unsafe_sandbox, s.code_workers)
        return self._sandboxes

    @sandboxes.setter
    def sandboxes(self, sandboxes: SandboxProvider) -> None:
        self._sandboxes = sandboxes

    def environment(self, spec: EnvironmentSpec | None) -> Environment:
        """A repository case's environment, built now unless cached (before any call)."""
        from pytest_prompteval.sandbox.environments import default_cache, ensure

        found = self._environments.get(spec)
        if found is None:
            cache = self.settings.environments_cache or default_cache()
            wheels, root = self.settings.wheelhouse, self.settings.rootpath
            found = ensure(spec, cache, wheels, self.progress, root)
            self._environments[spec] = found
        return found

    def check_test_ids(self, case: Case, repo: RepoCase, environment: Environment) -> None:
        """Every test the case lists exists in its repository (test patch applied), or one
        line per missing one naming its entry; the ids are collected once per snapshot,
        environment and test patch."""
        from pytest_prompteval.sandbox.environments import default_cache
        from pytest_prompteval.scoring.repoids import Collected, is_pytest, unknown_ids
        from pytest_prompteval.scoring.testrun import DEFAULT_TEST_COMMAND

        command = repo.test_command or DEFAULT_TEST_COMMAND
        if not is_pytest(command) or not (repo.fail_to_pass or repo.pass_to_pass):
            return
        cache = self.settings.environments_cache or default_cache()
        hidden = () if case.root is None else (case.root,)
        try:
            collected = Collected(cache, self.sandboxes).ids(repo, environment, command, hidden)
        except PromptevalError as exc:
            where = line_of(case.raw, "environment" if repo.environment else "repo")
            raise PromptevalError(f"case {case.id!r}: {exc.message}", case.path, where) from None
        problems = unknown_ids(repo, case.raw, case.path, collected)
        if problems:
            raise PromptevalError("\n".join(str(p) for p in problems))

    def code_runner(self) -> CodeRunner:
        if self._code is None:
            from pytest_prompteval.scoring.code.runner import CodeRunner

            s = self.settings
            # no sample sees the project, its cases, recordings or results
            hidden = [s.rootpath, *s.case_dirs, s.prompt_dir, s.recordings_dir]
            hidden += [s.results_dir] if s.results_dir else []
            self._code = CodeRunner(s.code_timeout, sandboxes=self.sandboxes, hidden=hidden)
        return self._code

    def stop(self) -> None:
        """No new calls, no new code samples; what is in flight finishes."""
        self.store.stop()
        self.judge_store.stop()
        if self._code is not None:
            self._code.stop()

    def close(self) -> None:
        self.stop()
        for store in {id(s): s for s in (self.store, self.judge_store)}.values():
            store.provider.close()
        if self._code is not None:
            self._code.close()


def owned_directories(settings: Settings) -> tuple[Path, ...]:
    """Directories that hold thousands of files and never a case, unless cases live there."""
    skip = [settings.recordings_dir]
    if settings.results_dir is not None:
        skip.append(settings.results_dir)
    return tuple(d for d in skip if not any(c == d or d in c.parents for c in settings.case_dirs))
