"""``prompteval envs build|list|prune``: the repository environments of a project.

``build`` builds every environment the project's repository cases need (what a run would
build at collection), so that CI can build them in a step of their own and cache the
folder; ``list`` shows the cache's environments, marking those the project uses; ``prune``
removes the others (``--all``: every one).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pytest_prompteval.core.cases import Case, load_case_file
from pytest_prompteval.core.envspec import EnvironmentSpec
from pytest_prompteval.core.errors import PromptevalError
from pytest_prompteval.core.paths import read_bounded
from pytest_prompteval.core.repocases import is_repo_case, parse_repo_case
from pytest_prompteval.engine.settings import Settings
from pytest_prompteval.sandbox.environments import (
    Built,
    Environment,
    cached,
    default_cache,
    ensure,
    key_of,
    prune,
)


@dataclass
class ProjectEnvironments:
    """The environment specs of a project's repository cases (one per distinct spec),
    and every problem found reading them, one line each."""

    specs: dict[str, EnvironmentSpec | None] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def cache_of(settings: Settings) -> Path:
    return settings.environments_cache or default_cache()


def repo_cases(settings: Settings, case_dirs: list[Path]) -> tuple[list[Case], list[str]]:
    """The repository cases of the case files under ``case_dirs``."""
    cases, problems = [], []
    for folder in case_dirs:
        for path in sorted(folder.rglob("*.y*ml")) if folder.is_dir() else ():
            try:
                if b"repo" not in read_bounded(path, root=settings.rootpath):
                    continue  # no repository case: not parsed (a suite of 10,000 cases)
                loaded = load_case_file(path, settings.case_fields, settings.rootpath)
            except PromptevalError as exc:
                problems.append(str(exc))
                continue
            cases += [c for c in loaded.cases if is_repo_case(c)]
    return cases, problems


def project_environments(settings: Settings, case_dirs: list[Path]) -> ProjectEnvironments:
    cases, problems = repo_cases(settings, case_dirs)
    found = ProjectEnvironments(problems=problems)
    for case in cases:
        try:
            spec = parse_repo_case(case).environment
            key, _ = key_of(spec, settings.rootpath)
        except PromptevalError as exc:
            found.problems.append(str(exc))
            continue
        found.specs.setdefault(key, spec)
    return found


def environments_of(
    settings: Settings, progress: Callable[[str], None]
) -> Callable[[EnvironmentSpec | None], Environment]:
    """A repository case's environment, built now unless the cache holds it."""

    def environment(spec: EnvironmentSpec | None) -> Environment:
        return ensure(spec, cache_of(settings), settings.wheelhouse, progress, settings.rootpath)

    return environment


def build_all(
    settings: Settings, specs: dict[str, EnvironmentSpec | None], progress: Callable[[str], None]
) -> tuple[list[Environment], list[str]]:
    built, problems = [], []
    environment = environments_of(settings, progress)
    for spec in specs.values():
        try:
            built.append(environment(spec))
        except PromptevalError as exc:
            problems.append(str(exc))
    return built, problems


def listing(settings: Settings, used: set[str]) -> list[tuple[Built, bool]]:
    """The cache's environments, each with whether the project uses it."""
    return [(b, b.key in used) for b in cached(cache_of(settings))]


def prune_unused(settings: Settings, used: set[str]) -> list[Path]:
    return prune(cache_of(settings), used)
