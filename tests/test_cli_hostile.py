"""Every ``prompteval`` command, walked with hostile text in the answers, the judge's words,
the case and prompt files, the results and their review files: nothing of it reaches the
terminal or a CI log raw (no escape sequence, OSC 52 clipboard write, BEL, C1 control,
carriage return, bidirectional override or NUL; no line that GitHub Actions runs as a
workflow command). The commands come from the CLI's own parser, so a new one is walked too
(with no arguments, until it is given some here)."""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_prompteval.cli import build_parser
from pytest_prompteval.testing import AnthropicServer, tool_use

HOSTILE = (
    "\x1b[2J\x1b[H\x1b]52;c;cHduZWQ=\x07\x9b31m\r::error file=x::forged\n"
    "::set-output name=x::y\n##[error]forged \u202eevil\u2066 \x00nul\x85"
)
RAW = ("\x1b", "\x07", "\x9b", "\x85", "\r", "\u202e", "\u2066", "\x00")
JUDGED = ("correctness", "completeness", "clarity", "usefulness")


def forged(text: str) -> list[str]:
    """What reached the output raw."""
    found = [repr(c) for c in RAW if c in text]
    found += [line for line in text.split("\n") if line.lstrip().startswith("::")]
    return found + ["##["] * ("##[" in text)


def respond(request: dict[str, Any]) -> Any:
    """Hostile answers, judge verdicts and improvement suggestions."""
    if "tools" not in request:
        return HOSTILE + " answer"
    if "suggestions" in json.dumps(request["tools"]):
        suggestion = {
            "issue": HOSTILE,
            "current_text": HOSTILE,
            "suggested_text": HOSTILE,
            "rationale": HOSTILE,
            "priority": "high",
        }
        return tool_use(
            request,
            {
                "suggestions": [suggestion],
                "expected_impact": HOSTILE,
                "improved_system_prompt": "be careful",
                "improved_user_prompt": "{text}",
            },
        )
    verdict = {"scores": {d: 6 for d in JUDGED}, "missing_topics": [HOSTILE], "notes": HOSTILE}
    return tool_use(request, {**verdict, "incorrect_claims": [HOSTILE]})


def run(cwd: Path, *args: str, stdin: str = "") -> str:
    """The command in its own process; its output as bytes, decoded without translating
    newlines (a ``\\r`` must show)."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest_prompteval.cli", *args],
        cwd=cwd,
        input=stdin.encode(),
        capture_output=True,
        check=False,
    )
    return (done.stdout + done.stderr).decode("utf-8", "surrogateescape")


def view(cwd: Path) -> str:
    """``prompteval view`` serves until interrupted: its output up to its address line,
    then what it says as it stops."""
    process = subprocess.Popen(
        [sys.executable, "-m", "pytest_prompteval.cli", "view", "--no-open"],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None
    first = process.stdout.readline()
    process.send_signal(signal.SIGINT)
    out, err = process.communicate()
    return (first + out + err).decode("utf-8", "surrogateescape")


def project(pytester: pytest.Pytester) -> Path:
    """Hostile prompt and case files (their text and names), one run scored by the judge, a
    recording's name, a SWE-bench line: the results folder's run file."""
    quoted = json.dumps(HOSTILE)
    pytester.makeini("[pytest]\n")
    pytester.mkdir("prompts").joinpath("v.yaml").write_text(
        f"description: {quoted}\nsystem_prompt: {quoted}\nuser_prompt: '{{text}}'\n"
        f"model_config: {{model: {quoted}}}\n"
    )
    # a file's name is the pull request's to choose too: all but NUL and "/"
    named = HOSTILE.replace("\x00", "").replace("/", "")
    pytester.mkdir("prompt_cases").joinpath(f"c{named}.yaml").write_text(
        f"description: {quoted}\ncases:\n"
        + "".join(
            f"- id: {i}\n  description: {quoted}\n  input: {{text: {quoted}}}\n"
            f"  expected_topics: [{quoted}]\n"
            for i in ("one", "two")
        )
    )
    pytester.runpytest_subprocess("--prompt=v", "--prompteval-scorer=claude")
    (results,) = pytester.path.joinpath("prompt_results").glob("*_v.json*")
    pytester.path.joinpath("prompt_recordings", f"{named}.json").write_text("{}")
    pytester.path.joinpath("bad.jsonl").write_text(json.dumps({"instance_id": HOSTILE}) + "\n")
    pytester.mkdir("repos")
    return results


#: the arguments each command is walked with (stdin after "<"); any other: none
ARGUMENTS: dict[str, list[str]] = {
    "import": ["swebench", "bad.jsonl", "--repos", "repos"],
    "merge": ["{results}", "-o", "merged"],
    "review": [
        "{results}",
        "--reviewer",
        HOSTILE.replace("\x00", ""),
        "<",
        "4\n4\n4\n4\nok\n4\n4\n4\n4\n\n",
    ],
    "improve": ["--prompt", "v", "--create-improved", "--output", "v2"],
    "recordings": ["--stale"],
    "check-cases": [],
    "schema": ["case"],
}
#: commands whose output shows the planted text (escaped): each prints answers or files
SHOWS = ("list", "review", "improve", "calibrate", "recordings")


def commands() -> list[str]:
    (subparsers,) = [
        a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)
    ]
    return list(subparsers.choices)


def test_every_command_prints_hostile_text_escaped(
    pytester: pytest.Pytester, anthropic_server: AnthropicServer
) -> None:
    anthropic_server.responder = respond
    results = project(pytester)
    # review first: its file then holds the reviewer's name and comment for the others
    order = sorted(commands(), key=lambda name: name != "review")
    assert {"list", "review", "improve", "view", "calibrate"} <= set(order)
    outputs = {}
    for name in order:
        if name == "view":
            outputs[name] = view(pytester.path)
            continue
        given = [a.replace("{results}", str(results)) for a in ARGUMENTS.get(name, [])]
        stdin = given[given.index("<") + 1] if "<" in given else ""
        given = given[: given.index("<")] if "<" in given else given
        outputs[name] = run(pytester.path, name, *given, stdin=stdin)
    assert "--- answer ---" in outputs["review"]
    assert "PROMPT IMPROVEMENT SUGGESTIONS" in outputs["improve"]
    assert "prompteval view: http://127.0.0.1:" in outputs["view"]
    for name in SHOWS:
        assert "\\x1b[2J" in outputs[name], (name, outputs[name])
    assert {name: forged(text) for name, text in outputs.items()} == {n: [] for n in outputs}


def test_json_output_keeps_the_text_and_starts_no_command(
    pytester: pytest.Pytester, anthropic_server: AnthropicServer
) -> None:
    """``--json`` is data: a JSON reader gets the hostile text back whole, a log sees it
    escaped (``##[`` as ``##\\u005b``)."""
    anthropic_server.responder = respond
    project(pytester)
    done = subprocess.run(
        [sys.executable, "-m", "pytest_prompteval.cli", "list", "--json"],
        cwd=pytester.path,
        capture_output=True,
        check=False,
    )
    text = done.stdout.decode()
    assert forged(text) == []
    assert json.loads(text)["case_files"][0]["description"] == HOSTILE


def test_a_crash_prints_its_traceback_escaped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A bug's traceback quotes what the command read (an exception's message, a line of a
    file): it goes out through the same rules, and the exit status is 1 as for any crash."""
    from pytest_prompteval import cli

    def crash(args: argparse.Namespace) -> int:
        raise RuntimeError(HOSTILE)

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(cli, "cmd_list", crash)
    assert cli.main(["list"]) == 1
    captured = capsys.readouterr()
    assert "RuntimeError: \\x1b[2J" in captured.err
    assert forged(captured.out + captured.err) == []


def test_ctrl_c_is_one_line_not_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_prompteval import cli

    def interrupted(args: argparse.Namespace) -> int:
        raise KeyboardInterrupt

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(cli, "cmd_list", interrupted)
    assert cli.main(["list"]) == 130
    assert capsys.readouterr().err == "prompteval: interrupted\n"


def test_a_reader_that_stops_reading_gets_no_traceback(tmp_path: Path) -> None:
    """``prompteval schema case | head -1``: the pipe closes while the command writes."""
    command = [sys.executable, "-m", "pytest_prompteval.cli", "schema", "case"]
    with subprocess.Popen(
        command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    ) as process:
        assert process.stdout is not None and process.stderr is not None
        process.stdout.read(10)
        process.stdout.close()
        error = process.stderr.read().decode()
    assert process.returncode in (0, 1) and "Traceback" not in error, error
