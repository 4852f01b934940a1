"""Per-run state built once from the command line and ini: versions, store, scorer, prices."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from pytest_prompteval.errors import PromptevalError, display
from pytest_prompteval.pricing import PriceTable
from pytest_prompteval.prompts import PromptVersion, available_versions, load_prompt
from pytest_prompteval.providers.anthropic import AnthropicProvider
from pytest_prompteval.providers.base import Provider
from pytest_prompteval.providers.python_callable import PREFIX, CallableProvider
from pytest_prompteval.providers.store import Store
from pytest_prompteval.scoring.automatic import AutomaticScorer
from pytest_prompteval.tables import load_table

DEFAULT_MODEL = "claude-haiku-4-5"
ALL_VERSIONS = "all"


@dataclass
class PromptevalSession:
    rootpath: Path
    case_dirs: tuple[Path, ...]
    versions: tuple[PromptVersion, ...]
    store: Store
    scorer: AutomaticScorer
    prices: PriceTable
    threshold: float
    samples: int
    default_model: str
    model_override: str | None
    registered_markers: set[str] = field(default_factory=set)
    case_ids: dict[str, str] = field(default_factory=dict)  # id -> "file:line"

    def owns(self, path: Path) -> bool:
        return path.suffix in (".yaml", ".yml") and any(
            d == path.parent or d in path.parents for d in self.case_dirs
        )


def _ini_path(config: pytest.Config, name: str) -> Path | None:
    value = config.getini(name)
    return config.rootpath / value if value else None


def resolve_versions(prompt_dir: Path, names: list[str]) -> tuple[PromptVersion, ...]:
    available = available_versions(prompt_dir)
    if ALL_VERSIONS in names:
        names = list(available)
    unknown = [n for n in names if n not in available]
    if unknown or not names:
        listing = ", ".join(available) or f"none: no *.yaml files in {prompt_dir}"
        raise pytest.UsageError(
            f"unknown prompt version {', '.join(map(repr, unknown))} (prompt directory "
            f"{display(prompt_dir)}); available: {listing}"
        )
    try:
        return tuple(load_prompt(available[n]) for n in dict.fromkeys(names))
    except PromptevalError as exc:
        raise pytest.UsageError(str(exc)) from None


def make_provider(spec: str) -> Provider:
    if spec == "anthropic":
        return AnthropicProvider()
    if spec.startswith(PREFIX):
        return CallableProvider(spec)
    raise PromptevalError(f"unknown provider {spec!r}: expected 'anthropic' or {PREFIX}module:fn")


def build_session(config: pytest.Config) -> PromptevalSession:
    option = config.option
    rootpath = config.rootpath
    case_dirs = tuple(rootpath / d for d in config.getini("prompteval_cases"))
    versions = resolve_versions(
        rootpath / config.getini("prompteval_prompts"),
        [option.prompteval_prompt, *(option.prompteval_compare or [])],
    )
    try:
        provider = make_provider(option.prompteval_provider)
        mode = (
            option.prompteval_record
            or os.environ.get("PROMPTEVAL_RECORD")
            or ("new" if provider.live else "none")
        )
        store = Store(
            rootpath / config.getini("prompteval_recordings"),
            mode,
            provider,
            note=option.prompteval_record_note,
        )
        scorer = AutomaticScorer(load_table("scoring", _ini_path(config, "prompteval_scoring")))
        prices = PriceTable(load_table("prices", _ini_path(config, "prompteval_prices")))
        threshold = float(config.getini("prompteval_threshold"))
    except (PromptevalError, ValueError) as exc:
        raise pytest.UsageError(str(exc)) from None
    return PromptevalSession(
        rootpath=rootpath,
        case_dirs=case_dirs,
        versions=versions,
        store=store,
        scorer=scorer,
        prices=prices,
        threshold=threshold,
        samples=option.prompteval_samples,
        default_model=config.getini("prompteval_model") or DEFAULT_MODEL,
        model_override=option.prompteval_model,
    )
