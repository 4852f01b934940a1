"""``prompteval import promptfoo``: real promptfoo example configs become prompt versions and
cases that collect, record through the loopback server and replay offline; each mapping, and
every item that does not map named with its FILE:LINE."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_prompteval.core.errors import PromptevalError
from pytest_prompteval.testing import AnthropicServer, tool_use
from pytest_prompteval.workflows.promptfoo import promptfoo_project

from .conftest import item_results, prompteval

EXAMPLES = Path(__file__).parent / "data" / "promptfoo"

#: what the loopback "Claude" answers each simple-csv row (by the text it translates)
TRANSLATIONS = {
    ("French", "Hello world"): "Bonjour le monde",
    ("French", "I'm hungry"): "J'ai faim",
    ("Pirate", "Hello world"): "Ahoy, world!",
    ("Pirate", "I'm hungry"): "Arr, me belly be empty.",  # no "grub": fails icontains
}


def answer(request: dict[str, Any]) -> Any:
    if "tools" in request:  # the judge, asked an llm-rubric's question
        return tool_use(request, {"score": 80, "reason": "follows the rubric"})
    text = request["messages"][0]["content"]
    text = text if isinstance(text, str) else " ".join(b["text"] for b in text)
    for (language, body), translated in TRANSLATIONS.items():
        if language in text and body in text:
            return translated
    return "An echo." if "wind" in text else "A candle."


def imported(pytester: pytest.Pytester, config: str) -> list[str]:
    """Import one of the examples; its warnings, one a line."""
    done = prompteval(pytester.path, "import", "promptfoo", config)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("wrote "), done.stdout
    return done.stderr.splitlines()


def outcomes(reprec: pytest.HookRecorder) -> list[tuple[str, str, list[tuple[str, bool]]]]:
    return sorted(
        (r["case_id"], r["prompt"], [(a["type"], a["passed"]) for a in r["assertions"]])
        for r in item_results(reprec)
    )


def test_real_promptfoo_examples_import_then_collect_record_and_replay(
    pytester: pytest.Pytester, anthropic_server: AnthropicServer
) -> None:
    shutil.copytree(EXAMPLES, pytester.path, dirs_exist_ok=True)
    pytester.makeini("[pytest]\n")
    assert imported(pytester, "claude-vs-gpt/promptfooconfig.yaml") == [
        "prompteval: not imported: claude-vs-gpt/prompt.yaml:6: chat prompt: content block "
        "option 'cache_control': not imported",
        "prompteval: not imported: claude-vs-gpt/promptfooconfig.yaml:26: provider "
        "'openai:chat:gpt-4o' is not a Claude model: no prompt version made for it",
        "prompteval: not imported: claude-vs-gpt/promptfooconfig.yaml:34: assertion "
        "'javascript' ('output.length <= 100 ? 1 : output.length > 1000 ? 0 : 1 - (o'): code "
        "is not translated: not imported",
        "prompteval: 3 item(s) not imported as they were",
    ]
    assert imported(pytester, "simple-csv/promptfooconfig.yaml") == [
        "prompteval: not imported: simple-csv/prompts.txt:2: Nunjucks "
        "'{{ (style_config | load).tone }}' cannot be mapped: kept as plain text",
        "prompteval: not imported: simple-csv/prompts.txt:3: Nunjucks "
        "'{{ (style_config | load).length }}' cannot be mapped: kept as plain text",
        "prompteval: not imported: simple-csv/promptfooconfig.yaml:5: provider "
        "'openai:gpt-3.5-turbo' is not a Claude model: no prompt version made for it",
        "prompteval: not imported: simple-csv/promptfooconfig.yaml:4: no Claude provider: the "
        "prompt versions use the project's default model",
        "prompteval: 4 item(s) not imported as they were",
    ]
    assert imported(pytester, "anthropic/promptfooconfig.basic.yaml") == []
    cases = yaml.safe_load((pytester.path / "prompt_cases" / "anthropic_basic.yaml").read_text())
    assert [c["input"] for c in cases["cases"]][:2] == [
        {"topic": "quantum computing"},
        {"topic": "artificial intelligence"},
    ]
    haiku = yaml.safe_load(
        (pytester.path / "prompts" / "anthropic_basic_2_Claude_3.5_Haiku.yaml").read_text()
    )
    assert haiku == {
        "name": "Explain {{topic}} as if I were a 5-year-old child.",
        "description": "Imported from promptfoo: anthropic/promptfooconfig.basic.yaml:5",
        "user_prompt": "Explain {topic} as if I were a 5-year-old child.",
        "include_input": False,
        "model_config": {
            "model": "claude-3-5-haiku-latest",
            "temperature": 0.7,
            "max_tokens": 1024,
        },
        "applies_to": {"ids": ["anthropic_basic_*"]},
    }
    versions = sorted(p.stem for p in (pytester.path / "prompts").iterdir())
    assert versions == [
        *(
            f"anthropic_basic_{n}_Claude_3.{m}"
            for n in (1, 2, 3)
            for m in ("5_Haiku", "5_Sonnet", "7_Sonnet")
        ),
        "claude-vs-gpt_1",
        "simple-csv_1",
        "simple-csv_2",
    ]  # fmt: skip
    collected = pytester.runpytest("--prompt=all", "--collect-only", "-q")
    # 15 riddles x 1 version, 4 rows x 2 versions, 5 topics x 9 versions
    collected.stdout.fnmatch_lines(["68 tests collected*"])

    run = ["--prompt=all", "-k", "not anthropic_basic"]
    anthropic_server.responder = answer
    recorded = pytester.inline_run(*run, "--prompteval-record=all")
    asked = len(anthropic_server.requests)
    assert asked == 15 + 2 + 8  # the answers, the two llm-rubric judges, the translations
    first = outcomes(recorded)
    replayed = pytester.inline_run(*run, "--prompteval-record=none")
    assert len(anthropic_server.requests) == asked  # offline: nothing asked again
    assert outcomes(replayed) == first
    checks = {(case, version): dict(found) for case, version, found in first}
    # the translations: every row's icontains passes but the hungry pirate's
    for n, passes in enumerate([True, True, True, False], 1):
        for version in ("simple-csv_1", "simple-csv_2"):
            assert checks[f"simple-csv_{n:03d}", version] == {"icontains": passes}
    # the riddles: defaultTest's cost and latency limits on each, then the test's own
    riddle = checks["claude-vs-gpt_001", "claude-vs-gpt_1"]
    assert list(riddle) == ["max_cost_usd", "max_latency_ms", "icontains", "judge"]
    assert (riddle["max_cost_usd"], riddle["icontains"], riddle["judge"]) == (True, True, True)
    assert checks["claude-vs-gpt_003", "claude-vs-gpt_1"]["icontains"] is False  # darkness
    assert checks["claude-vs-gpt_005", "claude-vs-gpt_1"]["icontains_any"] is False
    # a riddle with no assertions of its own keeps the defaults'
    assert list(checks["claude-vs-gpt_013", "claude-vs-gpt_1"]) == [
        "max_cost_usd",
        "max_latency_ms",
    ]


def test_examples_whose_items_do_not_map_name_each_with_its_line(
    pytester: pytest.Pytester,
) -> None:
    shutil.copytree(EXAMPLES, pytester.path, dirs_exist_ok=True)
    assert imported(pytester, "json-output/promptfooconfig.yaml") == [
        "prompteval: not imported: json-output/promptfooconfig.yaml:7: provider "
        "'openai:chat:gpt-3.5-turbo' is not a Claude model: no prompt version made for it",
        "prompteval: not imported: json-output/promptfooconfig.yaml:6: no Claude provider: the "
        "prompt versions use the project's default model",
        "prompteval: not imported: json-output/promptfooconfig.yaml:14: assertion 'javascript' "
        "(\"JSON.parse(output).color === 'yellow' && JSON.parse(output).\"): code is not "
        "translated: not imported",
        "prompteval: not imported: json-output/promptfooconfig.yaml:20: test option "
        "'transform': not imported (its assertions check the answer as it comes)",
        "prompteval: not imported: json-output/promptfooconfig.yaml:36: assertion 'javascript' "
        "(\"output.color === 'purple' && output.countries.includes('Braz\"): code is not "
        "translated: not imported",
        "prompteval: not imported: json-output/promptfooconfig.yaml:39: assertion "
        "'contains-any': option 'transform' ('output.countries'): not imported (checked on the "
        "answer as it comes)",
        "prompteval: 6 item(s) not imported as they were",
    ]
    cases = yaml.safe_load((pytester.path / "prompt_cases" / "json-output.yaml").read_text())
    assert [c["assert"] for c in cases["cases"]] == [
        [{"type": "is_json"}],
        [
            {
                "type": "json_schema",
                "value": {
                    "required": ["color", "countries"],
                    "type": "object",
                    "properties": {
                        "color": {"type": "string"},
                        "countries": {"type": "array", "items": {"type": "string"}},
                    },
                },
            },
            # with its transform: named above; without it, the countries are in the answer
            {"type": "contains_any", "value": ["Guatemala", "Costa Rica", "India", "Indonesia"]},
        ],
    ]
    assert imported(pytester, "anthropic/promptfooconfig.conversation.yaml") == [
        "prompteval: not imported: anthropic/chat-prompt.json:2: prompt 'file://chat-prompt.json' "
        "is no JSON or YAML (invalid YAML: while scanning for the next token found character "
        "that cannot start any token): a Nunjucks chat template cannot be mapped: not imported",
        "prompteval: not imported: anthropic/promptfooconfig.conversation.yaml:3: no prompt "
        "could be imported: no prompt versions written",
        "prompteval: 2 item(s) not imported as they were",
    ]
    assert imported(pytester, "getting-started/promptfooconfig.yaml")[-1] == (
        "prompteval: 3 item(s) not imported as they were"
    )


CONFIG = """\
description: every mapping
prompts:
  - 'Say {{ word }} in {{language}}; keep {"json": {braces}} and {{ word | upper }}'
  - id: file://chat.json
    label: chatty
providers:
  - id: anthropic:messages:claude-haiku-4-5
    label: Haiku
    config: {temperature: 0.2, max_tokens: 300, showThinking: true}
  - anthropic:claude-sonnet-4-5
defaultTest:
  vars: {language: French}
  assert:
    - type: latency
      threshold: 2000
tests:
  - description: plain checks
    vars: {word: hello}
    threshold: 0.5
    assert:
      - {type: equals, value: bonjour}
      - {type: not-equals, value: hello}
      - {type: contains, value: bon, weight: 2}
      - {type: not-icontains, value: HELLO}
      - {type: starts-with, value: Bon}
      - {type: regex, value: '^B'}
      - {type: not-regex, value: '(?=x)'}
      - {type: contains-any, value: 'bon, jour'}
      - {type: icontains-all, value: [BON, JOUR]}
      - {type: not-contains-all, value: [x, y]}
      - {type: is-json}
      - {type: not-is-json}
      - {type: contains-json, value: {type: object}}
      - {type: is-json, value: {type: array}}
      - {type: llm-rubric, value: 'is {{language}}', threshold: 0.8}
      - {type: llm-rubric, value: polite, metric: tone, threshold: 80, weight: -1}
      - {type: cost, threshold: 0.002}
      - {type: cost}
      - {type: similar, value: hi, threshold: 0.8}
      - {type: javascript, value: 'output.length <= 100'}
      - {type: javascript, value: "output.includes('jour');"}
      - {type: python, value: '"bon" in output'}
      - {type: python, value: 'len(output) > 3'}
      - {type: javascript, value: 'output.split(" ").length < 9'}
      - {type: not-llm-rubric, value: rude}
      - {type: contains, value: x, transform: output.trim()}
  - vars: {word: [cat, dog]}
    options: {prefix: 'Q: '}
  - file://more.yaml
  - file://rows.jsonl
scenarios:
  - description: twice
    config: [{vars: {language: German}}, {vars: {language: Italian}}]
    tests:
      - vars: {word: tree}
        assert: [{type: icontains, value: '{{word}}'}, {type: contains, value: '{{ nope }}'}]
"""

CHAT = """[
  {"role": "system", "content": "You translate into {{language}}."},
  {"role": "user", "content": [{"type": "text", "text": "Translate: {{word}}"}]},
  {"role": "assistant", "content": "Sure:"}
]"""


def write_config(root: Path) -> Path:
    root.joinpath("promptfooconfig.yaml").write_text(CONFIG)
    root.joinpath("chat.json").write_text(CHAT)
    root.joinpath("more.yaml").write_text("- vars: {word: sun}\n  assert:\n  - {type: bleu}\n")
    root.joinpath("rows.jsonl").write_text('{"vars": {"word": "moon"}, "metadata": {"a": 1}}\n')
    root.joinpath("rows.csv").write_text(
        "word,__expected1,__expected2,__expected3,__description,__prefix\n"
        'star,grade:is French,not-contains:star,"contains-any:a, b",a star,Q:\n'
        "sky,ciel,similar(0.7):le ciel,fn:output.length < 50,the sky,\n"
        "sea,is-json,starts-with:la,python:'mer' in output,,\n"
    )
    return root / "promptfooconfig.yaml"


def test_each_promptfoo_item_maps_to_its_counterpart_or_is_named_with_its_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    project = promptfoo_project(Path(write_config(tmp_path).name))
    assert project.stem == tmp_path.name
    stem = project.stem
    assert sorted(project.prompts) == [
        f"{stem}_{n}_{m}" for n in (1, 2) for m in ("Haiku", "claude-sonnet-4-5")
    ]
    plain = project.prompts[f"{stem}_1_Haiku"]
    assert plain["user_prompt"] == (
        'Say {word} in {language}; keep {"json": {{braces}}} and {{{{ word | upper }}}}'
    )
    assert plain["model_config"] == {
        "model": "claude-haiku-4-5",
        "temperature": 0.2,
        "max_tokens": 300,
    }
    assert plain["include_input"] is False and plain["applies_to"] == {"ids": [f"{stem}_*"]}
    chat = project.prompts[f"{stem}_2_claude-sonnet-4-5"]
    turns = (chat["system_prompt"], chat["user_prompt"], chat["assistant_prefill"])
    assert chat["name"] == "chatty"
    assert turns == ("You translate into {language}.", "Translate: {word}", "Sure:")
    assert chat["model_config"] == {"model": "claude-sonnet-4-5"}
    cases = project.cases["cases"]
    first = cases[0]
    assert (first["id"], first["description"], first["threshold"]) == (
        f"{stem}_001",
        "plain checks",
        0.5,
    )
    assert first["input"] == {"language": "French", "word": "hello"}
    assert first["assert"] == [
        {"type": "max_latency_ms", "value": 2000},
        {"type": "equals", "value": "bonjour"},
        {"type": "not_equals", "value": "hello"},
        {"type": "contains", "value": "bon", "weight": 2},
        {"type": "not_icontains", "value": "HELLO"},
        {"type": "starts_with", "value": "Bon"},
        {"type": "regex", "value": "^B"},
        {"type": "contains_any", "value": ["bon", "jour"]},
        {"type": "icontains_all", "value": ["BON", "JOUR"]},
        {"type": "not_contains_all", "value": ["x", "y"]},
        {"type": "is_json"},
        {"type": "not_is_json"},
        {"type": "contains_json", "value": {"type": "object"}},
        {"type": "json_schema", "value": {"type": "array"}},
        {"type": "judge", "value": "is French", "threshold": 0.8},
        {"type": "judge", "value": "polite", "threshold": 0.5},
        {"type": "max_cost_usd", "value": 0.002},
        {"max_length": 100},
        {"contains": "jour"},
        {"contains": "bon"},
        {"min_length": 4},
        {"type": "contains", "value": "x"},  # its transform named below
    ]
    # a list of strings is one case per value, as promptfoo runs it
    assert [c["input"]["word"] for c in cases[1:3]] == ["cat", "dog"]
    assert [c["input"]["word"] for c in cases[3:5]] == ["sun", "moon"]
    assert [c["input"]["language"] for c in cases[5:]] == ["German", "Italian"]
    assert cases[5]["description"] == "twice"
    assert cases[5]["assert"] == [
        {"type": "max_latency_ms", "value": 2000},
        {"type": "icontains", "value": "tree"},  # {{word}} filled as promptfoo renders it
    ]
    config = "promptfooconfig.yaml"
    assert project.notes == [
        f"{config}:3: Nunjucks '{{{{ word | upper }}}}' cannot be mapped: kept as plain text",
        f"{config}:7: provider config 'showThinking': not imported",
        f"{config}:17: test threshold: promptfoo passes a test whose weighted score reaches "
        "it; here every assertion must pass too",
        f"{config}:27: assertion 'not-regex': not_regex: invalid regular expression: invalid "
        "perl operator: (?= (patterns run on RE2, in linear time: no lookaround, no "
        "backreferences): not imported",
        f"{config}:36: assertion 'llm-rubric': threshold 80: expected a number from 0 to 1; the "
        "judge's passes at 0.5",
        f"{config}:36: assertion 'llm-rubric': option 'metric' ('tone'): results name each "
        "assertion by its type",
        f"{config}:36: assertion 'llm-rubric': weight -1: expected a number >= 0",
        f"{config}:38: assertion 'cost' without a threshold: not imported",
        f"{config}:39: assertion 'similar' has no counterpart here: not imported",
        f"{config}:44: assertion 'javascript' ('output.split(\" \").length < 9'): code is not "
        "translated: not imported",
        f"{config}:45: assertion 'not-llm-rubric' has no counterpart here: not imported",
        f"{config}:46: assertion 'contains': option 'transform' ('output.trim()'): not imported "
        "(checked on the answer as it comes)",
        f"{config}:48: test option 'prefix': not imported",
        "more.yaml:3: assertion 'bleu' has no counterpart here: not imported",
        "rows.jsonl:1: test field 'metadata': not imported",
        f"{config}:56: assertion 'contains': Nunjucks '{{{{ nope }}}}' in its value, which the "
        "test's vars do not fill: not imported",
    ]


def test_csv_expected_columns_map_as_promptfoo_reads_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write_config(tmp_path)
    tmp_path.joinpath("csv.yaml").write_text(
        "prompts: ['{{word}}']\nproviders: [anthropic:messages:claude-haiku-4-5]\n"
        "tests: file://rows.csv\n"
    )
    project = promptfoo_project(Path("csv.yaml"))
    assert [
        (c.get("description", ""), c["input"], c["assert"]) for c in project.cases["cases"]
    ] == [
        (
            "a star",
            {"word": "star"},
            [
                {"type": "judge", "value": "is French", "threshold": 0.5},
                {"type": "not_contains", "value": "star"},
                {"type": "contains_any", "value": ["a", "b"]},
            ],
        ),
        (
            "the sky",
            {"word": "sky"},
            [{"type": "equals", "value": "ciel"}, {"max_length": 49}],
        ),
        ("", {"word": "sea"}, [
            {"type": "is_json"}, {"type": "starts_with", "value": "la"}, {"contains": "mer"},
        ]),
    ]  # fmt: skip
    assert project.notes == [
        "rows.csv:1: column '__prefix': not imported",
        "rows.csv:3: assertion 'similar' has no counterpart here: not imported",
    ]


def test_what_defaults_and_scenario_configs_hold_beyond_vars_and_assert_is_named_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    tmp_path.joinpath("d.yaml").write_text(
        "prompts: ['{{a}}']\n"
        "providers: [anthropic:claude-haiku-4-5]\n"
        "defaultTest:\n"
        "  options: {provider: openai:gpt-4o}\n"
        "  metadata: {team: x}\n"
        "tests: [{vars: {a: 1}}, {vars: [2]}]\n"
        "scenarios:\n"
        "- config: [{vars: {b: 1}, provider: x}, 7, {vars: [x]}]\n"
        "  tests: [{vars: {a: 3}}]\n"
    )
    project = promptfoo_project(Path("d.yaml"))
    assert [c["input"] for c in project.cases["cases"]] == [
        {"a": 1},
        {},
        {"b": 1, "a": 3},
        {"a": 3},
    ]
    assert project.notes == [
        "d.yaml:5: defaultTest field 'metadata': not imported",
        "d.yaml:4: defaultTest option 'provider': not imported",
        "d.yaml:8: scenario config '7': not imported",
        "d.yaml:8: scenario config field 'provider': not imported",
        "d.yaml:8: scenario config vars: expected a mapping: not imported",
        "d.yaml:6: vars: expected a mapping: not imported",
    ]


def test_providers_of_one_model_and_label_are_a_version_each(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    tmp_path.joinpath("x.yaml").write_text(
        "prompts: [hi]\nproviders:\n"
        "- {id: anthropic:messages:claude-haiku-4-5, config: {temperature: 0}}\n"
        "- {id: anthropic:messages:claude-haiku-4-5, config: {temperature: 1}}\n"
    )
    project = promptfoo_project(Path("x.yaml"))
    assert {name: v["model_config"]["temperature"] for name, v in project.prompts.items()} == {
        "x_1_claude-haiku-4-5": 0,
        "x_1_claude-haiku-4-5_2": 1,
    }


def test_the_imported_files_load_as_this_plugins_prompts_and_cases(
    pytester: pytest.Pytester,
) -> None:
    write_config(pytester.path)
    pytester.makeini("[pytest]\n")
    done = prompteval(pytester.path, "import", "promptfoo", "promptfooconfig.yaml", "--out", "p")
    assert done.returncode == 0, done.stderr
    listed = prompteval(pytester.path, "--rootdir", "p", "list", "--cases", "p/prompt_cases",
                        "--prompts", "p/prompts")  # fmt: skip
    assert listed.returncode == 0, listed.stderr
    rows = [line.split()[:2] for line in listed.stdout.splitlines()]
    assert [f"{pytester.path.name[:60]}_1_Haiku", "claude-haiku-4-5"] in rows
    again = prompteval(pytester.path, "import", "promptfoo", "promptfooconfig.yaml", "--out", "p")
    assert (again.returncode, again.stdout) == (2, "")
    assert again.stderr.startswith("prompteval: error: p/prompts/")
    assert again.stderr.endswith("_1_Haiku.yaml exists: not overwritten (move it away first)\n")


@pytest.mark.parametrize(
    ("files", "message"),
    [
        (
            {},
            "prompteval: error: promptfooconfig.yaml: cannot read file: No such file or directory",
        ),
        (
            {"promptfooconfig.yaml": "prompts: ['x'\ntests: []\n"},
            "prompteval: error: promptfooconfig.yaml:2: invalid YAML: while parsing a flow "
            "sequence did not find expected ',' or ']'",
        ),
        (
            {"promptfooconfig.yaml": "- just a list\n"},
            "prompteval: error: promptfooconfig.yaml:1: expected a promptfoo config: a mapping "
            "with prompts, ...",
        ),
        (
            {"promptfooconfig.yaml": "prompts: [x]\ntests: file://gone.csv\n"},
            "prompteval: error: promptfooconfig.yaml:2: tests 'file://gone.csv': no such file "
            "gone.csv",
        ),
        (
            {"promptfooconfig.yaml": "prompts: [file://gone.txt]\n"},
            "prompteval: error: promptfooconfig.yaml:1: prompt 'file://gone.txt': no such file "
            "gone.txt",
        ),
        (
            {"promptfooconfig.yaml": "prompts: [x]\ntests: file://t.jsonl\n", "t.jsonl": "{x\n"},
            "prompteval: error: t.jsonl:1: not JSON: Expecting property name enclosed in double "
            "quotes: line 1 column 2 (char 1)",
        ),
        (
            {
                "promptfooconfig.yaml": "prompts: [x]\ntests: file://a.yaml\n",
                "a.yaml": "- file://b.yaml\n",
                "b.yaml": "- vars: {x: 1}\n- file://a.yaml\n",
            },
            "prompteval: error: b.yaml: tests 'file://a.yaml': names a file it is read from",
        ),
    ],
    ids=[
        "missing",
        "malformed",
        "not-a-mapping",
        "missing-tests",
        "missing-prompt",
        "bad-jsonl",
        "tests-cycle",
    ],
)
def test_bad_input_is_one_line(tmp_path: Path, files: dict[str, str], message: str) -> None:
    for name, text in files.items():
        tmp_path.joinpath(name).write_text(text)
    done = prompteval(tmp_path, "import", "promptfoo", "promptfooconfig.yaml")
    assert (done.returncode, done.stdout, done.stderr) == (2, "", message + "\n")


def test_odd_shapes_are_named_not_raised(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    tmp_path.joinpath("o.yaml").write_text(
        "prompts: ['[]']\ndefaultTest: {options: true}\ntests: [{vars: {a: 1}, options: [1]}]\n"
    )
    assert promptfoo_project(Path("o.yaml")).notes == [
        "o.yaml:1: chat prompt with turns (none): a prompt version holds a system prompt, one "
        "user turn and a prefill: not imported",
        "o.yaml:1: no prompt could be imported: no prompt versions written",
        "o.yaml:1: no Claude provider: the prompt versions use the project's default model",
        "o.yaml:2: defaultTest option 'True': not imported",
        "o.yaml:3: test option '[1]': not imported",
    ]


_KEYS = st.sampled_from(
    ["type", "value", "threshold", "weight", "vars", "assert", "options", "id", "label",
     "config", "raw", "description", "tests", "role", "content", "messages", "transform"]
)  # fmt: skip
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.sampled_from(
        ["x", "{{x}}", "file://p.txt", "file://t.yaml", "file://p.json", "file://*.txt",
         "anthropic:messages:claude-x", "contains", "not-icontains", "llm-rubric", "is-json",
         "javascript", "cost", "a,b", '[{"role": "user", "content": "hi"}]']
    ),
)  # fmt: skip
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_KEYS, inner, max_size=4)),
    max_leaves=12,
)
_SECTIONS = ("prompts", "providers", "tests", "defaultTest", "scenarios", "description")


@settings(max_examples=150, suppress_health_check=list(HealthCheck), deadline=None)
@given(st.fixed_dictionaries({}, optional=dict.fromkeys(_SECTIONS, _VALUES)), _VALUES, _VALUES)
def test_any_config_shape_imports_or_is_one_error(
    config: dict[str, Any], tests: Any, chat: Any
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        root.joinpath("c.yaml").write_text(yaml.safe_dump(config))
        root.joinpath("t.yaml").write_text(yaml.safe_dump(tests))
        root.joinpath("p.json").write_text(yaml.safe_dump(chat))
        root.joinpath("p.txt").write_text("hi {{x}}\n---\n{% if y %}")
        with contextlib.suppress(PromptevalError):  # one line, as the command prints it
            promptfoo_project(root / "c.yaml")


def test_csv_metric_and_a_threshold_that_is_no_number_are_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    tmp_path.joinpath("th.csv").write_text(
        "x,__threshold,__metric,__expected\n1,abc,m,contains:a\n2,0.5,m,\n"
    )
    tmp_path.joinpath("th.yaml").write_text("prompts: ['{{x}}']\ntests: file://th.csv\n")
    project = promptfoo_project(Path("th.yaml"))
    assert [c["threshold"] for c in project.cases["cases"]] == [0, 0.5]
    assert project.notes[1:] == [
        "th.csv:1: column '__metric': not imported",
        "th.csv:2: test threshold 'abc': expected a number from 0 to 1: not imported",
        "th.csv:3: test threshold: promptfoo passes a test whose weighted score reaches it; here "
        "every assertion must pass too",
    ]


@pytest.mark.parametrize(
    ("reference", "why"),
    [
        ("file://../secret.txt", "path '../secret.txt' leads outside the project"),
        ("file:///etc/passwd", "path '/etc/passwd': absolute paths are not allowed"),
        ("file://link.txt", "path 'link.txt' leads outside the project"),
        ("file://*.txt", "is a link to"),
    ],
    ids=["dot-dot", "absolute", "link", "glob-through-a-link"],
)
def test_a_reference_out_of_the_configs_folder_is_refused(
    tmp_path: Path, reference: str, why: str
) -> None:
    """A config is hostile input: what it names beyond its folder is never copied into a case
    (a prompt, a tests file, a var, a schema)."""
    (tmp_path / "secret.txt").write_text("the secret\n")
    project = tmp_path / "project"
    project.mkdir()
    (project / "link.txt").symlink_to(tmp_path / "secret.txt")
    (project / "promptfooconfig.yaml").write_text(
        f"prompts: ['{reference}']\ntests: [{{vars: {{x: 1}}}}]\n"
    )
    done = prompteval(project, "import", "promptfoo", "promptfooconfig.yaml")
    assert done.returncode == 2 and done.stdout == "", done
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"prompteval: error: promptfooconfig.yaml: {reference!r}: "), line
    assert why in line and line.endswith("only files in the config's folder are read"), line
    assert "the secret" not in "".join(p.read_text() for p in project.rglob("*.yaml"))


def test_a_misspelt_assertion_type_is_named_with_a_suggestion(tmp_path: Path) -> None:
    (tmp_path / "promptfooconfig.yaml").write_text(
        "prompts: [x]\ntests:\n  - vars: {x: 1}\n    assert: [{type: contians, value: a}]\n"
    )
    done = prompteval(tmp_path, "import", "promptfoo", "promptfooconfig.yaml")
    assert (
        "prompteval: not imported: promptfooconfig.yaml:4: assertion 'contians' is no "
        "promptfoo type: not imported; did you mean 'contains'?"
    ) in done.stderr.splitlines()
