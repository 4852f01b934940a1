"""``prompteval import promptfoo CONFIG``: a promptfoo config becomes prompt versions and a
case file.

Each prompt (a string, a ``file://`` text file whose prompts ``---`` lines part, or a chat of
system, user and a final assistant turn in JSON or YAML) crossed with each Claude provider
(``anthropic:messages:MODEL`` and its ``config``) is a prompt version; each test (inline,
``file://`` CSV, YAML, JSON or JSON lines, ``defaultTest`` merged in, ``scenarios`` crossed
out, a list-of-strings var expanded as promptfoo does) is a case whose vars are its input.
Assertions map to this plugin's where one has the same meaning; every item that does not map
(an assertion, an option, a provider, a Nunjucks expression) is a note naming it and its
FILE:LINE, and nothing is left out without one.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from pytest_prompteval.core.errors import PromptevalError, display
from pytest_prompteval.core.paths import NAME, check_inside, read_bounded, resolve_inside
from pytest_prompteval.core.patterns import pattern
from pytest_prompteval.core.prompts import model_config_keys
from pytest_prompteval.core.schema import suggestion
from pytest_prompteval.core.templates import literal
from pytest_prompteval.core.yamldump import block
from pytest_prompteval.core.yamlload import MarkedDict, line_of, parse_yaml
from pytest_prompteval.scoring.assertions import parse_assertions

#: promptfoo assertion -> ours, for those whose value means the same
SAME = {
    "equals": "equals",
    "contains": "contains",
    "icontains": "icontains",
    "starts-with": "starts_with",
    "regex": "regex",
    "contains-any": "contains_any",
    "contains-all": "contains_all",
    "icontains-any": "icontains_any",
    "icontains-all": "icontains_all",
    "is-json": "is_json",
    "contains-json": "contains_json",
}
#: the ones whose value is a list (a comma-separated string in promptfoo too)
LISTS = ("contains-any", "contains-all", "icontains-any", "icontains-all")
#: promptfoo's limits: their ``threshold`` is our value
LIMITS = {"cost": "max_cost_usd", "latency": "max_latency_ms"}
#: promptfoo's other assertion types a CSV cell may name (``similar(0.8):text``): each is
#: named as not imported
NAMED_ONLY = (
    "answer-relevance", "bleu", "classifier", "context-faithfulness", "context-recall",
    "context-relevance", "factuality", "finish-reason", "g-eval", "gleu", "is-refusal",
    "is-sql", "is-valid-function-call", "is-valid-openai-function-call",
    "is-valid-openai-tools-call", "is-xml", "contains-xml", "is-html", "contains-html",
    "levenshtein", "meteor", "model-graded-closedqa", "model-graded-factuality", "moderation",
    "perplexity", "perplexity-score", "rouge-n", "similar", "webhook", "word-count",
)  # fmt: skip
#: promptfoo's assertions written as code (the one-line forms are translated)
CODE_TYPES = ("javascript", "python")
#: what a judge question passes with when promptfoo's test gives no threshold
JUDGE_THRESHOLD = 0.5
#: cases one config may make (list vars multiply): more is a mistake, not a suite
MAX_CASES = 10_000
#: the keys of a test this importer reads; any other is named
TEST_KEYS = ("description", "vars", "assert", "threshold")
#: top-level keys read; any other is named
CONFIG_KEYS = (
    "description",
    "prompts",
    "providers",
    "targets",
    "tests",
    "defaultTest",
    "scenarios",
)
TEXT_SUFFIXES = ("", ".txt", ".md", ".j2", ".njk", ".nunjucks", ".prompt")
CODE_SUFFIXES = (".py", ".js", ".ts", ".mjs", ".cjs")

_NUNJUCKS = r"(?s)\{\{-?\s*(.*?)\s*-?\}\}|\{%.*?%\}|\{#.*?#\}"
_IDENTIFIER = r"[A-Za-z_]\w*"
_QUOTED = r"'([^'\\]*)'|\"([^\"\\]*)\""


@dataclass
class PromptfooProject:
    """Prompt versions (name -> file data), the case file's data (``stem`` names it and
    starts every name), and the notes."""

    stem: str = ""
    prompts: dict[str, dict[str, Any]] = field(default_factory=dict)
    cases: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    _noted: set[str] = field(default_factory=set, repr=False)

    def note(self, where: str, text: str) -> None:
        line = f"{where}: {text}"
        if line not in self._noted:  # a defaultTest item is named once, not once a case
            self._noted.add(line)
            self.notes.append(line)


class _Place(NamedTuple):
    """Where something stands: a file and (when known) its line."""

    path: Path
    line: int | None

    def __str__(self) -> str:
        return display(self.path, self.line)

    def down(self, lines: int) -> str:
        """The place ``lines`` lines further down, as text."""
        return display(self.path, None if self.line is None else self.line + lines)


@dataclass
class _Prompt:
    label: str
    where: str
    user: str
    system: str | None = None
    prefill: str | None = None


def _length(op: str, number: str) -> dict[str, Any]:
    n = int(number)
    if op in ("<=", "<"):
        return {"max_length": n - (op == "<")}
    return {"min_length": n + (op == ">")}


def _quoted(groups: list[str | None]) -> str:
    return next(g for g in groups if g is not None)


def _code_patterns() -> list[tuple[Any, Callable[[list[str | None]], dict[str, Any]]]]:
    """``output.length <= 100``, ``output.includes('x')``, ``'x' in output``, ...: the
    javascript and python assertions that say what one of ours says."""
    length = r"\s*(<=|<|>=|>)\s*(\d{1,9})"
    call = rf"\(\s*(?:{_QUOTED})\s*\)"  # ('text') or ("text")

    def quoted(kind: str) -> Callable[[list[str | None]], dict[str, Any]]:
        return lambda g: {kind: _quoted(g)}

    return [
        (pattern(rf"output\.length{length}"), lambda g: _length(g[0] or "", g[1] or "")),
        (pattern(rf"len\(output\){length}"), lambda g: _length(g[0] or "", g[1] or "")),
        (pattern(rf"output\.includes{call}"), quoted("contains")),
        (pattern(rf"!output\.includes{call}"), quoted("not_contains")),
        (pattern(rf"output\.startsWith{call}"), quoted("starts_with")),
        (pattern(rf"(?:{_QUOTED})\s+in\s+output"), quoted("contains")),
        (pattern(rf"(?:{_QUOTED})\s+not\s+in\s+output"), quoted("not_contains")),
        (pattern(rf"output\.startswith{call}"), quoted("starts_with")),
    ]


def _code(source: str) -> dict[str, Any] | None:
    """Ours for a javascript or python assertion that is one of the simple forms, else None."""
    text = source.strip().removeprefix("return ").rstrip(";").strip()
    for compiled, build in _code_patterns():
        match = compiled.fullmatch(text)
        if match is not None:
            return build(list(match.groups()))
    return None


class _Importer:
    def __init__(self, config: Path):
        self.config = config
        self.base = config.parent
        self.stem = _stem(config)
        self.out = PromptfooProject(self.stem)
        #: the test files being read, one inside another: one naming itself is a cycle
        self.reading: set[Path] = set()
        #: the line of each item of the config's top-level lists (a string has no line)
        self.item_lines: dict[str, list[int]] = {}
        self.data: Any = None

    # -- where things are, and reading them
    def where(self, path: Path, node: Any = None, key: str | None = None) -> str:
        line = line_of(node, key) if node is not None else None
        return display(path, line)

    def note(self, where: str, text: str) -> None:
        self.out.note(where, text)

    def read_text(self, path: Path) -> str:
        try:
            return read_bounded(path).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise PromptevalError(f"cannot read file: not UTF-8 ({exc.reason})", path) from None

    def referenced(self, ref: str, base: Path) -> list[Path]:
        """The files a ``file://`` reference names (a glob's matches, sorted). A config is
        read as hostile: a reference that leads out of the config's folder (an absolute
        path, ``..``, a link) is an error, so no file beyond it is copied into a case."""
        name = ref.removeprefix("file://")
        try:
            if any(c in name for c in "*?["):
                try:
                    found = sorted(p for p in base.glob(name) if p.is_file())
                except (NotImplementedError, ValueError):  # an absolute or empty pattern
                    return []
                return [check_inside(self.base, p) for p in found]
            resolve_inside(self.base, name, base)
            return [base / name]
        except PromptevalError as exc:
            raise PromptevalError(
                f"{ref!r}: {exc.message}; only files in the config's folder are read", self.config
            ) from None

    def line(self, key: str, index: int, default: int | None) -> int | None:
        """The line of item ``index`` of the config's top-level list ``key``."""
        lines = self.item_lines.get(key, [])
        return lines[index] if index < len(lines) else default

    def load(self, path: Path) -> Any:
        """A YAML or JSON file's data, with lines (JSON is read as the YAML it is)."""
        return parse_yaml(self.read_text(path), path)

    # -- the config
    def run(self) -> PromptfooProject:
        text = self.read_text(self.config)
        data = parse_yaml(text, self.config)
        self.item_lines = _item_lines(text)
        self.data = data
        if not isinstance(data, MarkedDict):
            raise PromptevalError(
                "expected a promptfoo config: a mapping with prompts, ...", self.config, 1
            )
        for key in data:
            if key not in CONFIG_KEYS:
                self.note(self.where(self.config, data, key), f"{key!r}: not imported")
        prompts = self.prompts(data)
        providers = self.providers(data)
        default = data.get("defaultTest") or {}
        if not isinstance(default, Mapping):
            self.note(
                self.where(self.config, data, "defaultTest"),
                f"defaultTest {str(default)[:80]!r}: not imported (inline its vars and assert)",
            )
            default = {}
        self.defaults(default, "defaultTest")
        tests = [
            (self.merged(default, self.config, test, path), path)
            for test, path in self.tests(data.get("tests"), self.config, data, "tests")
        ]
        tests += list(self.scenarios(data, default))
        cases: list[dict[str, Any]] = []
        for test, path in tests:
            cases += self.cases(test, path, len(cases))
            if len(cases) > MAX_CASES:
                raise PromptevalError(f"more than {MAX_CASES} cases: not imported", self.config)
        description = data.get("description")
        self.out.cases = {
            "description": f"Imported from promptfoo: {description or self.config.name}",
            "cases": cases,
        }
        for index, prompt in enumerate(prompts, 1):
            for suffix, provider in providers:
                name = f"{self.stem}_{index}{suffix}"
                self.out.prompts[name] = self.version(prompt, provider)
        return self.out

    def version(self, prompt: _Prompt, provider: dict[str, Any]) -> dict[str, Any]:
        version: dict[str, Any] = {
            "name": prompt.label,
            "description": f"Imported from promptfoo: {prompt.where}",
        }
        if prompt.system is not None:
            version["system_prompt"] = block(prompt.system)
        version["user_prompt"] = block(prompt.user)
        if prompt.prefill is not None:
            version["assistant_prefill"] = block(prompt.prefill)
        version["include_input"] = False  # the prompt places the vars itself
        if provider:
            version["model_config"] = provider
        version["applies_to"] = {"ids": [f"{self.stem}_*"]}
        return version

    # -- prompts
    def prompts(self, data: MarkedDict) -> list[_Prompt]:
        node = data.get("prompts")
        at = _Place(self.config, data.line_of("prompts"))
        if node is None:
            raise PromptevalError("no prompts: nothing to import", self.config, 1)
        found: list[_Prompt] = []
        for n, entry in enumerate(node if isinstance(node, list) else [node]):
            found += self.prompt(entry, _Place(self.config, self.line("prompts", n, at.line)))
        if not found:
            self.note(str(at), "no prompt could be imported: no prompt versions written")
        return found

    def prompt(self, entry: Any, at: _Place) -> list[_Prompt]:
        label = None
        if isinstance(entry, Mapping):
            for key in entry:
                if key not in ("id", "raw", "label"):
                    self.note(str(at), f"prompt option {key!r}: not imported")
            label = None if entry.get("label") is None else str(entry["label"])
            entry = entry.get("raw", entry.get("id"))
        if not isinstance(entry, str):
            self.note(str(at), "prompt: expected a string or file://: not imported")
            return []
        if not entry.startswith("file://"):
            return [p for p in [self.text_or_chat(entry, at, label)] if p is not None]
        files = self.referenced(entry, self.base)
        if not files:
            self.note(str(at), f"prompt {entry!r}: no file matches: not imported")
        return [p for path in files for p in self.prompt_file(path, entry, at, label)]

    def prompt_file(self, path: Path, ref: str, at: _Place, label: str | None) -> list[_Prompt]:
        suffix = path.suffix.lower()
        if suffix in CODE_SUFFIXES or ":" in path.name:
            self.note(str(at), f"prompt {ref!r}: a prompt made by code: not imported")
            return []
        if not path.is_file():
            raise PromptevalError(f"{at}: prompt {ref!r}: no such file {display(path)}")
        if suffix in (".json", ".yaml", ".yml"):
            prompt = self.chat_file(path, ref, label)
            return [prompt] if prompt is not None else []
        if suffix == ".jsonl":
            lines = enumerate(self.read_text(path).splitlines(), 1)
            found = [self.text_or_chat(t, _Place(path, n), label) for n, t in lines if t.strip()]
            return [p for p in found if p is not None]
        if suffix not in TEXT_SUFFIXES:
            self.note(str(at), f"prompt {ref!r}: a {suffix} file: not imported")
            return []
        parts = _split_prompts(self.read_text(path))
        return [
            self.plain(text, _Place(path, line), label or f"{path.name} {n}")
            for n, (line, text) in enumerate(parts, 1)
        ]

    def chat_file(self, path: Path, ref: str, label: str | None) -> _Prompt | None:
        """A JSON or YAML prompt file: a chat."""
        text = self.read_text(path)
        try:
            data = parse_yaml(text, path)
        except PromptevalError as exc:
            why = ": a Nunjucks chat template cannot be mapped" if "{%" in text else ""
            self.note(
                str(_Place(path, exc.line)),
                f"prompt {ref!r} is no JSON or YAML ({exc.message}){why}: not imported",
            )
            return None
        return self.chat(data, _Place(path, line_of(data) or 1), label or path.name)

    def text_or_chat(self, text: str, at: _Place, label: str | None) -> _Prompt | None:
        stripped = text.strip()
        if stripped.startswith("[") and stripped.endswith("]"):
            try:
                messages = json.loads(stripped)
            except ValueError:
                messages = None
            if isinstance(messages, list):
                return self.chat(messages, at, label or _label(text))
        return self.plain(text, at, label or _label(text))

    def plain(self, text: str, at: _Place, label: str) -> _Prompt:
        return _Prompt(label, str(at), self.template(text, at))

    def chat(self, data: Any, at: _Place, label: str) -> _Prompt | None:
        """system?, user, assistant? (the prefill): what a prompt version holds."""
        messages = data.get("messages") if isinstance(data, Mapping) else data
        if not isinstance(messages, list) or not all(isinstance(m, Mapping) for m in messages):
            self.note(str(at), "chat prompt: expected a list of {role, content}: not imported")
            return None
        turns = self.turns(messages, at)
        if turns is None:
            return None
        system = turns.pop(0) if turns and turns[0][0] == "system" else None
        prefill = turns.pop() if len(turns) > 1 and turns[-1][0] == "assistant" else None
        if [role for role, _, _ in turns] != ["user"]:
            roles = ", ".join(str(role) for role, _, _ in turns) or "(none)"
            self.note(
                str(at),
                f"chat prompt with turns {roles}: a prompt version holds a system prompt, one "
                "user turn and a prefill: not imported",
            )
            return None

        def convert(turn: tuple[Any, Any, _Place] | None) -> str | None:
            return None if turn is None else self.template(turn[1], turn[2])

        return _Prompt(label, str(at), convert(turns[0]) or "", convert(system), convert(prefill))

    def turns(
        self, messages: list[Mapping[str, Any]], at: _Place
    ) -> list[tuple[Any, Any, _Place]] | None:
        """Each message's role, text and place; None when one's content is not imported."""
        places = [_Place(at.path, line_of(m) or at.line) for m in messages]
        texts = [
            self.content(m.get("content"), place) for m, place in zip(messages, places, strict=True)
        ]
        if None in texts:
            return None
        return [
            (m.get("role"), text, place)
            for m, text, place in zip(messages, texts, places, strict=True)
        ]

    def content(self, content: Any, at: _Place) -> str | None:
        if isinstance(content, str):
            return content
        if not isinstance(content, list):
            self.note(str(at), "chat prompt: content is neither text nor blocks: not imported")
            return None
        texts = []
        for part in content:
            if not isinstance(part, Mapping) or part.get("type") != "text":
                kind = part.get("type") if isinstance(part, Mapping) else type(part).__name__
                self.note(str(at), f"chat prompt: a {kind!r} content block: not imported")
                return None
            for key in part:
                if key not in ("type", "text"):
                    where = _Place(at.path, line_of(part, key) or at.line)
                    self.note(
                        str(where), f"chat prompt: content block option {key!r}: not imported"
                    )
            texts.append(str(part.get("text", "")))
        return "\n".join(texts)

    def template(self, text: str, at: _Place) -> str:
        """promptfoo's Nunjucks as our template: ``{{ name }}`` is ``{name}``; any other
        expression or tag is named and kept as plain text."""
        pieces, start = [], 0
        for match in pattern(_NUNJUCKS).finditer(text):
            pieces.append(literal(text[start : match.start()]))
            expression = match.group(1)
            if expression is not None and pattern(_IDENTIFIER).fullmatch(expression):
                pieces.append("{" + expression + "}")
            else:
                where = at.down(text.count("\n", 0, match.start()))
                self.note(
                    where, f"Nunjucks {match.group(0)!r} cannot be mapped: kept as plain text"
                )
                pieces.append(literal(match.group(0)))
            start = match.end()
        pieces.append(literal(text[start:]))
        return "".join(pieces)

    # -- providers
    def providers(self, data: MarkedDict) -> list[tuple[str, dict[str, Any]]]:
        key = "providers" if "providers" in data else "targets"
        node = data.get(key)
        where = self.where(self.config, data, key)
        entries = node if isinstance(node, list) else [] if node is None else [node]
        found: list[tuple[str, str, dict[str, Any]]] = []
        for n, entry in enumerate(entries):
            at = display(self.config, self.line(key, n, line_of(data, key)))
            provider = self.provider(entry, at)
            if provider is not None:
                found.append(provider)
        if not found:
            self.note(
                where, "no Claude provider: the prompt versions use the project's default model"
            )
            return [("", {})]
        if len(found) == 1:
            return [("", found[0][2])]
        suffixes: list[str] = []
        for label, _, _ in found:  # two providers of one label are two versions
            suffix = "_" + _slug(label)
            suffixes.append(suffix if suffix not in suffixes else f"{suffix}_{len(suffixes) + 1}")
        return [(suffix, config) for suffix, (_, _, config) in zip(suffixes, found, strict=True)]

    def provider(self, entry: Any, at: str) -> tuple[str, str, dict[str, Any]] | None:
        """A Claude provider's label, model and model config; None (noted) for another."""
        options: Any = {}
        if isinstance(entry, Mapping) and "id" not in entry and len(entry) == 1:
            ((entry, options),) = entry.items()  # {"anthropic:messages:x": {config: ...}}
        elif isinstance(entry, Mapping):
            entry, options = entry.get("id"), entry
        options = options if isinstance(options, Mapping) else {}
        model = _claude_model(entry)
        if model is None:
            self.note(
                at, f"provider {entry!r} is not a Claude model: no prompt version made for it"
            )
            return None
        for key_ in options:
            if key_ not in ("id", "label", "config"):
                self.note(at, f"provider option {key_!r}: not imported")
        config = options.get("config") or {}
        model_config: dict[str, Any] = {"model": model}
        for name, value in config.items() if isinstance(config, Mapping) else ():
            if name in model_config_keys() and name != "model":
                model_config[name] = value
            else:
                self.note(at, f"provider config {name!r}: not imported")
        return str(options.get("label") or model), model, model_config

    # -- tests
    def tests(self, node: Any, path: Path, parent: Any, key: str) -> Iterator[tuple[Any, Path]]:
        """(test, the file it is in) for a ``tests`` value: a list, or a file reference."""
        where = self.where(path, parent, key)
        if node is None:
            return
        for n, entry in enumerate(node if isinstance(node, list) else [node]):
            if path == self.config and parent is self.data:  # the config's own list
                where = display(path, self.line(key, n, line_of(parent, key)))
            if isinstance(entry, Mapping):
                yield entry, path
            elif isinstance(entry, str) and entry.startswith("file://"):
                files = self.referenced(entry, path.parent)
                if not files:
                    self.note(where, f"tests {entry!r}: no file matches: not imported")
                for file in files:
                    yield from self.test_file(file, entry, where)
            else:
                self.note(
                    where,
                    f"tests {str(entry)[:80]!r}: not imported (only files and inline tests are)",
                )

    def test_file(self, path: Path, ref: str, where: str) -> Iterator[tuple[Any, Path]]:
        suffix = path.suffix.lower()
        if suffix in CODE_SUFFIXES or ":" in path.name:
            self.note(where, f"tests {ref!r}: tests made by code: not imported")
            return
        if not path.is_file():
            raise PromptevalError(f"{where}: tests {ref!r}: no such file {display(path)}")
        if suffix == ".csv":
            yield from ((row, path) for row in self.csv_tests(path))
        elif suffix == ".jsonl":
            for number, line in enumerate(self.read_text(path).splitlines(), 1):
                if line.strip():
                    yield self.json_line(line, path, number), path
        elif suffix in (".yaml", ".yml", ".json"):
            if path.resolve() in self.reading:
                raise PromptevalError(f"{where}: tests {ref!r}: names a file it is read from")
            self.reading.add(path.resolve())
            yield from self.tests(self.load(path), path, None, "")
            self.reading.discard(path.resolve())
        else:
            self.note(where, f"tests {ref!r}: a {suffix} file: not imported")

    def json_line(self, line: str, path: Path, number: int) -> MarkedDict:
        try:
            test = json.loads(line)
        except ValueError as exc:
            raise PromptevalError(f"not JSON: {exc}", path, number) from None
        if not isinstance(test, dict):
            raise PromptevalError(
                "expected a test: a JSON object with vars, assert, ...", path, number
            )
        return _marked(test, number)

    def csv_tests(self, path: Path) -> Iterator[MarkedDict]:
        """promptfoo's CSV: columns are vars but ``__expected*`` (an assertion each, as
        ``type:value``), ``__description`` and ``__threshold``; any other ``__`` column is
        named once, at the header."""
        reader = csv.reader(io.StringIO(self.read_text(path), newline=""))
        try:
            header = next(reader, None)
            line = reader.line_num + 1
            for row in reader:
                yield self.csv_test(path, line, header or [], row)
                line = reader.line_num + 1
        except csv.Error as exc:
            raise PromptevalError(f"not CSV: {exc}", path, reader.line_num) from None

    def csv_test(self, path: Path, line: int, header: list[str], row: list[str]) -> MarkedDict:
        test: dict[str, Any] = {"vars": {}, "assert": []}
        for column, value in zip(header, row, strict=False):
            if column.startswith("__expected"):
                if value.strip():
                    test["assert"].append(_marked(_from_string(value), line))
            elif column == "__description" and value:
                test["description"] = value
            elif column == "__threshold" and value.strip():
                test["threshold"] = _number(value) if _number(value) is not None else value
            elif column.startswith("__"):
                if column not in ("__description", "__threshold"):  # named once, at the header
                    self.note(display(path, 1), f"column {column!r}: not imported")
            else:
                test["vars"][column] = value
        return _marked(test, line)

    def scenarios(self, data: MarkedDict, default: Any) -> Iterator[tuple[MarkedDict, Path]]:
        node = data.get("scenarios") or []
        for scenario in node if isinstance(node, list) else [node]:
            if not isinstance(scenario, Mapping):
                self.note(
                    self.where(self.config, data, "scenarios"),
                    f"scenario {str(scenario)[:80]!r}: not imported (inline it)",
                )
                continue
            yield from self.scenario(scenario, default)

    def scenario(
        self, scenario: Mapping[str, Any], default: Any
    ) -> Iterator[tuple[MarkedDict, Path]]:
        """A scenario's tests, each under each of its configs and then defaultTest."""
        for key in scenario:
            if key not in ("description", "config", "tests"):
                self.note(
                    self.where(self.config, scenario, key),
                    f"scenario option {key!r}: not imported",
                )
        configs = self.scenario_configs(scenario)
        for test, path in list(self.tests(scenario.get("tests"), self.config, scenario, "tests")):
            for config in configs:
                merged = self.merged(config, self.config, test, path)
                merged = self.merged(default, self.config, merged, path)
                description = " ".join(
                    str(d) for d in (scenario.get("description"), test.get("description")) if d
                )
                if description:
                    merged["description"] = description
                yield merged, path

    def scenario_configs(self, scenario: Mapping[str, Any]) -> list[Mapping[str, Any]]:
        configs = scenario.get("config") or [{}]
        configs = configs if isinstance(configs, list) else [configs]
        for config in configs:
            if not isinstance(config, Mapping):
                where = self.where(self.config, scenario, "config")
                self.note(where, f"scenario config {str(config)[:80]!r}: not imported")
        configs = [c for c in configs if isinstance(c, Mapping)]
        for config in configs:
            self.defaults(config, "scenario config")
        return configs

    def defaults(self, node: Mapping[str, Any], what: str) -> None:
        """Name what of a defaultTest (or a scenario's config) its tests do not take."""
        for key in node:
            if key not in (*TEST_KEYS, "options"):
                self.note(self.where(self.config, node, key), f"{what} field {key!r}: not imported")
        if not isinstance(node.get("vars") or {}, Mapping):
            where = self.where(self.config, node, "vars")
            self.note(where, f"{what} vars: expected a mapping: not imported")
        self.options(node, self.config, what)

    def options(self, node: Mapping[str, Any], path: Path, what: str) -> None:
        """Name each of a test's ``options``: none is imported."""
        options, where = node.get("options") or {}, self.where(path, node, "options")
        for key in options if isinstance(options, Mapping) else [str(options)[:80]]:
            why = " (its assertions check the answer as it comes)" if key == "transform" else ""
            self.note(where, f"{what} option {key!r}: not imported{why}")

    def merged(self, default: Any, at: Path, test: Mapping[str, Any], path: Path) -> MarkedDict:
        """A test with defaultTest (or a scenario's config, from ``at``) under it: vars
        merged, the defaults' assertions first as promptfoo runs them, each with its file."""
        default = default if isinstance(default, Mapping) else {}
        read = {k: v for k, v in default.items() if k in TEST_KEYS}  # the rest is named there
        merged = _marked({**read, **test}, line_of(test) or 0)
        merged.key_lines = getattr(test, "key_lines", {})
        under, own = default.get("vars") or {}, test.get("vars") or {}
        under = under if isinstance(under, Mapping) else {}  # named there
        merged["vars"] = {**under, **own} if isinstance(own, Mapping) else own
        merged["assert"] = [
            *_located(default.get("assert"), at),
            *_located(test.get("assert"), path),
        ]
        return merged

    def cases(self, test: MarkedDict, path: Path, count: int) -> list[dict[str, Any]]:
        at = display(path, test.line or None)
        for key in test:
            if key not in (*TEST_KEYS, "options"):
                self.note(self.where(path, test, key), f"test field {key!r}: not imported")
        self.options(test, path, "test")
        variables = self.variables(test.get("vars") or {}, path, at)
        cases = []
        for n, values in enumerate(_combinations(variables), count + 1):
            case: dict[str, Any] = {"id": f"{self.stem}_{n:03d}"}
            if test.get("description"):
                case["description"] = str(test["description"])
            case["threshold"] = self.threshold(test.get("threshold"), at)
            case["input"] = {k: block(v) if isinstance(v, str) else v for k, v in values.items()}
            found = (self.assertion(entry, values, file, at) for entry, file in test["assert"])
            checks = [a for a in found if a is not None]
            if checks:
                case["assert"] = checks
            cases.append(case)
        return cases

    def threshold(self, threshold: Any, at: str) -> Any:
        """A test's threshold as ours (0 when none is imported); how it differs, noted."""
        if threshold is not None and not _is_share(threshold):
            self.note(
                at, f"test threshold {threshold!r}: expected a number from 0 to 1: not imported"
            )
        elif threshold is not None:
            self.note(
                at,
                "test threshold: promptfoo passes a test whose weighted score reaches it; "
                "here every assertion must pass too",
            )
        return threshold if _is_share(threshold) else 0

    def variables(self, node: Any, path: Path, at: str) -> dict[str, Any]:
        if not isinstance(node, Mapping):
            self.note(at, "vars: expected a mapping: not imported")
            return {}
        found = {}
        for name, value in node.items():
            if isinstance(value, str) and value.startswith("file://"):
                files = self.referenced(value, path.parent)
                suffix = files[0].suffix.lower() if len(files) == 1 else ""
                if len(files) != 1 or suffix in CODE_SUFFIXES or not files[0].is_file():
                    self.note(
                        at,
                        f"var {name!r} = {value!r}: not read (a glob, code or no file): kept "
                        "as text",
                    )
                elif suffix in (".json", ".yaml", ".yml"):
                    value = self.load(files[0])
                else:
                    value = self.read_text(files[0])
            found[str(name)] = value
        return found

    # -- assertions
    def assertion(
        self, entry: Any, values: Mapping[str, Any], path: Path, at: str
    ) -> dict[str, Any] | None:
        where = self.where(path, entry) if isinstance(entry, MarkedDict) else at
        if not isinstance(entry, Mapping) or not isinstance(entry.get("type"), str):
            self.note(
                where,
                f"assertion {str(entry)[:80]!r}: expected a mapping with a type: not imported",
            )
            return None
        kind = entry["type"]
        mapped = self.mapped(kind, entry, values, where)
        if mapped is None:
            return None
        for key in entry:
            if key in ("type", "value", "threshold", "weight"):
                continue
            reason = {
                "metric": "results name each assertion by its type",
                "transform": "not imported (checked on the answer as it comes)",
            }.get(key, "not imported")
            self.note(where, f"assertion {kind!r}: option {key!r} ({entry[key]!r:.60}): {reason}")
        weight = entry.get("weight")
        if isinstance(weight, int | float) and not isinstance(weight, bool) and weight >= 0:
            mapped["weight"] = weight
        elif weight is not None:
            self.note(where, f"assertion {kind!r}: weight {weight!r}: expected a number >= 0")
        try:
            parse_assertions([mapped], (path, None), "assertion")
        except PromptevalError as exc:
            why = exc.message.removeprefix("assertion, assert[0]: ")
            self.note(where, f"assertion {kind!r}: {why}: not imported")
            return None
        return mapped

    def mapped(
        self, kind: str, entry: Mapping[str, Any], values: Mapping[str, Any], where: str
    ) -> dict[str, Any] | None:
        negated = kind.startswith("not-")
        base = kind[4:] if negated else kind
        value = _rendered(entry.get("value"), values)
        threshold = entry.get("threshold")
        if self.unfilled(kind, base, value, where):
            return None
        if base in CODE_TYPES and not negated and isinstance(value, str):
            return self.mapped_code(kind, value, where)
        if base in LIMITS and not negated:
            if not isinstance(threshold, int | float) or isinstance(threshold, bool):
                self.note(where, f"assertion {kind!r} without a threshold: not imported")
                return None
            return {"type": LIMITS[base], "value": threshold}
        if base == "llm-rubric" and not negated:
            return self.mapped_judge(kind, value, threshold, where)
        return self.mapped_same(kind, base, negated, value, where)

    def mapped_same(
        self, kind: str, base: str, negated: bool, value: Any, where: str
    ) -> dict[str, Any] | None:
        """An assertion one of ours does as promptfoo's does, or None (noted)."""
        if base not in SAME or (
            negated and base in ("is-json", "contains-json") and value is not None
        ):
            known = (*SAME, *LIMITS, *NAMED_ONLY, *CODE_TYPES, "llm-rubric")
            why = "has no counterpart here" if base in known else "is no promptfoo type"
            hint = "" if base in known else suggestion(base, known)
            self.note(where, f"assertion {kind!r} {why}: not imported{hint}")
            return None
        ours = ("not_" if negated else "") + SAME[base]
        if base in ("is-json", "contains-json"):
            return self.mapped_json(base, ours, value)
        return self.mapped_value(kind, base, ours, value, where)

    def unfilled(self, kind: str, base: str, value: Any, where: str) -> bool:
        """Whether the value holds Nunjucks the test's vars do not fill (noted)."""
        if base in CODE_TYPES:
            return False  # code: named by mapped_code unless it is one of the simple forms
        texts = value if isinstance(value, list) else [value]
        left = [pattern(_NUNJUCKS).search(v) for v in texts if isinstance(v, str)]
        unfilled = next((m.group(0) for m in left if m is not None), None)
        if unfilled is None:
            return False
        self.note(
            where,
            f"assertion {kind!r}: Nunjucks {unfilled!r} in its value, which the test's vars "
            "do not fill: not imported",
        )
        return True

    def mapped_code(self, kind: str, value: str, where: str) -> dict[str, Any] | None:
        found = _code(value)
        if found is None:
            self.note(
                where,
                f"assertion {kind!r} ({value.strip()[:60]!r}): code is not translated: not "
                "imported",
            )
        return found

    def mapped_judge(self, kind: str, value: Any, threshold: Any, where: str) -> dict[str, Any]:
        judged: dict[str, Any] = {"type": "judge", "value": value}
        judged["threshold"] = threshold if _is_share(threshold) else JUDGE_THRESHOLD
        if threshold is not None and not _is_share(threshold):
            self.note(
                where,
                f"assertion {kind!r}: threshold {threshold!r}: expected a number from 0 to "
                f"1; the judge's passes at {JUDGE_THRESHOLD}",
            )
        return judged

    def mapped_json(self, base: str, ours: str, value: Any) -> dict[str, Any]:
        if isinstance(value, str) and value.startswith("file://"):
            files = self.referenced(value, self.base)
            value = self.load(files[0]) if len(files) == 1 and files[0].is_file() else value
        if base == "is-json" and value is not None:
            ours = "json_schema"
        return {"type": ours} if value is None else {"type": ours, "value": value}

    def mapped_value(
        self, kind: str, base: str, ours: str, value: Any, where: str
    ) -> dict[str, Any] | None:
        if base in LISTS and isinstance(value, str):
            value = [v.strip() for v in value.split(",")]
        elif isinstance(value, int | float) and not isinstance(value, bool):
            value = str(value)
        if base == "equals" and not isinstance(value, str):
            self.note(
                where, f"assertion {kind!r} with a {type(value).__name__} value: not imported"
            )
            return None
        return {"type": ours, "value": value}


def _split_prompts(text: str) -> list[tuple[int, str]]:
    """A text file's prompts, each with its first line: the parts between lines of ``---``
    (promptfoo's separator), without their blank lines at either end."""
    parts: list[tuple[int, list[str]]] = [(1, [])]
    for number, line in enumerate(text.splitlines(keepends=True), 1):
        if line.strip() == "---":
            parts.append((number + 1, []))
        else:
            parts[-1][1].append(line)
    found = []
    for first, lines in parts:
        while lines and not lines[0].strip():
            lines.pop(0)
            first += 1
        if "".join(lines).strip():
            found.append((first, "".join(lines).strip("\n")))
    return found


#: a CSV cell's prefixes that name an assertion apart from promptfoo's ``type:value``
_CSV_PREFIXES = {
    "javascript:": "javascript",
    "fn:": "javascript",
    "eval:": "javascript",
    "grade:": "llm-rubric",
    "llm-rubric:": "llm-rubric",
    "python:": "python",
}


def _from_string(expected: str) -> dict[str, Any]:
    """A CSV ``__expected`` cell as promptfoo reads it: ``type:value``, ``not-type:value``,
    ``type(threshold):value``, ``grade:``/``llm-rubric:``, ``fn:``/``javascript:``,
    ``python:``; anything else is ``equals``."""
    for prefix, kind in _CSV_PREFIXES.items():
        if expected.startswith(prefix):
            value = expected[len(prefix) :]
            return {"type": kind, "value": value if kind == "llm-rubric" else value.strip()}
    match = pattern(r"(?s)(not-)?([a-z][a-z0-9-]*)(?:\((\d+(?:\.\d+)?)\))?(?::(.*))?").fullmatch(
        expected
    )
    if match is None or (
        match.group(4) is None and match.group(2) not in ("is-json", "contains-json")
    ):
        return {"type": "equals", "value": expected}
    negation, kind, threshold, value = match.groups()
    if kind not in (*SAME, *LIMITS, *NAMED_ONLY):
        return {"type": "equals", "value": expected}
    found: dict[str, Any] = {"type": (negation or "") + kind, "value": value or None}
    if kind in LISTS and value is not None:
        found["value"] = [v.strip() for v in value.split(",")]
    if threshold is not None:
        found["threshold"] = float(threshold)
    return found


def _rendered(value: Any, variables: Mapping[str, Any]) -> Any:
    """An assertion's value with ``{{ name }}`` filled from the test's vars, as promptfoo
    renders it; anything else is left as it stands."""
    if isinstance(value, list):
        return [_rendered(v, variables) for v in value]
    if not isinstance(value, str):
        return value

    def fill(match: Any) -> str:
        name = match.group(1)
        if name is not None and pattern(_IDENTIFIER).fullmatch(name) and name in variables:
            found = variables[name]
            return found if isinstance(found, str) else json.dumps(found)
        return str(match.group(0))

    return pattern(_NUNJUCKS).sub(fill, value)


def _combinations(variables: Mapping[str, Any]) -> list[dict[str, Any]]:
    """promptfoo runs a test once for each value of a var that is a list of strings."""
    names = list(variables)
    choices = [
        v if isinstance(v, list) and v and isinstance(v[0], str) else [v]
        for v in variables.values()
    ]
    total = 1
    for options in choices:
        total *= len(options)
        if total > MAX_CASES:
            raise PromptevalError(f"the list vars make more than {MAX_CASES} cases: not imported")
    return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*choices)]


def _claude_model(provider: Any) -> str | None:
    if not isinstance(provider, str):
        return None
    for prefix in ("anthropic:messages:", "anthropic:"):
        rest = provider.removeprefix(prefix)
        if rest != provider and rest.startswith("claude") and NAME.match(rest):
            return rest
    return None


def _stem(config: Path) -> str:
    """The name the versions and case ids start with: the config's, or its folder's for a
    ``promptfooconfig*.yaml``."""
    name = config.name.rsplit(".", 1)[0]
    if name.startswith("promptfooconfig"):
        rest = name.removeprefix("promptfooconfig").strip(".-_")
        folder = config.resolve().parent.name
        name = folder + ("_" + rest if rest else "")
    return _slug(name) or "promptfoo"


def _slug(text: str) -> str:
    kept = "".join(c if c.isascii() and (c.isalnum() or c in "_.+-") else "_" for c in text)
    return kept.strip("_.-+")[:60]


def _label(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= 60 else line[:57] + "..."


def _item_lines(text: str) -> dict[str, list[int]]:
    """Each top-level list's item lines, for items that are strings (``parse_yaml`` keeps
    the lines of mappings only). The text has been parsed: no alias bomb is in it."""
    import yaml

    from pytest_prompteval.core.yamlload import SafeLoader

    try:
        node = yaml.compose(text, Loader=SafeLoader)
    except yaml.YAMLError:
        return {}
    if not isinstance(node, yaml.MappingNode):
        return {}
    return {
        str(key.value): [item.start_mark.line + 1 for item in value.value]
        for key, value in node.value
        if isinstance(value, yaml.SequenceNode)
    }


def _located(entries: Any, path: Path) -> list[tuple[Any, Path]]:
    """Each assertion of a list with the file it is written in (a lone one as a list; one
    merged before keeps its own)."""
    if entries is None:
        return []
    listed = entries if isinstance(entries, list) else [entries]
    return [entry if isinstance(entry, tuple) else (entry, path) for entry in listed]


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _is_share(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value <= 1


def _marked(data: dict[str, Any], line: int) -> MarkedDict:
    node = MarkedDict(data)
    node.line, node.key_lines = line, {}
    return node


def promptfoo_project(config: Path) -> PromptfooProject:
    """The prompt versions, the case file's data and the notes for ``config``."""
    return _Importer(config).run()
