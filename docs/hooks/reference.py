"""The reference pages, generated from the code when the site is built (an mkdocs hook).

A page holds markers such as ``<!-- reference: settings -->``; ``on_page_markdown`` puts in
their place what ``render(name)`` writes from the code: the settings table, the fields every
loader accepts, the assertion types, the exit codes, the results file's fields and the
``prompteval`` commands' options. What the code does not say in words (what a case field is
for, say) is described here, and a name the code has that is not described here, or a
description of a name the code no longer has, stops the build: the reference cannot drift
from the code. ``tests/test_docs.py`` calls ``render`` directly.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any

import pytest

from pytest_prompteval.cli import build_parser
from pytest_prompteval.core import result as results
from pytest_prompteval.core.ablation import ABLATE_KEYS, ABLATION_FIELDS
from pytest_prompteval.core.cases import CASE_FIELDS, FILE_FIELDS
from pytest_prompteval.core.envspec import ENVIRONMENT_KEYS
from pytest_prompteval.core.pricing import PRICE_FIELDS
from pytest_prompteval.core.prompts import EXTRA_BODY_PARAMS, PROMPT_FIELDS, model_config_keys
from pytest_prompteval.core.repocases import REPO_KEYS
from pytest_prompteval.engine.settings import SETTINGS, Setting
from pytest_prompteval.interaction.agent import RULE_KEYS, SIMULATOR_KEYS, TOOL_KEYS
from pytest_prompteval.interaction.strategies import NAMES as STRATEGIES
from pytest_prompteval.report import gates
from pytest_prompteval.scoring import assertions
from pytest_prompteval.scoring.code.spec import TAGS, TEST_KINDS
from pytest_prompteval.scoring.judge import DIMENSION_FIELDS, TEMPLATE_FIELDS

MARKER = re.compile(r"<!-- reference: ([a-z-]+) -->")


class Undescribed(Exception):
    """The code and this file's descriptions disagree: a name without words, or words
    for a name the code no longer has."""


def described(names: Iterable[str], words: Mapping[str, str], what: str) -> list[tuple[str, str]]:
    """``(name, description)`` for every name the code has, in the code's order."""
    names = list(names)
    missing = [n for n in names if n not in words]
    stale = [n for n in words if n not in names]
    if missing or stale:
        raise Undescribed(
            f"{what}: describe {missing} in docs/hooks/reference.py"
            if missing
            else f"{what}: {stale} described in docs/hooks/reference.py but not in the code"
        )
    return [(n, words[n]) for n in names]


def table(header: Iterable[str], rows: Iterable[Iterable[str]]) -> str:
    header = list(header)
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def code(text: object) -> str:
    return f"`{text}`"


def field_table(names: Collection[str], words: Mapping[str, str], what: str) -> str:
    ordered = sorted(names) if isinstance(names, (set, frozenset)) else list(names)
    return table(["field", "meaning"], ((code(n), d) for n, d in described(ordered, words, what)))


# --- settings -------------------------------------------------------------------------------


def _allowed(setting: Setting) -> str:
    """What the setting's parser accepts, in the words of its own error message."""
    if setting.flag:
        return "a flag (no value)"
    if setting.ini_type == "linelist":
        return "folders, one per line in the ini"
    if setting.ini_type == "args":
        return "names separated by spaces"
    try:
        setting.parse("\x00not a value")
    except ValueError as exc:
        return str(exc)
    return "text"


def _default(setting: Setting) -> str:
    value = setting.default
    if value is None or value == ():
        return "-"
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, tuple):
        return ", ".join(code(v) for v in value)
    return code(value)


def _anchor(setting: Setting) -> str:
    return str(setting.option or setting.ini).lstrip("-")


def settings() -> str:
    def linked(name: str | None, setting: Setting) -> str:
        return f"[{code(name)}](#{_anchor(setting)})" if name else ""

    overview = table(
        ["option", "ini key", "environment"],
        ((linked(s.option, s), linked(s.ini, s), linked(s.env, s)) for s in SETTINGS),
    )
    parts = [overview]
    for setting in SETTINGS:
        title = setting.option or setting.ini
        facts = []
        if setting.option:
            usage = " ".join(filter(None, (setting.option, setting.metavar)))
            facts.append(f"option {code(usage)}")
            facts += [f"alias {code(alias)}" for alias in setting.aliases]
        if setting.ini:
            facts.append(f"ini {code(setting.ini)}")
        if setting.env:
            facts.append(f"environment {code(setting.env)}")
        facts.append(f"default {_default(setting)}")
        facts.append(f"allowed: {_allowed(setting)}")
        if setting.repeat:
            facts.append("repeatable")
        notes = []
        if not setting.from_files:
            notes.append(
                "Weakens safety: taken only from the command line (or `-o`, or "
                "`PYTEST_ADDOPTS`), never from an ini file or its `addopts`."
            )
        if setting.path:
            notes.append(
                "From a file (an ini key, or `addopts`) it must resolve inside the rootdir; "
                "the command line may name any path."
            )
        parts.append(
            f"### {code(title)} {{ #{_anchor(setting)} }}\n\n{setting.help}.\n\n"
            + "; ".join(facts)
            + ".\n"
            + "".join(f"\n{n}\n" for n in notes)
        )
    return "\n".join(parts)


# --- case and prompt files --------------------------------------------------------------------

CASE_WORDS = {
    "agent_may_change": "repository cases: test infrastructure paths the fix may change "
    "(kept as the agent left them)",
    "assert": "assertions on the answer, [listed below](#assertions)",
    "atol": "code cases: absolute tolerance for numbers in io tests' outputs (and 1e-7 relative)",
    "audience": "the audience the automatic scorer picks `expected_topics_by_audience` with",
    "category": "a label: becomes a marker and a row of the accuracy tables",
    "common_mistakes": "the public Compiler Explorer cases' field, kept for templates and hooks",
    "description": "what the case checks, for people",
    "difficulty": "`beginner`, `intermediate` or `advanced` (aliases such as `expert`): a "
    "marker, and the length range of the automatic scorer",
    "entry_point": "makes it a code case: the function the tests call (none for a program)",
    "environment": "repository cases: what the tests run with ([keys below](#environment))",
    "expected_topics": "topics the answer should cover (the automatic scorer and the judge)",
    "expected_topics_by_audience": "`expected_topics` per `audience`, when none are given",
    "explanation_type": "the public Compiler Explorer cases' field, kept for templates and hooks",
    "fail_to_pass": "repository cases: tests the fix must make pass",
    "id": "letters, digits, `_ . + -`; unique across all case files",
    "input": "the case's data: sent as a JSON block after the user prompt, and placeholders",
    "item_timeout": "agent cases: seconds the item's tool calls may run in all",
    "key_terms": "terms the completeness dimension looks for (default: `input.asm` mnemonics)",
    "kind": "`code` (also implied by `entry_point` or `tests`) or `repo` (also implied by `repo`)",
    "language": "code cases: the language of the answer's code (`python`, the only one the "
    "sandbox runs yet)",
    "max_tool_calls": "agent cases: tool calls one turn may ask for",
    "memory_mb": "repository cases: the sandbox's memory, all its processes (default 2048)",
    "min_pass": "samples that must pass: a count (`4`) or a share (`0.8`)",
    "notes": "free text for people",
    "pass_to_pass": "repository cases: tests that must still pass",
    "properties": "code cases: property tests against the reference ([keys below](#code-cases))",
    "quality": "a label: becomes a marker and a row of the accuracy tables",
    "reference": "code cases: a correct solution",
    "reference_patch": "repository cases: the known fix, a patch file",
    "repo": "repository cases: a folder of the project, or `{git: PATH, ref: REF}`",
    "review_template": "the judge's rubric for this case",
    "samples": "samples of this case (overrides `--prompteval-samples`)",
    "tags": "more markers",
    "test_command": "repository cases: the command that runs the tests",
    "test_patch": "repository cases: applied before the verdict, never shown to the agent",
    "tests": "code cases: the tests ([kinds below](#code-cases))",
    "threshold": "the score an item needs to pass (overrides `prompteval_threshold`)",
    "test_setup": "code cases: Python source run before each assert, check and unittest test, "
    "in its namespace",
    "timeout": "code cases: CPU seconds a sample may run; repository cases: seconds per command",
    "tool_results": "agent cases: scripted tool results ([keys below](#agents))",
    "tools": "agent cases: tools added to the prompt version's",
    "turns": "agent cases: user turns sent, in order, each time the agent ends its turn",
    "user_simulator": "agent cases: a second Claude playing the user ([keys below](#agents))",
    "vars": "extra `{placeholder}` values for the templates",
}
FILE_WORDS = {"cases": "the list of cases", "description": "what the file's cases are about"}
PROMPT_WORDS = {
    "applies_to": "limits the version to some cases: `{markers: EXPR, ids: [PATTERN]}`",
    "assert": "assertions for every case the version runs",
    "assistant_prefill": "the start of the answer, sent as a final assistant turn",
    "audience_levels": "the newer Compiler Explorer format's section, kept for hooks",
    "description": "what changed and why, for people",
    "explanation_types": "the newer Compiler Explorer format's section, kept for hooks",
    "include_input": "send the case's `input` as a JSON block (default true)",
    "max_steps": "agents: model calls per conversation (default 10)",
    "model": "the newer Compiler Explorer format's `{name, max_tokens, temperature}`: read "
    "as `model_config`",
    "model_config": "the model and API parameters ([keys below](#model_config))",
    "name": "a display name",
    "strategy": "code cases: `self_verify`, `refine` or `best_of_n` ([keys below](#strategies))",
    "system_prompt": "the system prompt template",
    "tool_choice": "agents: sent as it is",
    "tools": "agents: the tools the model may call",
    "user_prompt": "the user turn's template",
}
ASSERTION_WORDS = {
    "contains": "the answer contains the string",
    "not_contains": "the answer lacks the string",
    "icontains": "the answer contains the string, in any case",
    "equals": "the answer, stripped, equals the value",
    "judge": "a question to the judge; score >= threshold (`votes:` for a majority)",
    "baseline": "the judge finds the answer at least as good as the reference given",
    "regex": "the RE2 pattern matches",
    "not_regex": "the RE2 pattern does not match",
    "max_length": "characters <= value",
    "min_length": "characters >= value",
    "max_tokens": "output tokens <= value",
    "max_latency_ms": "latency <= value",
    "max_cost_usd": "cost <= value",
    "is_json": "the answer (or its first json block) is JSON",
    "json_schema": "the JSON matches the schema (draft 2020-12)",
    "json_field": "a field of the JSON `equals`, is `in`, `matches` or is `approx` a value",
    "tool_called": "agents: the tool was called (`input:` a subset of its input)",
    "tool_not_called": "agents: the tool was never called",
    "tool_sequence": "agents: the calls made, compared by `mode:`",
    "max_steps": "agents: the conversation took at most this many steps",
    "file_exists": "repository tasks: a file or link matches the glob",
    "file_not_exists": "repository tasks: none matches the glob",
    "file_matches": "repository tasks: the file matches `{path, regex}`",
    "file_unchanged": "repository tasks: the file is as the snapshot had it",
    "topics": "the automatic topic check on the listed topics (default: the case's)",
    "starts_with": "the answer, stripped of leading space, starts with the string",
    "contains_any": "the answer contains at least one of the listed strings",
    "contains_all": "the answer contains every listed string",
    "icontains_any": "`contains_any`, in any case",
    "icontains_all": "`contains_all`, in any case",
    "contains_json": "a JSON value somewhere in the answer (matching the schema given, if any)",
}
# each not_<type> turns a yes-or-no check round
ASSERTION_WORDS.update(
    {
        kind: f"`{kind[4:]}` turned round"
        for kind in assertions.NEGATED_TYPES
        if kind not in ASSERTION_WORDS
    }
)
OPTION_WORDS = {
    "type": "the assertion type (or `{TYPE: VALUE}` as a shorthand)",
    "value": "what the type checks against",
    "weight": "its weight in the item's score (default 1)",
    "threshold": "the score a scored type needs (default: the item's threshold)",
    "include_prefill": "check the prefill and the answer together",
    "input": "`tool_called`: a subset of the call's input",
    "mode": "`tool_sequence`: " + ", ".join(assertions.SEQUENCE_MODES),
    "votes": "`judge`, `baseline`: an odd number of votes (at most "
    f"{assertions.MAX_VOTES}), the majority decides",
}
FIELD_CHECK_WORDS = {
    "path": "a JSON Pointer (`/labels/0`) or dotted path (`labels.0`)",
    "equals": "any JSON value, compared exactly (`true` is not `1`)",
    "in": "a list of allowed values",
    "matches": "an RE2 pattern, searched",
    "approx": "a number",
    "tolerance": "`approx`'s relative tolerance (default 1e-6)",
}
FILE_MATCH_WORDS = {"path": "the file, relative to the repository", "regex": "an RE2 pattern"}
TOOL_WORDS = {
    "name": "the tool's name",
    "description": "what the model is told it does",
    "input_schema": "the JSON Schema of its input",
    "cache_control": "sent as it is",
    "type": "an API tool's type (`bash_20250124`, ...)",
}
RULE_WORDS = {
    "tool": "the tool the rule answers",
    "input": "a subset of the call's input; `{regex: ...}` on a string",
    "result": "the result sent (a mapping or list as JSON text, a string as it is)",
    "error": "sent as a `tool_result` with `is_error: true`",
}
SIMULATOR_WORDS = {
    "instructions": "who the user is and what they want",
    "max_turns": "turns it may send (default 4, at most 50)",
    "model": "its model (default: the agent's)",
    "max_tokens": "its answers' length",
}
ENVIRONMENT_WORDS = {
    "python": "an interpreter on `PATH` (default: the one running pytest)",
    "requirements": "requirements, names with version specifiers",
    "requirements_file": "a requirements file instead",
    "pythonpath": "folders of `/repo` put first on `sys.path`",
    "install": "a command run in the sandbox on the item's copy",
    "test_command": "the command that runs the tests; the listed ids are appended",
}
REPO_WORDS = {"git": "a clone's path", "ref": "the commit, branch or tag"}
TEST_WORDS = {
    "assert": "an assert statement",
    "check": "HumanEval style: `def check(candidate): ...`; source without a `check` runs as "
    "a script",
    "args": "arguments; with `expected:` the return value, with `expected_any: [...]` any of "
    "them, with neither the reference's output",
    "stdin": "a program's input; with `stdout:` what it must print (the case is a program: "
    "all its tests are `stdin`)",
    "unittest": "a module of `unittest.TestCase` classes: each test method is one test",
}
ABLATION_WORDS = {
    "ablate": "`{from: VERSION, remove: PART or [PARTS]}`",
    "name": "a display name",
    "description": "what is left out, for people",
}
ABLATE_WORDS = {
    "from": "the version it is derived from",
    "remove": "`system_prompt`, `tool NAME` or `tool_description NAME`, or a list of them",
}
TEMPLATE_WORDS = {
    "system_prompt": "the judge's system prompt",
    "evaluation_dimensions": "`{name: {weight, description}}`",
}
DIMENSION_WORDS = {"weight": "its weight in the overall score", "description": "what it rates"}
PRICE_WORDS = {
    "input": "USD per million input tokens",
    "output": "USD per million output tokens",
    "cache_write": "USD per million tokens written to the cache",
    "cache_read": "USD per million tokens read from the cache",
}


def case_files() -> str:
    return "\n".join(
        [
            "## Case files\n\nThe file's top level:\n",
            field_table(FILE_FIELDS, FILE_WORDS, "case file fields"),
            "Each case (`cases:` entry):\n",
            field_table(CASE_FIELDS, CASE_WORDS, "case fields"),
            "### Assertions\n\nEach `assert:` entry is `{type: T, value: V, ...}` or the "
            "shorthand `{T: V}`. Types:\n",
            field_table(assertions.BUILTIN_TYPES, ASSERTION_WORDS, "assertion types"),
            "Any custom scorer's name is a type too: its score must reach the threshold. "
            "Options:\n",
            field_table(
                [*assertions.OPTIONS, *dict.fromkeys(sum(assertions.TYPE_OPTIONS.values(), ()))],
                OPTION_WORDS,
                "assertion options",
            ),
            "`json_field` takes `path` and exactly one of "
            + ", ".join(code(c) for c in assertions.FIELD_CHECKS)
            + ":\n",
            field_table(assertions.FIELD_KEYS, FIELD_CHECK_WORDS, "json_field keys"),
            "`file_matches` takes:\n",
            field_table(assertions.FILE_MATCH_KEYS, FILE_MATCH_WORDS, "file_matches keys"),
            "### Code cases\n\nEach `tests:` entry is one of these, tagged "
            + " or ".join(code(t) for t in TAGS)
            + " (`tag:`, default `basic`):\n",
            field_table(TEST_KINDS, TEST_WORDS, "code test kinds"),
            "`properties:` takes `args` (hypothesis strategies, one per argument) and "
            "`examples`, or `file` (a Python file with `strategies()`).\n",
            "### Agents\n\nA tool (in `tools:`, the case's or the prompt version's):\n",
            field_table(TOOL_KEYS, TOOL_WORDS, "tool keys"),
            "A `tool_results:` rule:\n",
            field_table(RULE_KEYS, RULE_WORDS, "tool_results keys"),
            "`user_simulator:`:\n",
            field_table(SIMULATOR_KEYS, SIMULATOR_WORDS, "user_simulator keys"),
            "### Repository tasks\n\n`repo: {git, ref}`:\n",
            field_table(sorted(REPO_KEYS), REPO_WORDS, "repo keys"),
            '<h3 id="environment">environment</h3>\n\n`environment:`:\n',
            field_table(ENVIRONMENT_KEYS, ENVIRONMENT_WORDS, "environment keys"),
        ]
    )


def prompt_files() -> str:
    sdk = sorted(model_config_keys())
    return "\n".join(
        [
            "## Prompt versions\n",
            field_table(PROMPT_FIELDS, PROMPT_WORDS, "prompt version fields"),
            "### model_config\n\n`model` plus what the installed anthropic SDK's "
            "`messages.create` names, and "
            + ", ".join(code(p) for p in sorted(EXTRA_BODY_PARAMS))
            + " (sent in `extra_body` when the SDK does not name them). With the SDK this "
            "site was built with: " + ", ".join(code(k) for k in sdk) + ".\n",
            "### Strategies\n\n`strategy: {name: NAME, ...}`, NAME one of "
            + ", ".join(code(s) for s in STRATEGIES)
            + " (`attempts:` for the first two, `n:` for `best_of_n`).\n",
            "### Ablations\n\nA version derived from another by removing a part:\n",
            field_table(ABLATION_FIELDS, ABLATION_WORDS, "ablation fields"),
            "`ablate:` takes:\n",
            field_table(ABLATE_KEYS, ABLATE_WORDS, "ablate keys"),
            "## Review templates\n\nEach template (ini `prompteval_review_templates`):\n",
            field_table(TEMPLATE_FIELDS, TEMPLATE_WORDS, "review template fields"),
            "Each dimension:\n",
            field_table(DIMENSION_FIELDS, DIMENSION_WORDS, "dimension fields"),
            "## Price tables\n\nEach model (ini `prompteval_prices`):\n",
            field_table(PRICE_FIELDS, PRICE_WORDS, "price fields"),
        ]
    )


# --- exit codes -------------------------------------------------------------------------------

EXIT_WORDS = {
    "OK": "tests mode: every item passed; gates mode: every gate passed",
    "TESTS_FAILED": "tests mode: an item failed or errored; gates mode: a gate failed "
    "(`--prompteval-fail-under`, `--prompteval-max-regression`, a `min_pass` verdict of the "
    "`--prompt` version, a significant regression on the primary endpoint, more newly "
    "failing cases than `prompteval_max_new_failures`), or an ordinary test of the same run "
    "failed",
    "INTERRUPTED": "pytest's own: interrupted (collection errors: a bad case file, a "
    "misspelt field)",
    "INTERNAL_ERROR": "pytest's own: internal error",
    "USAGE_ERROR": "pytest's own: a bad option or ini value (named, with what is allowed)",
    "NO_TESTS_COLLECTED": "pytest's own: no tests",
    "MAX_WARNINGS_ERROR": "pytest's own, in the pytest versions that have `--max-warnings`: "
    "more warnings than it allows (in gates mode too, on a run whose gates passed)",
    "NO_VERDICT": "gates mode only: items errored (API failure, missing recording, budget), "
    "so the gates cannot decide",
}


def exit_codes() -> str:
    codes = {e.name: int(e) for e in pytest.ExitCode}
    codes["NO_VERDICT"] = gates.NO_VERDICT
    # pytest's newer statuses, described whether or not the installed pytest has them
    words = {n: w for n, w in EXIT_WORDS.items() if n in codes}
    assert codes["OK"] == gates.PASSED and codes["TESTS_FAILED"] == gates.GATE_FAILED
    rows = [
        (str(codes[name]), code(name), meaning)
        for name, meaning in described(codes, words, "exit codes")
    ]
    return table(["exit", "name", "meaning"], sorted(rows, key=lambda r: int(r[0])))


# --- results files ----------------------------------------------------------------------------

ITEM_WORDS = {
    "case_id": "the case's id",
    "file": "its case file",
    "prompt": "the prompt version",
    "prompt_sha256": "the prompt file's SHA-256",
    "sample": "the sample's index",
    "samples": "samples drawn of the case",
    "category": "the case's label",
    "difficulty": "the case's label",
    "quality": "the case's label",
    "scorer": "what scored it: `automatic`, `claude`, `hybrid`, `assertions`, `execution`, "
    "`repo`, ...",
    "threshold": "the score it needed",
    "model": "the model that answered",
    "outcome": "`passed`, `failed`, `error` (not scored) or `skipped`",
    "passed": "whether it passed",
    "score": "its score, 0 to 1",
    "main_score": "the scorer's score before assertions were combined with it",
    "automatic_score": "the automatic scorer's score (hybrid: beside the judge's)",
    "dimensions": "the score per dimension",
    "missing_topics": "expected topics the answer missed",
    "incorrect_claims": "incorrect claims found",
    "assertions": "each assertion's outcome ([below](#assertions))",
    "input_tokens": "input tokens of its calls",
    "output_tokens": "output tokens",
    "cache_read_tokens": "tokens read from the prompt cache",
    "cache_write_tokens": "tokens written to it",
    "cost_usd": "the generation's cost",
    "latency_ms": "the call's latency",
    "answer_calls": "the answer's calls: the generation, a strategy's later ones, an agent's "
    "steps (`attempts` in older files)",
    "calls_replayed": "calls answered from recordings",
    "calls_live": "calls sent to the provider",
    "replayed": "whether the answer was replayed",
    "response": "the answer",
    "prefill": "the prefill it followed",
    "recording": "its recording's file",
    "unverified": "with `--prompteval-trusted-recordings`: what happened to an answer the "
    "trusted ref lacks",
    "stop_reason": "the API's stop reason",
    "request_id": "the API's request id",
    "error_type": "why it errored (its kind)",
    "error": "the error's message",
    "api_error_class": "the SDK's error class",
    "status": "the last HTTP status",
    "judged": "whether the judge scored it",
    "judge_input_tokens": "the judge's input tokens",
    "judge_output_tokens": "the judge's output tokens",
    "judge_cost_usd": "the judge's cost",
    "judge_calls": "the judge's calls",
    "user_input_tokens": "a simulated user's input tokens",
    "user_output_tokens": "a simulated user's output tokens",
    "user_cost_usd": "a simulated user's cost",
    "user_calls": "a simulated user's calls",
    "trajectory": "an agent's conversation ([below](#trajectory))",
    "repo": "a repository task's verdict ([below](#repo))",
    "min_pass": "the case's `min_pass`",
    "inline": "made by the `prompteval` fixture",
    "test": "the test that made an inline run",
}
JUDGE_WORDS = {
    "score": "the judge's overall score",
    "dimensions": "its score per dimension",
    "notes": "its notes",
    "repeats": "each repeat's overall score (`--prompteval-judge-repeats`)",
    "spread": "their standard deviation",
    "model": "the judge's model",
    "template": "the rubric",
}
EXECUTION_WORDS = {
    "error_class": "`syntax`, `runtime`, `logic`, `edge_case`, `timeout` or `resource_limit`",
    "first_failure": "the first failing test and its message",
    "tests_passed": "tests passed",
    "tests_total": "tests run",
    "code": "the code extracted from the answer",
    "extraction": "the rule that found it",
    "timeout_s": "its CPU time limit",
    "run_seconds": "the CPU time it ran",
}
CHECK_WORDS = {
    "type": "the assertion type",
    "passed": "whether it passed",
    "score": "its score",
    "weight": "its weight",
    "reason": "why",
    "field": "`json_field`: the field",
    "step": "a trajectory assertion's failing step (the call that broke it), when one did",
}
REPO_RESULT_WORDS = {
    "resolved": "every `fail_to_pass` passes and every `pass_to_pass` still does",
    "outcomes": "each listed test's outcome",
    "fail_to_pass": "the listed tests",
    "pass_to_pass": "the listed tests",
    "fail_to_pass_fixed": "share of `fail_to_pass` fixed",
    "pass_to_pass_kept": "share of `pass_to_pass` kept",
    "diff": "the agent's change against the snapshot (bounded to 1 MiB)",
    "restored": "test infrastructure the agent changed, restored for the verdict",
    "broken": "why the test command did not run the tests, when it did not",
    "output": "the end of the test run's output (up to 64 KiB), kept when unresolved",
}
TRAJECTORY_WORDS = {
    "steps": "each model call ([below](#step))",
    "max_steps": "the step limit",
    "hit_max_steps": "whether it was reached",
    "failure": "why the conversation ended badly, if it did",
    "user_calls": "a simulated user's calls",
    "user_turns": "the turns it sent",
}
STEP_WORDS = {
    "number": "the step's number",
    "stop_reason": "why the model stopped",
    "text": "what it said",
    "calls": "its tool calls ([below](#tool-call))",
    "turn": "the user turn sent after it",
    "simulated": "the turn came from the simulated user, not the case's script",
    "thinking": "the model's thinking before it answered, if it showed any",
    "input_tokens": "the call's input tokens (absent in results written before they were kept)",
    "output_tokens": "the call's output tokens",
    "latency_ms": "the call's latency",
    "cost_usd": "the call's cost",
    "replayed": "whether the call was replayed from a recording",
}
CALL_WORDS = {
    "name": "the tool",
    "input": "its input",
    "result": "what answered it",
    "is_error": "whether that was an error",
    "id": "the call's id",
}


def _fields(cls: type, skip: Collection[str] = ()) -> list[str]:
    return [f.name for f in dataclasses.fields(cls) if f.name not in skip]


def results_format() -> str:
    item = _fields(results.ItemResult, ("judge", "execution", "extra"))
    judge = [results.JudgeResult.PREFIX + n for n in _fields(results.JudgeResult)]
    return "\n".join(
        [
            f"Format {results.SCHEMA_VERSION}. Each result (a line of the journal, an entry "
            "of `results`, a test's `prompteval` property):\n",
            field_table(item, ITEM_WORDS, "result fields"),
            "With a judge, its verdict as `judge_` fields:\n",
            field_table(
                judge,
                {results.JudgeResult.PREFIX + k: v for k, v in JUDGE_WORDS.items()},
                "judge fields",
            ),
            "A code case's run, as fields of the result (`scorer: execution`):\n",
            field_table(_fields(results.ExecutionResult), EXECUTION_WORDS, "execution fields"),
            '<h3 id="assertions">assertions</h3>\n\nEach entry:\n',
            field_table(_fields(results.CheckResult), CHECK_WORDS, "assertion result fields"),
            '<h3 id="repo">repo</h3>\n',
            field_table(_fields(results.RepoResult), REPO_RESULT_WORDS, "repo fields"),
            '<h3 id="trajectory">trajectory</h3>\n',
            field_table(_fields(results.Trajectory), TRAJECTORY_WORDS, "trajectory fields"),
            '<h3 id="step">step</h3>\n',
            field_table(_fields(results.Step), STEP_WORDS, "step fields"),
            '<h3 id="tool-call">tool call</h3>\n',
            field_table(_fields(results.ToolCall), CALL_WORDS, "tool call fields"),
            "JUnit testcase properties (`prompteval.<field>`, with `junit_family = xunit1`): "
            + ", ".join(code(f) for f in results.JUNIT_FIELDS)
            + ".\n",
        ]
    )


# --- the prompteval command -------------------------------------------------------------------


def _subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, str, argparse.ArgumentParser]]:
    """``(name, help, parser)`` per subcommand (argparse keeps no public list of them)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            return [(name, helps.get(name, ""), sub) for name, sub in action.choices.items()]
    return []


def _arguments(parser: argparse.ArgumentParser) -> list[tuple[str, str]]:
    rows = []
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        name = ", ".join(action.option_strings) or action.dest.upper()
        if action.choices and not action.option_strings:
            name = "|".join(map(str, action.choices))
        elif action.nargs != 0 and action.option_strings:
            name += " " + (action.metavar or action.dest.upper())
        words = action.help or ""
        given = action.default not in (None, False, argparse.SUPPRESS)
        if given and action.option_strings and "default" not in words:
            words += f" (default {action.default})"
        rows.append((code(name), words.replace("%(prog)s", "prompteval")))
    return rows


def commands() -> str:
    parser = build_parser()
    parts = [table(["option", "meaning"], _arguments(parser))]
    for name, words, sub in _subcommands(parser):
        parts.append(f"## `prompteval {name}`\n\n{words[0].upper()}{words[1:]}.\n")
        parts.append(f"```text\n{sub.format_usage().strip()}\n```\n")
        arguments = _arguments(sub)
        if arguments:
            parts.append(table(["argument", "meaning"], arguments))
    return "\n".join(parts)


GENERATORS: dict[str, Callable[[], str]] = {
    "settings": settings,
    "case-files": case_files,
    "prompt-files": prompt_files,
    "exit-codes": exit_codes,
    "results": results_format,
    "commands": commands,
}


def render(name: str) -> str:
    return GENERATORS[name]()


def expand(markdown: str) -> str:
    """The page with every marker replaced by its generated text."""
    return MARKER.sub(lambda m: render(m.group(1)), markdown)


def on_page_markdown(markdown: str, **_: Any) -> str:
    return expand(markdown)
