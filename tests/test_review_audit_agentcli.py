"""Attacks on the terminal-safe output, the agents' bounds and the results folder's files
that got through: each as the hostile answer or pull request would make it."""

from __future__ import annotations

import io
import json
import threading
from pathlib import Path
from typing import Any

import pytest

from pytest_prompteval.core.content import ToolOutcome
from pytest_prompteval.core.errors import PromptevalError
from pytest_prompteval.core.history import RUN_FILE
from pytest_prompteval.core.paths import NAME, check_name
from pytest_prompteval.core.safetext import SafeStream, md_text
from pytest_prompteval.interaction import deadline as deadline_module
from pytest_prompteval.interaction.deadline import Deadline
from pytest_prompteval.testing import AnthropicServer, Fault, ScriptedAgent, call, tool_use
from pytest_prompteval.workflows.calibrate import FOLDER, kappa_warning

from .conftest import item_results

HOSTILE = "\x1b]52;c;cHduZWQ=\x07\x9b2J\r::error file=x::forged\n::warning::forged ##[error]x"
RAW = ("\x1b", "\x07", "\x9b", "\r")


def forged(text: str) -> list[str]:
    """What reached the output raw: control characters, lines that start a workflow
    command, ``##[``."""
    found = [repr(c) for c in RAW if c in text]
    found += [line for line in text.split("\n") if line.lstrip().startswith("::")]
    return found + ["##["] * ("##[" in text)


def _written(*parts: str | None) -> str:
    """What a SafeStream passes on of ``parts`` written in turn, None a flush."""
    out = io.StringIO()
    stream = SafeStream(out)
    for part in parts:
        if part is None:
            stream.flush()
        else:
            stream.write(part)
    stream.flush()
    return out.getvalue()


@pytest.mark.parametrize(
    "parts",
    [
        (":", None, ":error::forged\n"),
        ("  ", None, ":", None, ":warning::forged\n"),
        ("\t:", None, ":error::forged"),
    ],
)
def test_a_workflow_command_split_at_its_colons_by_a_flush_is_still_defused(
    parts: tuple[str | None, ...],
) -> None:
    # a prompt waiting for input flushes mid-line: the line's ``::`` may come in two parts
    assert forged(_written(*parts)) == []


def test_a_line_of_one_colon_flushed_and_ended_stays_readable() -> None:
    assert _written(":", None, " after\n") in (": after\n", "\\: after\n")
    assert _written("a:", None, ":b\n") == "a::b\n"  # not at the line's start: as it is


def _judge(notes: str) -> Any:
    def respond(request: dict[str, Any]) -> Any:
        if "tools" in request:
            scores = {d: 20 for d in ("correctness", "completeness", "clarity", "usefulness")}
            verdict = {"scores": scores, "missing_topics": [], "incorrect_claims": []}
            return tool_use(request, {**verdict, "notes": notes})
        return "an answer"

    return respond


def test_the_fixtures_check_prints_the_judges_notes_terminal_safe(
    pytester: pytest.Pytester, anthropic_server: AnthropicServer
) -> None:
    # prompteval.check(r, "claude") fails the test with the judge's notes: model text
    anthropic_server.responder = _judge(HOSTILE)
    pytester.mkdir("prompts").joinpath("v.yaml").write_text(
        "user_prompt: Explain.\nmodel_config: {model: m-gen}\n"
    )
    pytester.makepyfile(
        test_inline="""
        def test_judged(prompteval):
            r = prompteval.run("v", input={})
            prompteval.check(r, "claude", min_score=0.9)

        def test_asserted(prompteval):
            r = prompteval.run("v", input={})
            prompteval.check(r, "regex", value="^nothing like it$")
        """
    )
    result = pytester.runpytest("test_inline.py", "-rA")
    result.assert_outcomes(failed=2)
    out = result.stdout.str()
    assert "claude score" in out
    assert forged(out) == []


def test_the_fixtures_errors_quote_file_text_terminal_safe(
    pytester: pytest.Pytester, anthropic_server: AnthropicServer
) -> None:
    # a prompt file (a pull request's) whose error quotes its text: the version name asked
    anthropic_server.responder = _judge("fine")
    pytester.mkdir("prompts").joinpath("v.yaml").write_text("user_prompt: Explain.\n")
    pytester.makepyfile(
        test_inline=f"""
        def test_unknown(prompteval):
            prompteval.run({HOSTILE!r}, input={{}})
        """
    )
    result = pytester.runpytest("test_inline.py", "-rA")
    result.assert_outcomes(failed=1)
    assert forged(result.stdout.str()) == []


def _calibration(results: Path, model: str, dimensions: str) -> None:
    folder = results / FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    folder.joinpath(f"20990101T000000_000000_{model}.json").write_text(
        f'{{"judge_model": "{model}", "dimensions": {dimensions}}}'
    )


@pytest.mark.parametrize(
    "dimensions",
    [
        '{"correctness": {"kappa": NaN}}',
        '{"correctness": {"kappa": -0.4}, "overall": {"kappa": NaN}}',
        '{"correctness": {"kappa": 1e999}}',
        '{"correctness": {"kappa": 7}}',
        '{"correctness": {"kappa": true}}',
    ],
)
def test_a_forged_calibration_with_a_kappa_no_agreement_has_does_not_silence_min_kappa(
    tmp_path: Path, dimensions: str
) -> None:
    # a pull request adds the judge's "latest" calibration: a kappa outside [-1, 1] (NaN
    # compares false with the minimum) must not pass for agreement
    _calibration(tmp_path, "m-judge", dimensions)
    try:  # as the run summary shows it: a warning line, or the file's error
        (line,) = kappa_warning(tmp_path, ["m-judge"], 0.6)
    except PromptevalError as exc:
        line = str(exc)
    assert "m-judge" in line


def test_a_calibration_with_agreement_still_passes(tmp_path: Path) -> None:
    agreed = [[8 if row == col else 0 for col in range(5)] for row in range(5)]
    dims = {"correctness": {"kappa": 1.0, "confusion": agreed}}
    _calibration(tmp_path, "m-judge", json.dumps(dims))
    assert kappa_warning(tmp_path, ["m-judge"], 0.6) == []


def test_a_name_with_a_trailing_newline_is_no_name(pytester: pytest.Pytester) -> None:
    # ``$`` matches before a final newline: an id "abc\n" passed, and pytest printed its node
    # id (-v, --collect-only, the short summary) across two lines
    assert not NAME.match("abc\n")
    assert not RUN_FILE.match("20260101_000000_v.json\n")
    with pytest.raises(PromptevalError):
        check_name("v\n", "prompt version")
    pytester.mkdir("prompts").joinpath("v.yaml").write_text("user_prompt: hi\n")
    pytester.mkdir("prompt_cases").joinpath("c.yaml").write_text(
        'cases:\n- id: "abc\\n"\n  input: {}\n'
    )
    result = pytester.runpytest("--prompt=v", "--collect-only", "-q")
    out = result.stdout.str()
    assert "c.yaml:2" in out and "a name of letters" in out
    assert "\n[v]" not in out


def test_a_run_stopped_by_the_api_says_why_terminal_safe(
    pytester: pytest.Pytester, anthropic_server: AnthropicServer
) -> None:
    # the reason pytest prints as "Interrupted: ..." quotes the API's error message
    anthropic_server.inject(Fault(status=401, error_type="authentication_error", message=HOSTILE))
    pytester.mkdir("prompts").joinpath("v.yaml").write_text("user_prompt: hi\n")
    pytester.mkdir("prompt_cases").joinpath("c.yaml").write_text("cases:\n- id: c1\n  input: {}\n")
    result = pytester.runpytest("--prompt=v")
    out = result.stdout.str() + result.stderr.str()
    assert "status 401" in out
    assert forged(out) == []


@pytest.mark.parametrize(
    "text",
    ["![passed](https://evil.example/badge.png)", "[all checks passed](https://evil.example)"],
)
def test_markdown_text_draws_no_image_and_makes_no_link(text: str) -> None:
    # a case file's path or label in the step summary: Markdown's own syntax, not HTML's
    shown = md_text(text)
    assert "](" not in shown.replace("\\](", "")
    assert md_text("a\\[b]") == "a\\\\\\[b\\]"  # a backslash of the text escapes nothing


AGENT_PROMPT = """\
user_prompt: "{message}"
include_input: false
max_steps: 5
tools: [stuck]
"""
#: a Python tool the model's argument keeps busy: it returns only when the test lets it
STUCK_CONFTEST = """\
import pytest_prompteval
from pytest_prompteval.interaction import deadline


@pytest_prompteval.tool("stuck")
def stuck(query: str) -> str:
    \"\"\"Run a query.\"\"\"
    deadline.RELEASE.wait(60)  # a bound should the item wait for it
    deadline.RETURNED.set()
    return "rows"
"""


def test_a_python_tool_that_never_returns_fails_its_item_at_the_deadline(
    pytester: pytest.Pytester, anthropic_server: AnthropicServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the deadline counted a Python tool's time when it returned: one that does not (an
    # argument that makes the project's code loop, wait, or query forever) held the run
    release, returned = threading.Event(), threading.Event()
    monkeypatch.setattr(deadline_module, "RELEASE", release, raising=False)
    monkeypatch.setattr(deadline_module, "RETURNED", returned, raising=False)
    anthropic_server.responder = ScriptedAgent(
        {"go": [[call("stuck", query="forever")], ["Done."]]}
    )
    pytester.makeconftest(STUCK_CONFTEST)
    pytester.makeini("[pytest]\nprompteval_item_timeout = 0.01\n")
    pytester.mkdir("prompts").joinpath("agent.yaml").write_text(AGENT_PROMPT)
    pytester.mkdir("prompt_cases").joinpath("c.yaml").write_text(
        'cases:\n- id: c1\n  input: {message: "go"}\n  assert: [{contains: Done}]\n'
    )
    try:
        reprec = pytester.inline_run("--prompt=agent")
        assert not returned.is_set()  # the item ended while its tool still ran
    finally:
        release.set()  # the tool left behind ends
    (result,) = item_results(reprec)
    assert result["trajectory"]["failure"].startswith("item_timeout 0.01 s reached")
    assert not result["passed"]


def test_a_call_run_again_by_a_later_walk_counts_its_time_again() -> None:
    # a step whose answer does not hold its Python tool's outcome (a recording made without
    # it, or edited) runs the tool in every walk; counting it once let each walk of the
    # conversation (ahead, batch rounds, the item's own) spend the deadline anew
    now = [0.0]

    def tool(name: str, arguments: object) -> ToolOutcome:
        now[0] += 200
        return ToolOutcome("worked")

    def held(name: str, arguments: object) -> ToolOutcome:
        return ToolOutcome("worked")

    deadline = Deadline(500, clock=lambda: now[0])
    for execute, spent in ((tool, [200, 400]), (held, [200, 400]), (tool, [400, 800])):
        deadline.start()
        walked = []
        for n in range(2):
            deadline.run(execute, "slow", {"n": n})
            walked.append(deadline.spent)
        assert walked == spent
    assert deadline.passed
