"""Per-run state built once from the command line and ini: versions, store, scorer, prices."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from pytest_prompteval.core.errors import PromptevalError, display
from pytest_prompteval.core.pricing import PriceTable
from pytest_prompteval.core.prompts import PromptVersion, available_versions, load_prompt
from pytest_prompteval.core.sharding import parse_shard
from pytest_prompteval.core.tables import load_table
from pytest_prompteval.providers.anthropic import AnthropicProvider
from pytest_prompteval.providers.base import Provider
from pytest_prompteval.providers.python_callable import PREFIX, CallableProvider
from pytest_prompteval.providers.store import Store
from pytest_prompteval.scoring.automatic import AutomaticScorer
from pytest_prompteval.scoring.code import CodeScorer, code_workers
from pytest_prompteval.scoring.judge import DEFAULT_JUDGE_MODEL, Judge, load_review_templates

DEFAULT_MODEL = "claude-haiku-4-5"
ALL_VERSIONS = "all"
SCORER_MODES = ("automatic", "claude", "hybrid")


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
    scorer_mode: str = "automatic"
    judge_model: str = DEFAULT_JUDGE_MODEL
    review_templates: Path | None = None
    review_template: str | None = None
    judge_rate: float = 0.2
    judge_seed: str = "0"
    judge_repeats: int = 1
    pass_ks: tuple[int, ...] = (1,)
    results_dir: Path | None = None
    concurrency: int = 8
    code_timeout: float = 3.0
    code_pass: str = "all"
    code_workers: int | None = None
    code_unsafe: bool = False
    _code: CodeScorer | None = None

    def code_scorer(self) -> CodeScorer:
        if self._code is None:
            self._code = CodeScorer(
                self.code_timeout, workers=self.code_workers, unsafe=self.code_unsafe
            )
        return self._code

    def close(self) -> None:
        self.store.stop()
        self.store.provider.close()
        if self._code is not None:
            self._code.close()

    registered_markers: set[str] = field(default_factory=set)
    case_ids: dict[str, str] = field(default_factory=dict)  # id -> "file:line"
    _judge: Judge | None = None

    def judge(self) -> Judge:
        """The judge, built on first use so that runs without one never read its rubric."""
        if self._judge is None:
            self._judge = Judge(
                self.store,
                self.prices,
                self.judge_model,
                load_review_templates(self.review_templates),
                self.review_template,
                self.judge_repeats,
            )
        return self._judge

    def never_collected(self, directory: Path) -> bool:
        """The recordings or results directory, unless cases live inside it."""
        return directory in (self.store.root, self.results_dir) and not any(
            d == directory or directory in d.parents for d in self.case_dirs
        )

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


def prompt_dir(config: pytest.Config) -> Path:
    return config.rootpath / str(config.getini("prompteval_prompts"))


def build_session(config: pytest.Config) -> PromptevalSession:
    """The run's state; prompt versions only when --prompt names them (the fixture loads its
    own on demand)."""
    option = config.option
    rootpath = config.rootpath
    case_dirs = tuple(rootpath / d for d in config.getini("prompteval_cases"))
    versions: tuple[PromptVersion, ...] = ()
    if option.prompteval_prompt:
        versions = resolve_versions(
            prompt_dir(config), [option.prompteval_prompt, *(option.prompteval_compare or [])]
        )
    scorer_mode = option.prompteval_scorer or config.getini("prompteval_scorer") or "automatic"
    if scorer_mode not in SCORER_MODES:
        raise pytest.UsageError(
            f"prompteval_scorer {scorer_mode!r}: expected one of {', '.join(SCORER_MODES)}"
        )
    if not 0.0 <= option.prompteval_judge_rate <= 1.0:
        raise pytest.UsageError("--prompteval-judge-rate: expected a number from 0 to 1")
    if option.prompteval_judge_repeats < 1 or option.prompteval_samples < 1:
        raise pytest.UsageError("--prompteval-judge-repeats and --prompteval-samples: >= 1")
    if option.prompteval_batch and getattr(option, "numprocesses", None):
        raise pytest.UsageError(
            "--prompteval-batch sends one batch per run: use it without -n (xdist)"
        )
    if option.prompteval_shard is not None:
        parse_shard(option.prompteval_shard)  # a bad value is a usage error up front
    try:
        pass_ks = tuple(sorted({int(k) for k in option.prompteval_pass_k.split(",")}))
        if not pass_ks or pass_ks[0] < 1:
            raise ValueError
    except ValueError:
        raise pytest.UsageError(
            f"--prompteval-pass-k {option.prompteval_pass_k!r}: expected whole numbers >= 1 "
            "separated by commas, like 1,10"
        ) from None
    results = option.prompteval_results or config.getini("prompteval_results")
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
        workers = code_workers(
            option.prompteval_code_workers, config.getini("prompteval_code_workers")
        )
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
        scorer_mode=scorer_mode,
        judge_model=option.prompteval_reviewer_model or DEFAULT_JUDGE_MODEL,
        review_templates=_ini_path(config, "prompteval_review_templates"),
        review_template=option.prompteval_review_template,
        judge_rate=option.prompteval_judge_rate,
        judge_seed=str(option.prompteval_seed),
        judge_repeats=option.prompteval_judge_repeats,
        pass_ks=pass_ks,
        concurrency=max(
            1, option.prompteval_concurrency or int(config.getini("prompteval_concurrency"))
        ),
        code_timeout=float(config.getini("prompteval_code_timeout")),
        code_pass=option.prompteval_code_pass or config.getini("prompteval_code_pass") or "all",
        code_workers=workers,
        code_unsafe=bool(
            option.prompteval_unsafe_sandbox or config.getini("prompteval_unsafe_sandbox")
        ),
        results_dir=None if results == "none" else rootpath / results,
    )
