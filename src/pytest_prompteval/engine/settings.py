"""Settings: one frozen value built once from command-line options, environment and ini keys.

One table (``SETTINGS``) declares every setting: its option, ini key, environment variable,
default and parser. Precedence, for every setting alike: command line, then environment, then
ini (pytest.ini, pyproject.toml, tox.ini, setup.cfg, as pytest loads them), then the default.
Every value is validated here, so a bad one is a usage error naming the option or ini key,
the value and what is allowed, before anything is paid for.

A pull request can change the ini files (and their ``addopts``) but not the command line a CI
job types or its environment. So a setting that weakens safety (``from_files=False``) is
refused from a file, and a path from a file must resolve inside the rootdir (``path=True``);
the command line, ``-o`` and ``PYTEST_ADDOPTS`` may set either.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from pytest_prompteval.core.errors import PromptevalError, display
from pytest_prompteval.core.minpass import MinPass, parse_min_pass
from pytest_prompteval.core.paths import check_dir, resolve_inside
from pytest_prompteval.core.sharding import parse_shard
from pytest_prompteval.interaction.agent import DEFAULT_MAX_TOOL_CALLS, MAX_TOOL_CALLS_LIMIT
from pytest_prompteval.interaction.deadline import DEFAULT_ITEM_TIMEOUT, MAX_ITEM_TIMEOUT
from pytest_prompteval.providers.ratelimit import DEFAULT_CONCURRENCY
from pytest_prompteval.providers.store import MODES as RECORD_MODES
from pytest_prompteval.report.gates import EXIT_MODES, GATE_FAILED, GATE_METRICS, NO_VERDICT
from pytest_prompteval.scoring.judge import DEFAULT_JUDGE_MODEL

DEFAULT_MODEL = "claude-haiku-4-5"
# Upper bounds: a value past them is a mistake or an attempt to exhaust the machine.
MAX_CONCURRENCY = 256
MAX_CODE_WORKERS = 128
MAX_CODE_TIMEOUT = 300.0
SCORER_MODES = ("automatic", "claude", "hybrid")
CODE_PASS_MODES = ("all", "threshold")
ALL_VERSIONS = "all"


class SettingError(PromptevalError):
    """A bad option, ini or environment value: a usage error, before any call."""

    kind = "usage"


def _number(low: float | None = None, high: float | None = None, *, above: bool = False):  # type: ignore[no-untyped-def]
    """A float parser with bounds; the message says what is allowed."""

    if low is not None and high is not None:
        allowed = (
            f"a number > {low:g} and <= {high:g}" if above else f"a number from {low:g} to {high:g}"
        )
    elif above:
        allowed = f"a number > {low:g}"
    elif low is not None:
        allowed = f"a number >= {low:g}"
    else:
        allowed = "a number"

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise ValueError(allowed) from None
        if (
            not math.isfinite(value)
            or (low is not None and (value <= low if above else value < low))
            or (high is not None and value > high)
        ):
            raise ValueError(allowed)
        return value

    return parse


def _whole(low: int, high: int | None = None) -> Callable[[str], int]:
    allowed = f"a whole number from {low} to {high}" if high else f"a whole number >= {low}"

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise ValueError(allowed) from None
        if value < low or (high is not None and value > high):
            raise ValueError(allowed)
        return value

    return parse


def _choice(choices: tuple[str, ...]) -> Callable[[str], str]:
    def parse(text: str) -> str:
        if text not in choices:
            raise ValueError(f"one of {', '.join(choices)}")
        return text

    return parse


def _text(text: str) -> str:
    return text


def _pass_ks(text: str) -> tuple[int, ...]:
    try:
        ks = tuple(sorted({int(k) for k in text.split(",")}))
    except ValueError:
        ks = ()
    if not ks or ks[0] < 1:
        raise ValueError("whole numbers >= 1 separated by commas, like 1,10")
    return ks


def _shard(text: str) -> tuple[int, int]:
    return parse_shard(text)


def _flag(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off", ""):
        return False
    raise ValueError("true or false")


@dataclass(frozen=True)
class Setting:
    name: str
    help: str
    default: Any = None
    parse: Callable[[str], Any] = _text
    option: str | None = None
    aliases: tuple[str, ...] = ()
    ini: str | None = None
    ini_type: str | None = None  # pytest's ini types: "linelist", "bool"
    env: str | None = None
    metavar: str | None = None
    choices: tuple[str, ...] | None = None
    flag: bool = False  # a store_true option
    repeat: bool = False  # an append option
    #: False: it weakens safety, so a value other than the default is taken only from the
    #: command line or environment, never from a file a pull request can change
    from_files: bool = True
    #: a file or folder: from a file, it must resolve inside the rootdir
    path: bool = False


SETTINGS: tuple[Setting, ...] = (
    Setting("prompt", "collect prompt cases and run them with this prompt version ('all' for "
            "every one)", option="--prompt", metavar="VERSION"),
    Setting("compare", "also run every case with this prompt version (repeatable)",
            default=(), option="--compare", metavar="VERSION", repeat=True),
    Setting("model_override", "send every request to this model, whatever the prompt versions "
            "say", option="--prompteval-model", metavar="MODEL"),
    Setting("default_model", "model for prompt versions that name none", default=DEFAULT_MODEL,
            ini="prompteval_model"),
    Setting("record", "none: replay only; new: record what is missing; all: record everything "
            "again (default: new when the provider can answer: ANTHROPIC_API_KEY is set, a "
            "platform's region and credentials are, or a python: provider is named; else none)",
            parse=_choice(RECORD_MODES), option="--prompteval-record", env="PROMPTEVAL_RECORD",
            choices=RECORD_MODES),
    Setting("provider", "'anthropic' (default), 'bedrock' (Amazon Bedrock), 'vertex' (Google "
            "Vertex AI), or python:package.module:function to call your own code",
            default="anthropic", option="--prompteval-provider", metavar="SPEC",
            ini="prompteval_provider"),
    Setting("judge_provider", "the judge's provider: 'anthropic' (default), 'bedrock', "
            "'vertex' or python:package.module:function, independent of --prompteval-provider",
            default="anthropic", option="--prompteval-judge-provider", metavar="SPEC",
            ini="prompteval_judge_provider"),
    Setting("samples", "independent samples per case and version, item ids [version-s0], "
            "[version-s1], ... (a case's samples: overrides)", default=1, parse=_whole(1),
            option="--prompteval-samples", metavar="N"),
    Setting("record_note", "a note written into every recording made in this run",
            option="--prompteval-record-note", metavar="TEXT"),
    Setting("scorer", "automatic (default: on cases with expected_topics or no assert:, the "
            "rest scored by their assertions; named here, on every case), claude (the judge "
            "scores every item) or hybrid (automatic on every item, the judge on a sample)",
            default="automatic",
            parse=_choice(SCORER_MODES), option="--prompteval-scorer", ini="prompteval_scorer",
            choices=SCORER_MODES),
    Setting("judge_model", f"the judge's model (default {DEFAULT_JUDGE_MODEL})",
            default=DEFAULT_JUDGE_MODEL, option="--prompteval-reviewer-model",
            aliases=("--reviewer-model",), metavar="MODEL", ini="prompteval_reviewer_model"),
    Setting("review_template", "the review template (rubric) to judge with; a case's "
            "review_template: wins", option="--prompteval-review-template", metavar="NAME"),
    Setting("review_templates", "YAML file of review templates for the judge",
            ini="prompteval_review_templates"),
    Setting("judge_rate", "hybrid: share of cases the judge sees (default 0.2)", default=0.2,
            parse=_number(0, 1), option="--prompteval-judge-rate", metavar="RATE"),
    Setting("seed", "seed of the hybrid sample (the same cases for every prompt version)",
            default="0", option="--prompteval-seed", metavar="SEED"),
    Setting("judge_repeats", "judge each response N times, to see the judge's own spread",
            default=1, parse=_whole(1), option="--prompteval-judge-repeats", metavar="N"),
    Setting("pass_ks", "the k of pass@k to report (k <= samples), e.g. 1,10", default=(1,),
            parse=_pass_ks, option="--prompteval-pass-k", metavar="K[,K...]"),
    Setting("details", "longer summary: every regression and improvement", default=False,
            option="--prompteval-details", flag=True),
    Setting("results", "where each run's results are kept; 'none' keeps none",
            default="prompt_results", option="--prompteval-results", metavar="DIR",
            ini="prompteval_results", path=True),
    Setting("concurrency", "model calls in flight at most, sent ahead of the items and paced "
            f"by the API's rate-limit headers (default {DEFAULT_CONCURRENCY}; 1: none)",
            default=DEFAULT_CONCURRENCY, parse=_whole(1, MAX_CONCURRENCY),
            option="--prompteval-concurrency",
            metavar="N", ini="prompteval_concurrency"),
    Setting("shard", "run the I-th of N stable shards of the cases (every version and sample "
            "of a case in the same shard); join the results with 'prompteval merge'",
            parse=_shard, option="--prompteval-shard", metavar="I/N"),
    Setting("batch", "send the run's calls as Message Batches (half price) before the items "
            "run: one round per batch, strategies' later rounds in the next ones",
            default=False, option="--prompteval-batch", flag=True),
    Setting("batch_poll", "first wait between batch status checks (doubles up to a minute)",
            default=5.0, parse=_number(0, above=True), option="--prompteval-batch-poll",
            metavar="SECONDS"),
    Setting("code_pass", "code cases: a sample passes when all its tests pass (all, the "
            "default) or when its partial-correctness score reaches the threshold",
            default="all", parse=_choice(CODE_PASS_MODES), option="--prompteval-code-pass",
            ini="prompteval_code_pass", choices=CODE_PASS_MODES),
    Setting("code_workers", "code cases: sandbox servers running samples in parallel "
            "(default: twice the CPU count)", parse=_whole(1, MAX_CODE_WORKERS),
            option="--prompteval-code-workers",
            metavar="N", ini="prompteval_code_workers"),
    Setting("unsafe_sandbox", "code cases: run generated code even where the sandbox cannot "
            "isolate it", default=False, parse=_flag, option="--prompteval-unsafe-sandbox",
            flag=True, ini="prompteval_unsafe_sandbox", ini_type="bool", from_files=False),
    Setting("code_timeout", "code cases: seconds a sample may run at most", default=3.0,
            parse=_number(0, MAX_CODE_TIMEOUT, above=True), option="--prompteval-code-timeout",
            metavar="SECONDS", ini="prompteval_code_timeout"),
    Setting("item_timeout", "agent cases: seconds the tool calls of an item may run in all "
            f"(default {DEFAULT_ITEM_TIMEOUT:g}; a case's item_timeout wins); past it the item "
            "fails", default=DEFAULT_ITEM_TIMEOUT,
            parse=_number(0, MAX_ITEM_TIMEOUT, above=True), option="--prompteval-item-timeout",
            metavar="SECONDS", ini="prompteval_item_timeout"),
    Setting("max_tool_calls", "agent cases: tool calls one turn may ask for (default "
            f"{DEFAULT_MAX_TOOL_CALLS}; a case's max_tool_calls wins); past it the item fails",
            default=DEFAULT_MAX_TOOL_CALLS, parse=_whole(1, MAX_TOOL_CALLS_LIMIT),
            option="--prompteval-max-tool-calls", metavar="N", ini="prompteval_max_tool_calls"),
    Setting("max_cost", "stop starting new calls once live calls have cost this much (USD); "
            "the rest skip", parse=_number(0, above=True), option="--prompteval-max-cost",
            metavar="USD"),
    Setting("affected", "run only the cases whose case-file entry changed since git ref REF, "
            "and every case when a prompt version's file changed", option="--prompteval-affected",
            metavar="REF"),
    Setting("trusted_recordings", "read recordings as committed at git ref REF (the base "
            "branch): one REF has is replayed as REF has it, one it has not is unverified: "
            "asked for again with a key, else replayed and named (in gates mode, an error)",
            option="--prompteval-trusted-recordings", metavar="REF"),
    Setting("estimate", "make no generation calls: count input tokens through the API and "
            "print calls, tokens and dollars per version, replayed and new; with "
            "--prompteval-max-cost, fail when the estimate exceeds it", default=False,
            option="--prompteval-estimate", flag=True),
    Setting("html", "write a self-contained HTML report (inline SVG charts) to FILE",
            option="--prompteval-html", metavar="FILE", path=True),
    Setting("markdown", "write the run as GitHub-flavoured Markdown to FILE (also appended to "
            "$GITHUB_STEP_SUMMARY when that is set)", option="--prompteval-markdown",
            metavar="FILE", path=True),
    Setting("baseline", "compare the --prompt version with a stored run's results, or with "
            "a prompt version as committed at a git ref (NAME@REF, e.g. current@origin/main)",
            option="--prompteval-baseline", metavar="FILE", path=True),
    Setting("fail_under", "fail the session when the --prompt version's mean score is under "
            "SCORE (0 to 1)", parse=_number(0, 1), option="--prompteval-fail-under",
            metavar="SCORE"),
    Setting("max_regression", "fail the session when the --prompt version scores more than "
            "DELTA (0 to 1) below the baseline or a compared version, on paired cases",
            parse=_number(0, 1), option="--prompteval-max-regression", metavar="DELTA"),
    Setting("min_pass", "a case passes when at least this many of its samples pass: a count "
            "like 4 or a fraction like 0.8 (a case's min_pass: wins); failing samples then show "
            "as xfail", parse=parse_min_pass, option="--prompteval-min-pass", metavar="N|FRACTION",
            ini="prompteval_min_pass"),
    Setting("stop_early", "with min_pass: draw no more samples of a case once its verdict "
            "can no longer change (the rest skip; calls are then not sent ahead)",
            default=False, option="--prompteval-stop-early", flag=True),
    Setting("exit", "tests: the exit code is pytest's (any failed sample fails the run); gates: "
            f"it follows the gates alone ({GATE_FAILED}: a gate failed, {NO_VERDICT}: errors "
            "prevented a verdict)", default="tests", parse=_choice(EXIT_MODES),
            option="--prompteval-exit", ini="prompteval_exit", choices=EXIT_MODES),
    Setting("threshold", "score an item needs to pass (0 to 1)", default=0.7,
            parse=_number(0, 1), ini="prompteval_threshold"),
    Setting("gate_metric", "the primary endpoint comparisons are decided on, and the gate "
            "with them: pass_rate (each case's share of passing samples) or score (its mean "
            "score); the other is reported beside it", default="pass_rate",
            parse=_choice(GATE_METRICS), ini="prompteval_gate_metric", choices=GATE_METRICS),
    Setting("max_new_failures", "gates mode: fail when the --prompt version newly fails more "
            "cases than this against a compared or baseline version (default 0)", default=0,
            parse=_whole(0), ini="prompteval_max_new_failures"),
    Setting("min_effect", "smallest score / pass-rate difference a comparison may call "
            "better or worse (0 to 1)", default=0.02, parse=_number(0, 1),
            ini="prompteval_min_effect"),
    Setting("min_kappa", "the run summary warns when the judge in use agrees with people "
            "below this Cohen's kappa in its latest `prompteval calibrate`, or has none",
            parse=_number(-1, 1), ini="prompteval_min_kappa"),
    Setting("cases", "case directories, relative to the rootdir", default=("prompt_cases",),
            ini="prompteval_cases", ini_type="linelist", path=True),
    Setting("prompts", "prompt version directory", default="prompts", ini="prompteval_prompts",
            path=True),
    Setting("recordings", "recordings directory", default="prompt_recordings",
            ini="prompteval_recordings", path=True),
    Setting("scoring", "YAML file extending the automatic scorer's tables",
            ini="prompteval_scoring"),
    Setting("prices", "YAML file extending the price table (no model priced below the "
            "shipped table)", ini="prompteval_prices"),
    Setting("allow_lower_prices", "let the prompteval_prices file price a model below the "
            "shipped table (the budget of --prompteval-max-cost follows it)", default=False,
            option="--prompteval-allow-lower-prices", flag=True, from_files=False),
    Setting("environments_cache", "where repository environments are built and kept, outside "
            "the project (default: the user's cache folder, prompteval/environments)",
            option="--prompteval-environments-cache", metavar="DIR",
            ini="prompteval_environments_cache", env="PROMPTEVAL_ENVIRONMENTS_CACHE"),
    Setting("wheelhouse", "a folder of wheels repository environments are installed from "
            "(pip's --find-links, beside the index as pip is configured; repeatable)",
            default=(), option="--prompteval-wheelhouse", metavar="DIR", repeat=True,
            ini="prompteval_wheelhouse", ini_type="linelist"),
    Setting("case_fields", "extra case fields the project uses (its templates and hooks)",
            default=(), ini="prompteval_case_fields", ini_type="args"),
    Setting("prompt_fields", "extra prompt version fields the project uses", default=(),
            ini="prompteval_prompt_fields", ini_type="args"),
    Setting("unrun_ok", "case id patterns that may run under no selected version (their "
            "applies_to leave them out) in gates mode; any other such case stops collection",
            default=(), ini="prompteval_unrun_ok", ini_type="args"),
)  # fmt: skip


def _dest(setting: Setting) -> str:
    return f"prompteval_{setting.name}"


def _where(setting: Setting, source: str) -> str:
    if source == "option":
        return str(setting.option)
    if source == "addopts":
        return f"{setting.option} in addopts"
    if source == "env":
        return f"environment variable {setting.env}"
    if source == "-o":
        return f"-o {setting.ini}"
    return f"ini {setting.ini}"


#: Where a value comes from a file a pull request can change: an ini key, or an option in
#: the ini's ``addopts``.
FROM_FILES = ("ini", "addopts")
#: the settings that choose what answers a call
_ANSWERING = frozenset({"provider", "judge_provider"})


def typed_names(args: Iterable[str]) -> frozenset[str]:
    """The settings' option dests and the ini keys of ``-o key=value`` in ``args``: what a
    command line (or ``PYTEST_ADDOPTS``) gave, as opposed to an ini file's ``addopts``."""
    options = {name: _dest(s) for s in SETTINGS if s.option for name in (s.option, *s.aliases)}
    args = list(args)
    names: set[str] = set()
    for arg, after in zip(args, [*args[1:], ""], strict=False):  # none: a bare `pytest`
        if arg in ("-o", "--override-ini"):
            names.add(after.split("=", 1)[0])
        elif arg.startswith("--override-ini="):
            names.add(arg.split("=", 2)[1])
        elif arg.startswith("-o"):
            names.add(arg[2:].split("=", 1)[0])
        elif arg.split("=", 1)[0] in options:
            names.add(options[arg.split("=", 1)[0]])
    return frozenset(names)


@dataclass(frozen=True)
class Settings:
    rootpath: Path
    prompt: str | None
    compare: tuple[str, ...]
    model_override: str | None
    default_model: str
    record: str | None  # None: decided by whether the provider can answer (see record_mode)
    provider: str
    judge_provider: str
    samples: int
    record_note: str | None
    scorer: str
    #: the project named the scorer (option or ini), so it scores every case; by default it
    #: scores only the cases it fits (``evaluate.scorer_for``)
    scorer_named: bool
    judge_model: str
    review_template: str | None
    review_templates: Path | None
    judge_rate: float
    seed: str
    judge_repeats: int
    pass_ks: tuple[int, ...]
    details: bool
    results_dir: Path | None
    concurrency: int
    shard: tuple[int, int] | None
    batch: bool
    batch_poll: float
    code_pass: str
    code_workers: int | None
    unsafe_sandbox: bool
    code_timeout: float
    item_timeout: float
    max_tool_calls: int
    max_cost: float | None
    affected: str | None
    trusted_recordings: str | None
    estimate: bool
    html: Path | None
    markdown: Path | None
    baseline: Path | None
    baseline_version: str | None  # --prompteval-baseline NAME@REF: run as a version too
    fail_under: float | None
    max_regression: float | None
    min_pass: MinPass | None
    stop_early: bool
    exit: str
    threshold: float
    gate_metric: str
    max_new_failures: int
    min_effect: float
    min_kappa: float | None
    case_dirs: tuple[Path, ...]
    prompt_dir: Path
    recordings_dir: Path
    scoring: Path | None
    prices: Path | None
    allow_lower_prices: bool
    case_fields: tuple[str, ...]
    prompt_fields: tuple[str, ...]
    unrun_ok: tuple[str, ...]
    #: None: the user's cache folder (sandbox/environments.default_cache)
    environments_cache: Path | None
    wheelhouse: tuple[Path, ...]

    @property
    def versions(self) -> tuple[str, ...]:
        """The prompt versions named on the command line, --prompt first."""
        if self.prompt is None:
            return ()
        extra = (self.baseline_version,) if self.baseline_version else ()
        return tuple(dict.fromkeys((self.prompt, *self.compare, *extra)))

    def record_mode(self, provider_live: Callable[[], bool]) -> str:
        """The record mode asked for, else by whether the provider can answer (asked only
        then: a platform's credentials take its SDK a moment to find)."""
        return self.record or ("new" if provider_live() else "none")

    @classmethod
    def build(
        cls,
        rootpath: Path,
        options: Mapping[str, Any],
        ini: Callable[[str], Any],
        environ: Mapping[str, str] | None = None,
        *,
        typed: Collection[str] | None,
        invocation_dir: Path | None = None,
    ) -> Settings:
        """``options``: argparse values by dest (None when not given); ``ini``: pytest's
        ``config.getini``; ``typed``: the option dests and ini keys given on the command line
        (``typed_names``), any other option value came from the ini's ``addopts``; None:
        every option and ini value was checked already (an xdist worker's, by its
        controller). Raises SettingError naming the option, ini key or variable."""
        environ = os.environ if environ is None else environ
        raw: dict[str, Any] = {}
        sources: dict[str, str] = {}
        here = invocation_dir or Path.cwd()
        from_files: list[tuple[Setting, str]] = []
        for setting in SETTINGS:
            raw[setting.name], source = _value(setting, options, ini, environ, typed)
            sources[setting.name] = source
            if source in FROM_FILES:
                _check_from_file(setting, source, raw[setting.name], rootpath, here)
                from_files.append((setting, source))
        for setting, source in from_files:
            if raw["trusted_recordings"] is not None and setting.name in _ANSWERING:
                # what answers an unverified recording is the run's to choose, not the branch's
                raise SettingError(
                    f"{_where(setting, source)}: with --prompteval-trusted-recordings the "
                    f"provider comes from the command line; give {setting.option} there"
                )

        def project_path(value: str | None, key: str) -> Path | None:
            # a file the project names must be inside it (a pull request can set ini keys)
            try:
                return None if not value else resolve_inside(rootpath, value)
            except PromptevalError as exc:
                raise SettingError(f"ini {key}: {exc}") from None

        def given_path(value: str | None) -> Path | None:
            # a path typed on the command line is relative to where pytest was started
            return None if not value else here / value

        def folder(value: str | None, source: str) -> Path | None:
            # typed: from where pytest started; from a file: from the rootdir
            if not value:
                return None
            name = Path(os.path.expanduser(value))
            return (here if source in ("option", "env") else rootpath) / name

        results = raw.pop("results")
        baseline, baseline_version = raw["baseline"], None
        if baseline and "@" in baseline and not (here / baseline).is_file():
            baseline, baseline_version = None, baseline
        values = {
            **raw,
            "rootpath": rootpath,
            "compare": tuple(raw["compare"] or ()),
            # the results folder is the project's: relative to the rootdir (Path keeps an
            # absolute value as it is)
            "results_dir": None if results == "none" else rootpath / results,
            "case_dirs": tuple(rootpath / d for d in raw.pop("cases")),
            "prompt_dir": rootpath / raw.pop("prompts"),
            "recordings_dir": rootpath / raw.pop("recordings"),
            "review_templates": project_path(
                raw["review_templates"], "prompteval_review_templates"
            ),
            "scoring": project_path(raw["scoring"], "prompteval_scoring"),
            "prices": project_path(raw["prices"], "prompteval_prices"),
            "environments_cache": folder(raw["environments_cache"], sources["environments_cache"]),
            "wheelhouse": tuple(
                p for w in raw["wheelhouse"] if (p := folder(w, sources["wheelhouse"]))
            ),
            "case_fields": tuple(raw["case_fields"]),
            "prompt_fields": tuple(raw["prompt_fields"]),
            "unrun_ok": tuple(raw["unrun_ok"]),
            "html": given_path(raw["html"]),
            "markdown": given_path(raw["markdown"]),
            "baseline": given_path(baseline),
            "baseline_version": baseline_version,
            "scorer_named": sources["scorer"] != "default",
        }
        settings = cls(**{f.name: values[f.name] for f in fields(cls)})
        settings._check()
        return settings

    def _check(self) -> None:
        for folder, where in (
            (self.recordings_dir, "ini prompteval_recordings"),
            (self.results_dir, "--prompteval-results / ini prompteval_results"),
        ):
            if folder is not None:
                try:
                    check_dir(folder, self.rootpath)  # symlinked out of the project: refused
                except PromptevalError as exc:
                    raise SettingError(f"{where}: {exc}") from None
        for output, option in (
            (self.html, "--prompteval-html"),
            (self.markdown, "--prompteval-markdown"),
        ):
            if output is None:
                continue
            blocked = next((p for p in output.parents if p.exists()), None)
            if blocked is not None and not blocked.is_dir():
                raise SettingError(
                    f"{option} {display(output)!r}: {display(blocked)!r} is a file, "
                    "so the report's folder cannot be made"
                )
        if self.baseline is not None and not self.baseline.is_file():
            raise SettingError(
                f"--prompteval-baseline {display(self.baseline)!r}: no such file; expected a "
                "results file (.json or .jsonl) from an earlier run"
            )


def _value(
    setting: Setting,
    options: Mapping[str, Any],
    ini: Callable[[str], Any],
    environ: Mapping[str, str],
    typed: Collection[str] | None,
) -> tuple[Any, str]:
    """The setting's value and where it came from: option, addopts, env, ini, -o, default."""
    if setting.option is not None:
        given = options.get(_dest(setting))
        source = "option" if typed is None or _dest(setting) in typed else "addopts"
        if setting.flag:
            if given:
                return True, source
        elif setting.repeat:
            if given:
                return tuple(given), source
        elif given is not None:
            return _parsed(setting, str(given), source), source
    if setting.env is not None and environ.get(setting.env):
        return _parsed(setting, environ[setting.env], "env"), "env"
    if setting.ini is not None:
        value = ini(setting.ini)
        source = "-o" if typed is None or setting.ini in typed else "ini"
        if setting.ini_type in ("linelist", "args"):
            if value:
                return tuple(value), source
        elif value not in (None, ""):
            return _parsed(setting, str(value).strip(), source), source
    return setting.default, "default"


def _check_from_file(setting: Setting, source: str, value: Any, root: Path, here: Path) -> None:
    """A value from a file a pull request can change: none that weakens safety, no path
    that leads out of the rootdir."""
    if not setting.from_files and value != setting.default:
        raise SettingError(
            f"{_where(setting, source)}: weakens safety, so it is refused from files a pull "
            f"request can change; give {setting.option} on the command line instead"
        )
    if not setting.path:
        return
    # an option without an ini key names a path from where pytest started, the rest from
    # the rootdir
    base = here if setting.ini is None else root
    for name in value if isinstance(value, tuple) else (value,):
        if not name or (setting.name == "results" and name == "none"):
            continue
        try:
            resolve_inside(root, name, base)
        except PromptevalError as exc:
            raise SettingError(
                f"{_where(setting, source)}: {exc}; from a file it must stay in the project "
                "(the command line may name any folder)"
            ) from None


def _parsed(setting: Setting, text: str, source: str) -> Any:
    try:
        return setting.parse(text)
    except ValueError as exc:
        raise SettingError(f"{_where(setting, source)} {text!r}: expected {exc}") from None
