"""Hostile text (#22): regular expressions over answers and project files run in linear time,
case and prompt files cannot make a huge request or YAML document, and text from files and
answers cannot control the terminal, forge a CI annotation or hide a step summary."""

from __future__ import annotations

import ast
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

import pytest_prompteval
from pytest_prompteval.core import patterns
from pytest_prompteval.scoring import assertions, automatic
from pytest_prompteval.scoring.assertions import Assertion, Observed, check_simple
from pytest_prompteval.scoring.code import extract as code_extract
from pytest_prompteval.scoring.code import spec as code_spec
from pytest_prompteval.scoring.code.extract import extract_code
from pytest_prompteval.scoring.code.spec import CodeSpec
from pytest_prompteval.testing import AnthropicServer, tool_use

SRC = Path(pytest_prompteval.__file__).parent

# Every use of Python's ``re`` left in the plugin, audited: none can take more than linear
# time (anchored or single-character classes, a fixed-length digest, literal alternatives).
# Anything that reads an answer or a project file is on RE2 (core/patterns).
AUDITED_RE = {
    "core/history.py": 1,  # run file names: anchored, a lazy class before a literal suffix
    "core/paths.py": 1,  # NAME: anchored, one class repeated
    "core/envspec.py": 2,  # a requirement (one \s* a run of spaces) and a program's name
    "core/patches.py": 2,  # a hunk header (digits between literals), three octal digits
    "core/safetext.py": 4,  # single characters, a line start (twice), runs of backticks
    "core/templates.py": 1,  # literal braces around one identifier
    "providers/labels.py": 1,  # 64 hex digits or nothing, fullmatch
    "providers/anthropic.py": 2,  # the API's error messages: literal alternatives
    "scoring/testrun.py": 1,  # a colour sequence: one class repeated before one letter
    "pytest/run.py": 1,  # names in the -m expression the user typed: one class repeated
    "pytest/snapshots.py": 1,  # a repo: or git: key in a case file, then one name
    "sandbox/environments.py": 2,  # a requirement's name up to a delimiter; 32 hex digits
    "scoring/repoids.py": 1,  # whether a test command is pytest: anchored literals
    "workflows/swebench.py": 1,  # owner/name@version: classes between literals
    "view/app.py": 1,  # a recording's file name from the URL: anchored, one class repeated
}


def _re_calls(path: Path) -> int:
    tree = ast.parse(path.read_text())
    return sum(
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "re"
        and node.func.attr != "escape"
        for node in ast.walk(tree)
    )


def test_every_python_regex_left_in_the_plugin_is_audited() -> None:
    found = {
        str(path.relative_to(SRC)): n
        for path in sorted(SRC.rglob("*.py"))
        if (n := _re_calls(path))
    }
    assert found == AUDITED_RE


def test_the_patterns_run_on_answers_are_compiled_by_re2() -> None:
    re2_type = type(patterns.pattern("x"))
    for compiled in (
        automatic._WORD,
        automatic._SENTENCE_END,
        automatic._ASM_MNEMONIC,
        code_extract._FENCE,
        code_spec._definition("f"),
        assertions._FENCE,
    ):
        assert type(compiled) is re2_type


# Inputs a backtracking engine needs hours (or for ever) for; RE2 reads each once.
MEGA = 1_000_000


def test_a_run_of_exclamation_marks_is_scored() -> None:
    from pytest_prompteval.core.tables import load_table

    scorer = automatic.AutomaticScorer(load_table("scoring", None))
    assert scorer.clarity_score("!" * MEGA + "x") >= 0.0
    assert scorer.clarity_score("\n" + "7" * MEGA + "x") >= 0.0


@pytest.mark.parametrize(
    "answer",
    ["```" + "a" * MEGA, "\n" * MEGA + "x", "```\n" + " \n" * MEGA, "def  " * MEGA],
    ids=["unclosed-tag", "blank-lines", "fence-of-blank-lines", "defs"],
)
def test_crafted_answers_are_searched_for_code(answer: str) -> None:
    spec = CodeSpec(entry_point="f", tests=())
    code_text, _ = extract_code(answer, "", spec)
    assert isinstance(code_text, str)


def test_a_json_fence_without_its_end_is_not_json() -> None:
    answer = Observed("```json" + " " * MEGA + "\n", "", 0, None, None)
    checked = check_simple(Assertion("is_json"), answer)
    assert checked is not None and not checked.passed


@pytest.mark.parametrize(
    "answer", ["[" * MEGA, "{" * MEGA, '[{"a": ' * (MEGA // 7)], ids=["lists", "braces", "objects"]
)
def test_an_answer_of_a_million_openings_is_searched_for_json_a_bounded_number_of_times(
    answer: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    tries = []
    real = json.JSONDecoder.raw_decode

    def counted(self: json.JSONDecoder, text: str, idx: int = 0) -> tuple[object, int]:
        tries.append(idx)
        return real(self, text, idx)

    monkeypatch.setattr(json.JSONDecoder, "raw_decode", counted)
    checked = check_simple(Assertion("contains_json"), Observed(answer, "", 0, None, None))
    assert checked is not None and not checked.passed
    assert checked.reason == "no JSON found"
    assert len(tries) <= assertions.MAX_JSON_STARTS + 2  # json.loads of the answer, its fence


SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string", "pattern": "^(a+)+$"}},
    "patternProperties": {"^(b+)+$": {"type": "integer"}},
    "additionalProperties": False,
}


@pytest.mark.parametrize(
    ("document", "passed", "reason"),
    [
        ('{"name": "aaaa"}', True, "matches the schema"),
        ('{"name": "' + "a" * 60 + '!"}', False, 'name: expected pattern "^(a+)+$", got "aaa'),
        ('{"' + "b" * 60 + '": 1}', True, "matches the schema"),
        ('{"' + "b" * 60 + '": "x"}', False, ': expected type "integer", got "x"'),
        ('{"' + "b" * 60 + '!": 1}', False, "Additional properties are not allowed"),
    ],
    ids=["pattern-passes", "pattern-fails", "keyed-passes", "keyed-value", "keyed-extra"],
)
def test_json_schema_patterns_run_on_re2(document: str, passed: bool, reason: str) -> None:
    # each of these hangs Python's re: (a+)+ against 60 a's and a "!" is 2**60 steps
    checked = check_simple(Assertion("json_schema", SCHEMA), Observed(document, "", 0, None, None))
    assert checked is not None
    assert checked.passed is passed
    assert reason in checked.reason


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        (
            "{type: object, properties: {a: {type: string,\n      pattern: 'x(?=y)'}}}",
            "prompt_cases/c.yaml:6: case 'c1', assert[0]: json_schema: pattern 'x(?=y)': "
            "invalid regular expression: invalid perl operator: (?= (patterns run on RE2, "
            "in linear time: no lookaround, no backreferences)",
        ),
        (
            "{type: object, patternProperties: {'(a)\\1': {}}}",
            "prompt_cases/c.yaml:5: case 'c1', assert[[]0[]]: json_schema: pattern '(a)\\\\1': "
            "invalid regular expression: invalid escape sequence: \\1 *",
        ),
        (
            "{type: object, patternProperties: {'^a': {}},\n      unevaluatedProperties: false}",
            "prompt_cases/c.yaml:6: case 'c1', assert[[]0[]]: json_schema: unevaluatedProperties "
            "cannot be used with patternProperties *",
        ),
    ],
    ids=["lookahead", "backreference", "unevaluated"],
)
def test_a_schema_pattern_re2_cannot_run_names_its_line(
    pytester: pytest.Pytester, schema: str, message: str
) -> None:
    pytester.mkdir("prompts").joinpath("v.yaml").write_text("user_prompt: x\n")
    pytester.mkdir("prompt_cases").joinpath("c.yaml").write_text(
        f"cases:\n- id: c1\n  input: {{}}\n  assert:\n  - json_schema: {schema}\n"
    )
    result = pytester.runpytest("--prompt=v")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines([message])
    assert "Traceback" not in result.stdout.str()


def test_topics_and_key_terms_keep_python_word_boundaries() -> None:
    """RE2's \\b is ASCII: the scorer's own boundaries still treat letters like é as word
    characters, as Python's re did."""
    from pytest_prompteval.core.tables import load_table

    scorer = automatic.AutomaticScorer(load_table("scoring", None))
    assert scorer.covers("café au_lait", "un café\u00a0au-lait")
    assert not scorer.covers("café", "uncafé")
    assert patterns.whole_word("café").search("un Café noir")
    assert not patterns.whole_word("café").search("un cafés")
    assert patterns.whole_word("c++").search("c++x")  # as re's \bc\+\+\b: a word must follow
    assert not patterns.whole_word("c++").search("c++ x")


# -- sizes ------------------------------------------------------------------------------


def test_a_template_stops_filling_at_its_limit_without_building_the_text() -> None:
    import tracemalloc

    from pytest_prompteval.core.templates import TooLarge, fill

    template, variables = "{b}" * 20_000, {"b": "x" * 100_000}  # 2 GB once filled
    tracemalloc.start()
    try:
        with pytest.raises(TooLarge):
            fill(template, variables, 4 * 1024 * 1024)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 16 * 1024 * 1024
    assert fill("{b}-{{b}}", {"b": "x" * 3}, 9) == "xxx-{b}"
    with pytest.raises(TooLarge):
        fill("{b}-{{b}}", {"b": "x" * 3}, 6)


def _request_project(root: Path, user_prompt: str, value: str) -> None:
    (root / "prompts").mkdir()
    (root / "prompts" / "v.yaml").write_text(f"name: v\nuser_prompt: '{user_prompt}'\n")
    (root / "prompt_cases").mkdir()
    (root / "prompt_cases" / "c.yaml").write_text(
        f"cases:\n- id: big\n  vars: {{b: {value}}}\n  input:\n    n: 1\n"
    )


def test_a_request_over_the_bound_names_prompt_and_case(tmp_path: Path) -> None:
    from pytest_prompteval.core.cases import load_case_file
    from pytest_prompteval.core.errors import TemplateError
    from pytest_prompteval.core.prompts import build_request, load_prompt, template_variables

    _request_project(tmp_path, "{b}" * 20_000, "x" * 100_000)
    prompt = load_prompt(tmp_path / "prompts" / "v.yaml")
    (case,) = load_case_file(tmp_path / "prompt_cases" / "c.yaml").cases
    with pytest.raises(TemplateError) as excinfo:
        build_request(case, prompt, template_variables(case), "m")
    assert str(excinfo.value) == (
        f"{tmp_path}/prompts/v.yaml:2: user_prompt makes the request of case 'big' "
        f"({tmp_path}/prompt_cases/c.yaml:2) longer than 4,194,304 characters"
    )


def test_an_input_over_the_bound_names_the_case(tmp_path: Path) -> None:
    from pytest_prompteval.core.cases import load_case_file
    from pytest_prompteval.core.errors import TemplateError
    from pytest_prompteval.core.prompts import build_request, load_prompt, template_variables

    _request_project(tmp_path, "{b}" * 40, "x" * 100_000)
    case_file = tmp_path / "prompt_cases" / "c.yaml"
    case_file.write_text(case_file.read_text() + "    big: " + "y" * 200_000 + "\n")
    prompt = load_prompt(tmp_path / "prompts" / "v.yaml")
    (case,) = load_case_file(case_file).cases
    with pytest.raises(TemplateError) as excinfo:
        build_request(case, prompt, template_variables(case), "m")
    assert str(excinfo.value).startswith(f"{case_file}:4: the input makes the request of case")


def test_an_oversized_request_fails_its_item_in_one_line(pytester: pytest.Pytester) -> None:
    _request_project(pytester.path, "{b}" * 20_000, "x" * 100_000)
    result = pytester.runpytest("--prompt=v", "--prompteval-provider=python:os:getcwd")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["prompts/v.yaml:2: user_prompt makes the request of case 'big' *characters"]
    )
    assert "Traceback" not in result.stdout.str()


@pytest.mark.parametrize("merge", ["", "  <<: {m: 1}\n"], ids=["events", "nodes"])
def test_aliases_of_one_large_string_are_bounded_in_characters(tmp_path: Path, merge: str) -> None:
    """20 aliases of a 1 MB string: far under the count of values, 20 MB of text."""
    from pytest_prompteval.core.errors import PromptevalError
    from pytest_prompteval.core.yamlload import load_yaml

    path = tmp_path / "f.yaml"

    def aliases(n: int) -> str:
        return "".join(f"  a{i}: *big\n" for i in range(n))

    path.write_text(f"big: &big {'x' * 1_000_000}\nuse:\n{merge}{aliases(20)}")
    with pytest.raises(PromptevalError) as excinfo:
        load_yaml(path)
    # the 17th alias passes 16 MiB; the node graph knows only where the anchor stands
    line = 1 if merge else 3 + 16
    assert str(excinfo.value) == (
        f"{path}:{line}: YAML aliases expand to more than 16,777,216 characters of text; "
        "repeat the data or alias less of it"
    )
    path.write_text(f"big: &big {'x' * 1_000_000}\nuse:\n{merge}{aliases(10)}")
    assert len(load_yaml(path)["use"]) == 10 + bool(merge)


# -- output ------------------------------------------------------------------------------

HOSTILE = "\x1b[2J\n::error::x ##[error]x <!-- ``` ~~~ \u2028\u202e"
RAW_CHARACTERS = ("\x1b", "\u2028", "\u202e")


def _forged(text: str, markup: bool = True) -> list[str]:
    """What of HOSTILE survives raw in a terminal or log, and in markup (Markdown, XML, HTML:
    where ``<!--`` hides what follows)."""
    found = [repr(c) for c in RAW_CHARACTERS if c in text]
    found += [line for line in text.splitlines() if line.lstrip().startswith("::")]
    found += ["##["] * ("##[" in text) + ["<!--"] * (markup and "<!--" in text)
    return found


def _markdown_forged(markdown: str) -> list[str]:
    """What of HOSTILE a step summary renders as markup, parsed as GitHub does (HTML passes
    through): no HTML (an unclosed ``<!--`` hides the rest of the page), every section up to
    the last is there (no code block swallowed them), and the text outside code has nothing
    raw."""
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark").enable("table").parse(markdown)
    found = [t.content for t in tokens if t.type in ("html_block", "html_inline")]
    headings = [tokens[i + 1].content for i, t in enumerate(tokens) if t.type == "heading_open"]
    if headings[-1] != "Cost":
        found.append(f"sections hidden: {headings}")
    text = [c.content for t in tokens for c in t.children or () if c.type == "text"]
    return found + _forged("\n".join(text))


def test_md_code_and_md_fence_outlast_every_backtick_run() -> None:
    from pytest_prompteval.core.safetext import md_code, md_fence, md_text

    assert md_code("a``b") == "```a``b```"
    assert md_code("`x|") == "`` `x\\| ``"
    assert md_fence(["x", "```", "~~~", "``````"], "diff") == (
        "```````diff\nx\n```\n~~~\n``````\n```````"
    )
    # the escape of the newline is shown as it is: its backslash escaped for Markdown
    assert md_text("<!-- hide | me -->\n::error::x") == (
        "&lt;!-- hide \\| me --&gt;\\\\n::error::x"
    )


def _walk_project(pytester: pytest.Pytester) -> Path:
    quoted = json.dumps(HOSTILE)
    prompts = pytester.mkdir("prompts")
    prompts.joinpath("v.yaml").write_text(
        f"description: {quoted}\nsystem_prompt: {quoted}\nuser_prompt: {quoted}\n"
        f"model_config: {{model: {quoted}, metadata: {{user_id: {quoted}}}}}\n"
    )
    cases = pytester.mkdir("prompt_cases")
    name = "c" + HOSTILE.replace("\u2028", "") + ".yaml"  # a file name may hold all but /
    path = cases / name
    path.write_text(
        f"description: {quoted}\ncases:\n"
        + "".join(
            f"- id: {i}\n  description: {quoted}\n  category: c.at\n"
            f"  input: {{n: {i}, text: {quoted}}}\n"
            for i in ("one", "two")
        )
    )
    subprocess.run(["git", "init", "-q"], cwd=pytester.path, check=True)
    subprocess.run(["git", "add", "prompts"], cwd=pytester.path, check=True)
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "v"],
        cwd=pytester.path,
        check=True,
    )
    prompts.joinpath("v.yaml").write_text(
        prompts.joinpath("v.yaml")
        .read_text()
        .replace("model_config: {", "model_config: {temperature: 0.5, ")
        .replace("{user_id: ", "{user_id: '```x', other: ")
        + f"assistant_prefill: {quoted}\n"
    )
    return path


def test_hostile_text_survives_in_no_output(
    pytester: pytest.Pytester,
    anthropic_server: AnthropicServer,
    monkeypatch: pytest.MonkeyPatch,
    xdist_args: list[str],
) -> None:
    """Every field holds HOSTILE: case description and input (ids and categories follow the
    name rule, checked at collection, whose error is escaped too), the case
    file's name, the model name and model_config, the prompt texts, the answer and the
    judge's verdict (one invalid: its error quotes it raw)."""

    def responder(request: dict[str, Any]) -> Any:
        if "tools" not in request:
            return HOSTILE + " answer"
        text = json.dumps(request)
        scores = {d: 10 for d in ("correctness", "completeness", "clarity", "usefulness")}
        if '\\"n\\": \\"one\\"' in text or '"n": "one"' in text:
            scores["correctness"] = 250  # invalid: an error quoting the verdict
        verdict = {"scores": scores, "missing_topics": [HOSTILE], "notes": HOSTILE}
        return tool_use(request, {**verdict, "incorrect_claims": [HOSTILE]})

    anthropic_server.responder = responder
    _walk_project(pytester)
    summary = pytester.path / "step_summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    result = pytester.runpytest_subprocess(
        "--prompt=v",
        "--compare=v@HEAD",
        "--prompteval-scorer=claude",
        "--junitxml=junit.xml",
        "--json-report",
        "--json-report-file=report.json",
        "--prompteval-html=report.html",
        "--prompteval-markdown=report.md",
        "-vv",
        "-rA",
        *xdist_args,
    )
    terminal = result.stdout.str() + result.stderr.str()
    assert "judge verdict for case 'one' does not match the schema" in terminal
    assert "prompt changes" in terminal and "model_config.metadata: {'user_id':" in terminal
    assert _forged(terminal, markup=False) == []
    for name in ("report.md", "step_summary.md"):
        markdown = (pytester.path / name).read_text()
        assert "### Prompt changes" in markdown
        assert _markdown_forged(markdown) == []
    junit = (pytester.path / "junit.xml").read_text()
    assert 'name="prompteval.category"' in junit
    assert _forged(junit) == []
    html = (pytester.path / "report.html").read_text()
    assert "answer" in html and _forged(html) == []
    # JSON is data, not a log: its strings keep the text, but no raw control character
    report = (pytester.path / "report.json").read_text()
    assert "answer" in report and not any(c in report for c in RAW_CHARACTERS)
    assert "\n::" not in report


def test_a_model_name_in_a_missing_recording_error_is_escaped(
    pytester: pytest.Pytester, anthropic_server: AnthropicServer
) -> None:
    """A recording's label names its model: a forged one cannot write to the log."""
    anthropic_server.responder = lambda request: "fine"
    pytester.mkdir("prompts").joinpath("v.yaml").write_text("user_prompt: x\n")
    pytester.mkdir("prompt_cases").joinpath("c.yaml").write_text("cases:\n- id: c1\n  input: {}\n")
    pytester.runpytest("--prompt=v", f"--prompteval-model={HOSTILE}").assert_outcomes(passed=1)
    result = pytester.runpytest(
        "--prompt=v", "--prompteval-model=m2", "--prompteval-record=none", "-rA"
    )
    result.assert_outcomes(errors=1)
    terminal = result.stdout.str()
    assert "recorded with model \\x1b[2J\n\\::error::x ##\\[error]x" in terminal
    assert _forged(terminal, markup=False) == []


def test_a_prompt_file_error_is_escaped(pytester: pytest.Pytester) -> None:
    """Errors about prompt files stop the run as usage errors, quoting the file's keys."""
    pytester.mkdir("prompts").joinpath("v.yaml").write_text(
        f"user_prompt: x\n{json.dumps(HOSTILE)}: 1\n"
    )
    result = pytester.runpytest("--prompt=v")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "prompts/v.yaml:2: unknown field" in result.stderr.str()
    assert _forged(result.stdout.str() + result.stderr.str(), markup=False) == []


def test_a_requirement_of_a_case_file_cannot_make_its_check_backtrack() -> None:
    """Two ``\\s*`` side by side made ``a==1`` and 800 spaces take seconds (cubic)."""
    from pytest_prompteval.core import envspec

    for text in ("a==1" + " " * 20_000 + "x", "a[b]" + " " * 20_000 + "x", "a" + " (" * 9_000):
        assert envspec._REQUIREMENT.fullmatch(text) is None
    assert envspec._REQUIREMENT.fullmatch("a[b,c] (>=1, <2); python_version < '3.12'")
