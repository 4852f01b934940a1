"""``--prompteval-trusted-recordings REF``: a pull request cannot forge the answers its own
gate replays. Recordings REF has are read as REF has them; the ones it has not are named
as unverified, asked for again with a key, and errors in gates mode without one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_prompteval.providers.trusted import Changes
from pytest_prompteval.report.gates import NO_VERDICT
from pytest_prompteval.testing import AnthropicServer

from .conftest import generated_project, git, item_results

FORGED = "The loop optimization, forged."
TRUSTED = ("--prompt=v", "--prompteval-trusted-recordings=main")


def answer(request: dict[str, Any]) -> str:
    # c01 fails: its answer misses the expected topic
    return "Nothing relevant." if "Explain 1." in json.dumps(request) else "The loop optimization."


def recording_of(root: Path, case: str) -> Path:
    for path in (root / "prompt_recordings").glob("*.json"):
        if json.loads(path.read_text())["label"]["case"] == case:
            return path
    raise AssertionError(f"no recording for {case}")


def forge(path: Path, text: str) -> None:
    data = json.loads(path.read_text())
    data["response"]["text"] = text
    path.write_text(json.dumps(data))


@pytest.fixture
def pull_request(
    pytester: pytest.Pytester, anthropic_server: AnthropicServer, monkeypatch: pytest.MonkeyPatch
) -> pytest.Pytester:
    """main: c00 and c01 recorded (c01 fails). The change: c01's recording forged to pass,
    and a case c02 added with a forged recording of its own."""
    anthropic_server.responder = answer
    generated_project(pytester, 3, prompt="user_prompt: Explain {n}.\n")
    root = pytester.path
    pytester.runpytest("--prompt=v", "--prompteval-record=new").assert_outcomes(passed=2, failed=1)
    recording_of(root, "c02").unlink()
    cases = (root / "prompt_cases" / "c.yaml").read_text()
    (root / "prompt_cases" / "c.yaml").write_text(cases.split("- id: c02")[0])
    git(root, "init", "-q", "-b", "main")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "main")

    (root / "prompt_cases" / "c.yaml").write_text(cases)
    pytester.runpytest("--prompt=v", "-k", "c02", "--prompteval-record=new")
    forge(recording_of(root, "c01"), FORGED)
    forge(recording_of(root, "c02"), FORGED)
    anthropic_server.requests.clear()
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    return pytester


def test_without_the_option_a_forged_recording_passes(pull_request: pytest.Pytester) -> None:
    # the hole the option closes
    pull_request.runpytest("--prompt=v").assert_outcomes(passed=3)


def test_recordings_the_ref_has_are_read_as_committed_there(
    pull_request: pytest.Pytester,
) -> None:
    root = pull_request.path
    result = pull_request.runpytest(*TRUSTED, "--prompteval-markdown=out.md")

    result.assert_outcomes(passed=2, failed=1)
    outcome = {r["case_id"]: (r["outcome"], r["unverified"]) for r in item_results(result)}
    assert outcome == {
        "c00": ("passed", None),
        "c01": ("failed", None),  # main's answer, not the forged one
        "c02": ("passed", "replayed"),
    }
    added = recording_of(root, "c02").relative_to(root)
    changed = recording_of(root, "c01").relative_to(root)
    result.stdout.fnmatch_lines(
        [
            "*- recordings -*",
            f"unverified recordings (not at main): 1: {added}",
            f"recordings changed since main, read as at main: 1: {changed}",
            "items on unverified recordings: 1 replayed",
        ]
    )
    markdown = (root / "out.md").read_text()
    assert f"- unverified recordings (not at main): 1: {added}" in markdown
    assert f"- recordings changed since main, read as at main: 1: {changed}" in markdown


def test_gates_mode_without_a_key_errors_on_unverified_recordings(
    pull_request: pytest.Pytester,
) -> None:
    result = pull_request.runpytest(*TRUSTED, "--prompteval-exit=gates")

    result.assert_outcomes(passed=1, failed=1, errors=1)
    assert result.ret == NO_VERDICT
    result.stdout.fnmatch_lines(["*.json: recording for case 'c02'*not at main*"])


def test_with_a_key_unverified_recordings_are_asked_again_and_compared(
    pull_request: pytest.Pytester,
    anthropic_server: AnthropicServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    result = pull_request.runpytest(*TRUSTED, "--prompteval-record=new")

    result.assert_outcomes(passed=2, failed=1)
    assert len(anthropic_server.requests) == 1  # c02 alone: main's recordings replay
    (c02,) = [r for r in item_results(result) if r["case_id"] == "c02"]
    assert c02["unverified"] == "asked again: different answer"
    assert c02["response"] == "The loop optimization."
    result.stdout.fnmatch_lines(["items on unverified recordings: 1 asked again: different answer"])


def test_an_unknown_trusted_ref_is_one_usage_error(pull_request: pytest.Pytester) -> None:
    result = pull_request.runpytest("--prompt=v", "--prompteval-trusted-recordings=nope")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --prompteval-trusted-recordings: unknown git ref 'nope'*"])


def test_a_provider_from_the_ini_cannot_answer_unverified_recordings(
    pull_request: pytest.Pytester,
) -> None:
    # an offline test double the project already has, named by the branch's ini
    pull_request.makepyfile(
        double="def good(request, **kw):\n    return 'The loop optimization.'\n"
    )
    pull_request.makeini("[pytest]\npythonpath = .\nprompteval_provider = python:double:good\n")
    result = pull_request.runpytest(*TRUSTED, "--prompteval-exit=gates")

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: ini prompteval_provider: with --prompteval-trusted-recordings the provider comes "
         "from the command line; give --prompteval-provider there"]
    )  # fmt: skip


@pytest.mark.parametrize("option", ["--co", "--markers", "--fixtures", "--setup-plan"])
def test_gates_mode_refuses_what_evaluates_nothing(
    pull_request: pytest.Pytester, option: str
) -> None:
    # a branch's ini can add pytest's own options to addopts: a gate must not exit 0 unread
    pull_request.makeini(f"[pytest]\naddopts = {option}\n")
    result = pull_request.runpytest(*TRUSTED, "--prompteval-exit=gates")

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --prompteval-exit=gates decides on evaluated cases: *"])


def test_the_recordings_block_names_at_most_twenty_files_a_line() -> None:
    added = tuple(f"prompt_recordings/{i:02d}.json" for i in range(23))
    (line,) = Changes("main", added, ()).lines()
    assert line.startswith("unverified recordings (not at main): 23: prompt_recordings/00.json")
    assert line.endswith("prompt_recordings/19.json, +3 more")
