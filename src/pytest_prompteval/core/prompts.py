"""YAML prompt versions → PromptVersion; ``build_request(case)`` → Request.

The format is the seed's: ``name``, ``description``, ``system_prompt``, ``user_prompt``,
``assistant_prefill`` and ``model_config: {model, max_tokens, temperature, ...}``, plus
``include_input``, ``assert``, ``strategy`` and ``applies_to``. Other top-level fields are
typos unless the project declares them (ini ``prompteval_prompt_fields`` or the
``pytest_prompteval_prompt_fields`` hook); every field stays in ``raw`` for the hooks.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_prompteval.core.ablation import ablated
from pytest_prompteval.core.cases import Case
from pytest_prompteval.core.errors import PromptevalError, TemplateError, display
from pytest_prompteval.core.paths import check_name, read_bounded
from pytest_prompteval.core.request import MAX_REQUEST_CHARS, Message, Request
from pytest_prompteval.core.schema import check_keys
from pytest_prompteval.core.templates import MissingVariables, TooLarge, fill, format_value
from pytest_prompteval.core.yamlload import MarkedDict, line_of, parse_yaml

DEFAULT_MAX_TOKENS = 1024
TEMPLATE_FIELDS = ("system_prompt", "user_prompt", "assistant_prefill")
PROMPT_SUFFIXES = (".yaml", ".yml")
PROMPT_FIELDS = frozenset(
    {
        *TEMPLATE_FIELDS,
        "name",
        "description",
        "model_config",
        "include_input",
        "assert",
        "strategy",
        "applies_to",
        # agents
        "tools",
        "tool_choice",
        "max_steps",
        # the public explain project's newer format: ``model: {name, max_tokens, ...}`` (read
        # as model_config) and the sections its templates and hooks read
        "model",
        "audience_levels",
        "explanation_types",
    }
)
#: Parameters the provider sends in ``extra_body`` when the SDK does not name them.
EXTRA_BODY_PARAMS = frozenset({"temperature", "top_p", "top_k"})
# Keyword arguments of ``messages.create`` that are not API parameters, or that the request
# fills itself from the prompt's other fields.
_NOT_MODEL_CONFIG = frozenset(
    {
        "self",
        "messages",
        "system",
        "stream",
        "extra_headers",
        "extra_query",
        "extra_body",
        "timeout",
    }
)
_DECLARE = (
    "; declare the field (ini prompteval_prompt_fields, or the "
    "pytest_prompteval_prompt_fields hook)"
)


@functools.cache
def model_config_keys() -> frozenset[str]:
    """What ``model_config`` may hold: the installed SDK's ``messages.create`` parameters,
    plus ``model`` and what travels in ``extra_body``."""
    import inspect

    from anthropic.resources.messages import Messages

    named = set(inspect.signature(Messages.create).parameters) - _NOT_MODEL_CONFIG
    return frozenset({"model", *named, *EXTRA_BODY_PARAMS})


@dataclass(frozen=True)
class PromptVersion:
    version: str  # the file's stem: what --prompt and --compare name
    path: Path
    name: str = ""
    description: str = ""
    system_prompt: str | None = None
    user_prompt: str | None = None
    assistant_prefill: str | None = None
    model_config: Mapping[str, Any] = field(default_factory=dict)
    sha256: str = ""
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def model(self) -> str | None:
        model = self.model_config.get("model")
        return model if isinstance(model, str) else None

    def line_of(self, key: str) -> int | None:
        return line_of(self.raw, key)


def available_versions(prompt_dir: Path) -> dict[str, Path]:
    if not prompt_dir.is_dir():
        return {}
    files = sorted(p for p in prompt_dir.iterdir() if p.suffix in PROMPT_SUFFIXES and p.is_file())
    return {p.stem: p for p in files}


def _read(path: Path) -> tuple[bytes, MarkedDict]:
    try:
        source = read_bounded(path)
        data = parse_yaml(source.decode("utf-8"), path)
    except UnicodeDecodeError as exc:
        raise PromptevalError(f"cannot read file: not UTF-8 ({exc.reason})", path) from None
    if not isinstance(data, MarkedDict):
        raise PromptevalError("expected a mapping with system_prompt, user_prompt, ...", path, 1)
    return source, data


def load_prompt(path: Path, extra_fields: Collection[str] = ()) -> PromptVersion:
    """Read and validate one prompt version; ``extra_fields`` are the project's declared
    top-level fields."""
    try:
        check_name(path.stem, "prompt version")
    except PromptevalError as exc:
        raise PromptevalError(exc.message, path) from None
    source, data = _read(path)
    where = path  # the file the fields' lines are in
    if "ablate" in data:
        base: dict[Path, bytes] = {}

        def read_base(found: Path) -> MarkedDict:
            base[found], fields = _read(found)
            return fields

        data, where = ablated(data, path, read_base)
        source += base[where]  # the version changes with either file
    check_keys(data, PROMPT_FIELDS | set(extra_fields), where, hint=_DECLARE)
    if data.get("system_prompt") is None and data.get("user_prompt") is None:
        raise PromptevalError(
            "expected a system_prompt or a user_prompt (or both)", where, data.line
        )
    for key in (*TEMPLATE_FIELDS, "name", "description"):
        value = data.get(key)
        if value is not None and not isinstance(value, str):
            raise PromptevalError(
                f"field {key!r}: expected a string, got {type(value).__name__}",
                where,
                data.line_of(key),
            )
    model_config = data.get("model_config") or _model_section(data, where)
    if not isinstance(model_config, Mapping):
        raise PromptevalError(
            "field 'model_config': expected a mapping like {model: ..., max_tokens: ...}",
            where,
            data.line_of("model_config"),
        )
    if model_config:
        known = {"model", "max_tokens", *EXTRA_BODY_PARAMS}  # no SDK import for the usual
        if not known.issuperset(model_config):
            check_keys(model_config, model_config_keys(), where, "model_config: ")
    return PromptVersion(
        version=path.stem,
        path=path,
        name=data.get("name") or path.stem,
        description=data.get("description") or "",
        system_prompt=data.get("system_prompt"),
        user_prompt=data.get("user_prompt"),
        assistant_prefill=data.get("assistant_prefill"),
        model_config=model_config,
        sha256=hashlib.sha256(source).hexdigest(),
        raw=data,
    )


def _model_section(data: MarkedDict, path: Path) -> dict[str, Any]:
    """The newer explain format's ``model: {name: ..., max_tokens: ..., temperature: ...}``
    as a model_config (``name`` is the model)."""
    section = data.get("model")
    if section is None:
        return {}
    where = data.line_of("model")
    if not isinstance(section, Mapping):
        raise PromptevalError(
            "field 'model': expected a mapping like {name: ..., max_tokens: ...}", path, where
        )
    if "model_config" in data:
        raise PromptevalError("give model_config or model, not both", path, where)
    config = {k: v for k, v in section.items() if k != "name"}
    return {"model": section["name"], **config} if "name" in section else config


def template_variables(case: Case) -> dict[str, Any]:
    """Variables a prompt can name: the case's top-level fields, its ``vars``, its input, the
    seed's names."""
    variables: dict[str, Any] = {k: v for k, v in case.raw.items() if k not in ("input", "vars")}
    variables.update(case.vars)
    variables.update(case.input)
    seed_names = {
        "arch": case.input.get("instructionSet"),
        "language": case.input.get("language"),
        "compiler": case.input.get("compiler"),
        "compilation_options": _options(case.input.get("compilationOptions")),
    }
    for name, value in seed_names.items():
        if value is not None:
            variables.setdefault(name, value)
    return variables


def _options(value: Any) -> str | None:
    if isinstance(value, list):
        return " ".join(format_value(v) for v in value)
    return None if value is None else format_value(value)


def render_field(
    prompt: PromptVersion,
    key: str,
    case: Case,
    variables: Mapping[str, Any],
    limit: int = MAX_REQUEST_CHARS,
) -> str:
    """Fill one template field of ``prompt`` within ``limit`` characters; a missing
    placeholder or a text over the limit names prompt file and case."""
    template = getattr(prompt, key, None)
    if template is None:
        template = prompt.raw.get(key)
    if not isinstance(template, str):
        return ""
    try:
        return fill(template, variables, limit)
    except TooLarge:
        raise _too_large(case, f"{key} makes", prompt.path, prompt.line_of(key)) from None
    except MissingVariables as exc:
        names = ", ".join("{" + n + "}" for n in exc.names)
        raise TemplateError(
            f"{key} uses {names} but case {case.id!r} ({display(case.path, case.line)}) "
            "gives no value for it; add it to the case (top level or input) or supply it from the "
            "pytest_prompteval_template_vars hook",
            prompt.path,
            prompt.line_of(key),
        ) from None


def _too_large(case: Case, what: str, path: Path, line: int | None) -> TemplateError:
    return TemplateError(
        f"{what} the request of case {case.id!r} ({display(case.path, case.line)}) longer than "
        f"{MAX_REQUEST_CHARS:,} characters",
        path,
        line,
    )


def build_request(
    case: Case, prompt: PromptVersion, variables: Mapping[str, Any], default_model: str
) -> Request:
    """The default request: system prompt; user prompt + the case input as JSON; prefill."""
    # each field within what the ones before it left of the bound
    system = render_field(prompt, "system_prompt", case, variables)
    user = render_field(prompt, "user_prompt", case, variables, MAX_REQUEST_CHARS - len(system))
    left = MAX_REQUEST_CHARS - len(system) - len(user)
    prefill = render_field(prompt, "assistant_prefill", case, variables, left).rstrip()
    # A prompt that places the input itself (code prompts: "{prompt}") says include_input: false.
    payload = (
        json.dumps(case.input, ensure_ascii=False) if prompt.raw.get("include_input", True) else ""
    )
    if len(payload) > left - len(prefill):
        raise _too_large(case, "the input makes", case.path, line_of(case.raw, "input"))
    user_blocks = tuple(b for b in (user, payload) if b)
    messages = [Message("user", user_blocks)]
    if prefill:  # the API rejects an assistant turn that ends in white space
        messages.append(Message("assistant", (prefill,)))
    params = {k: v for k, v in prompt.model_config.items() if k != "model"}
    params.setdefault("max_tokens", DEFAULT_MAX_TOKENS)
    return Request.create(prompt.model or default_model, messages, system or None, **params)
