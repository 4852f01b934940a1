"""Recordings hold only valid answers, say what they were made for, and say why one is
missing; ``prompteval recordings`` lists them per version and prunes the stale ones."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from pytest_prompteval.core.request import Request
from pytest_prompteval.core.response import Response
from pytest_prompteval.providers.labels import Label
from pytest_prompteval.providers.recording_file import Recording
from pytest_prompteval.testing import AnthropicServer, tool_use
from pytest_prompteval.workflows.recordings import Current, stale_reason

from .conftest import copy_example_suite, generated_project, git, item_results, prompteval

SCORES = {"correctness": 90, "completeness": 90, "clarity": 90, "usefulness": 90}
GOOD_VERDICT = {
    "scores": SCORES,
    "missing_topics": [],
    "incorrect_claims": [],
    "notes": "fine",
}
BAD_VERDICT = {**GOOD_VERDICT, "scores": {**SCORES, "correctness": 250}}
JUDGED = ["--prompt=v", "--prompteval-scorer=claude", "-k", "c00"]


def answer(request: dict[str, Any]) -> Any:
    if "tools" in request:
        return tool_use(request, GOOD_VERDICT)
    return "The loop optimization unrolls the loop."


@pytest.fixture
def project(pytester: pytest.Pytester, anthropic_server: AnthropicServer) -> pytest.Pytester:
    anthropic_server.responder = answer
    generated_project(pytester, 3, prompt="user_prompt: Explain {n}.\n")
    return pytester


def recordings(pytester: pytest.Pytester) -> dict[str, dict[str, Any]]:
    """Every recording by its purpose and case (the label), or by file name (no label)."""
    found = {}
    for path in sorted((pytester.path / "prompt_recordings").glob("*.json")):
        data = json.loads(path.read_text())
        label = data.get("label")
        name = f"{label['purpose']} {label['case']}" if label else path.name
        assert name not in found
        found[name] = {**data, "path": path}
    return found


def count(pytester: pytest.Pytester) -> int:
    return len(list((pytester.path / "prompt_recordings").glob("*.json")))


def judge_calls(server: AnthropicServer) -> int:
    return sum("tools" in r.body for r in server.requests)


# -- only valid answers are stored (#13.6) ------------------------------------------------


def test_an_invalid_verdict_is_never_recorded(
    project: pytest.Pytester, anthropic_server: AnthropicServer
) -> None:
    anthropic_server.responder = lambda r: tool_use(r, BAD_VERDICT) if "tools" in r else answer(r)
    project.runpytest(*JUDGED).assert_outcomes(errors=1)
    assert judge_calls(anthropic_server) == 2  # the first answer and the retry
    assert sorted(recordings(project)) == ["generation c00"]


def test_a_good_retry_is_recorded_as_the_answer_to_the_question(
    project: pytest.Pytester, anthropic_server: AnthropicServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    def text_first(request: dict[str, Any]) -> Any:
        if "tools" in request and "rejected" not in request["system"]:
            return "I think it is fine."  # text instead of the tool call
        return answer(request)

    anthropic_server.responder = text_first
    project.inline_run(*JUDGED).assertoutcome(passed=1)
    verdict = recordings(project)["judge c00"]
    assert verdict["response"]["tool_input"] == GOOD_VERDICT
    assert "rejected" not in verdict["request"]["system"]  # kept under the question's key

    monkeypatch.delenv("ANTHROPIC_API_KEY")
    reprec = project.inline_run(*JUDGED)
    reprec.assertoutcome(passed=1)
    (result,) = item_results(reprec)
    assert result["judge_calls"] == 1 and result["judge_score"] is not None


def test_a_recorded_invalid_verdict_is_asked_again_in_new_mode_and_errors_in_none(
    project: pytest.Pytester, anthropic_server: AnthropicServer
) -> None:
    project.inline_run(*JUDGED).assertoutcome(passed=1)
    verdict = recordings(project)["judge c00"]
    path: Path = verdict.pop("path")
    verdict["response"]["tool_input"] = BAD_VERDICT  # as an older version recorded it
    path.write_text(json.dumps(verdict))

    result = project.runpytest(*JUDGED, "--prompteval-record=none")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            f"prompt_recordings/{path.name}: the judge verdict for case 'c00' with prompt 'v' "
            "is not a valid answer (scores/correctness: 250 is greater than the maximum of "
            "100); run with --prompteval-record=new to ask again"
        ]
    )
    assert judge_calls(anthropic_server) == 1

    project.inline_run(*JUDGED).assertoutcome(passed=1)  # mode "new", the default with a key
    assert judge_calls(anthropic_server) == 2
    assert len(anthropic_server.requests) == 3  # the generation was replayed
    assert recordings(project)["judge c00"]["response"]["tool_input"] == GOOD_VERDICT


# -- recordings explain themselves (#13.7) ------------------------------------------------


def test_a_recording_is_labelled_with_what_it_was_made_for(project: pytest.Pytester) -> None:
    project.inline_run(*JUDGED).assertoutcome(passed=1)
    found = recordings(project)
    digest = hashlib.sha256((project.path / "prompts" / "v.yaml").read_bytes()).hexdigest()
    label = found["generation c00"]["label"]
    assert datetime.fromisoformat(label.pop("recorded_at")).tzinfo is not None
    assert label == {
        "case": "c00",
        "case_file": "c.yaml",
        "prompt": "v",
        "prompt_sha256": digest,
        "model": "claude-haiku-4-5",
        "purpose": "generation",
    }
    assert found["judge c00"]["label"]["model"] == "claude-sonnet-4-6"
    key = found["generation c00"]["path"].stem
    assert Request.from_api(found["generation c00"]["request"]).key(0) == key


def test_the_example_recordings_without_labels_still_replay(pytester: pytest.Pytester) -> None:
    copy_example_suite(pytester)
    pytester.runpytest("--prompt=current", "--prompteval-record=none").assert_outcomes(passed=5)


def test_a_bad_label_makes_the_recording_unreadable(project: pytest.Pytester) -> None:
    project.inline_run("--prompt=v", "-k", "c00").assertoutcome(passed=1)
    recording = recordings(project)["generation c00"]
    path: Path = recording.pop("path")
    recording["label"]["prompt_sha256"] = "not a digest"
    path.write_text(json.dumps(recording))
    result = project.runpytest("--prompt=v", "-k", "c00", "--prompteval-record=none")
    result.stdout.fnmatch_lines(
        [
            f"*prompt_recordings/{path.name}: unreadable recording: 'label.prompt_sha256': "
            "expected a SHA-256 hex digest; delete it to record again"
        ]
    )


def test_replay_says_the_prompt_file_changed(
    project: pytest.Pytester, xdist_args: list[str]
) -> None:
    project.inline_run("--prompt=v").assertoutcome(passed=3)
    project.path.joinpath("prompts", "v.yaml").write_text("user_prompt: Explain {n} well.\n")
    result = project.runpytest("--prompt=v", "--prompteval-record=none", "-k", "c01", *xdist_args)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "no recording for case 'c01' with prompt 'v', sample 0: prompts/v.yaml changed "
            "since its recordings (3 cases); run with --prompteval-record=new"
        ]
    )


def test_replay_says_the_model_changed(project: pytest.Pytester) -> None:
    project.inline_run("--prompt=v", "-k", "c00").assertoutcome(passed=1)
    result = project.runpytest(
        "--prompt=v", "-k", "c00", "--prompteval-record=none", "--prompteval-model=m2"
    )
    result.stdout.fnmatch_lines(
        [
            "no recording for case 'c00' with prompt 'v', sample 0: recorded with model "
            "claude-haiku-4-5; this run asks for m2; run with --prompteval-record=new"
        ]
    )


def test_recordings_lists_prunes_and_keeps_what_is_in_use(
    project: pytest.Pytester, anthropic_server: AnthropicServer
) -> None:
    project.inline_run("--prompt=v", "--prompteval-scorer=claude").assertoutcome(passed=3)
    assert count(project) == 6
    project.path.joinpath("prompts", "v.yaml").write_text("user_prompt: Explain {n} well.\n")
    project.inline_run("--prompt=v", "-k", "c00").assertoutcome(passed=1)

    done = prompteval(project.path, "recordings")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "prompt_recordings: 7 recordings, 6 stale",
        "  version  recordings  cases  verdicts  stale",
        "  v        7           3      3         6",
    ]

    listed = prompteval(project.path, "recordings", "--stale").stdout.splitlines()[3:]
    assert len(listed) == 6
    assert all(line.endswith(": its prompt file changed") for line in listed)
    assert any(": judge for case 'c02', sample 0, recorded 20" in line for line in listed)

    dry = prompteval(project.path, "recordings", "--prune", "--dry-run")
    assert dry.stdout.splitlines()[-1] == (
        "would remove 6 stale recordings from prompt_recordings, kept 1"
    )
    assert count(project) == 7
    pruned = prompteval(project.path, "recordings", "--prune")
    assert (
        pruned.stdout.splitlines()[-1]
        == "removed 6 stale recordings from prompt_recordings, kept 1"
    )
    assert sorted(recordings(project)) == ["generation c00"]
    project.inline_run("--prompt=v", "-k", "c00", "--prompteval-record=none").assertoutcome(
        passed=1
    )


def test_unlabelled_recordings_are_judged_by_key(pytester: pytest.Pytester) -> None:
    copy_example_suite(pytester)
    store = pytester.path / "prompt_recordings"
    source = json.loads(next(iter(sorted(store.glob("*.json")))).read_text())
    source["request"]["max_tokens"] = 7  # a request no case makes now
    source["key"] = Request.from_api(source["request"]).key(source["sample"])
    store.joinpath(f"{source['key']}.json").write_text(json.dumps(source))
    done = prompteval(pytester.path, "recordings", "--stale")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "prompt_recordings: 11 recordings, 1 stale",
        "  version     recordings  cases  verdicts  stale",
        "  unlabelled  11          -      -         1",
        f"prompt_recordings/{source['key']}.json: sample 0: unlabelled, and no current item "
        "asks for it",
    ]


def test_recordings_will_not_prune_against_a_broken_collection(
    project: pytest.Pytester,
) -> None:
    project.inline_run("--prompt=v", "-k", "c00").assertoutcome(passed=1)
    project.path.joinpath("prompt_cases", "bad.yaml").write_text("cases:\n- id: [x]\n")
    done = prompteval(project.path, "recordings", "--prune")
    assert done.returncode == 2
    assert done.stderr.startswith("prompteval: error: prompt_cases/bad.yaml:2: case '#1'")
    assert count(project) == 1
    dry = prompteval(project.path, "recordings", "--dry-run")
    assert dry.returncode == 2
    assert dry.stderr == "prompteval: error: --dry-run goes with --prune\n"


def test_an_invalid_improve_answer_is_never_recorded(
    project: pytest.Pytester, anthropic_server: AnthropicServer
) -> None:
    project.inline_run("--prompt=v").assertoutcome(passed=3)
    anthropic_server.responder = lambda r: tool_use(r, {"suggestions": []})
    done = prompteval(project.path, "improve", "--prompt", "v")
    assert done.returncode == 2
    assert done.stderr.startswith(
        "prompteval: error: the improve answer for prompt 'v' does not match the schema "
        "after one retry: (verdict): 'expected_impact' is a required property; "
    )
    assert count(project) == 3  # the generations only


def _recording(key: str, **label: str) -> Recording:
    fields = {
        "case": "c00",
        "case_file": "c.yaml",
        "prompt": "v",
        "prompt_sha256": "a" * 64,
        "model": "m",
        "purpose": "generation",
        "recorded_at": "2026-11-26T05:00:00+00:00",
        **label,
    }
    return Recording(key, 0, {}, Response(text="", model="m"), Label(**fields))


NOW = Current(
    keys=frozenset({"in-use"}),
    items={("c00", "v"): ("a" * 64, "m", False), ("c00", "s"): ("b" * 64, "m", True)},
    prompts={"v": "a" * 64, "s": "b" * 64},
)


@pytest.mark.parametrize(
    ("key", "label", "stale"),
    [
        ("in-use", {"prompt_sha256": "0" * 64}, ""),
        ("old", {}, "its case or request changed"),
        ("old", {"prompt_sha256": "0" * 64}, "its prompt file changed"),
        ("old", {"model": "m0"}, "recorded with m0, the item now asks m"),
        ("old", {"case": "gone"}, "no case 'gone' now"),
        ("old", {"prompt": "w"}, "no prompt version 'w' now"),
        ("old", {"purpose": "judge"}, ""),  # a verdict on the item's answer
        ("old", {"prompt": "s", "prompt_sha256": "b" * 64}, ""),  # a strategy's next call
        ("old", {"case_file": "test_app.py", "case": "inline"}, ""),  # the fixture's
        ("old", {"purpose": "improve", "case": "improve-v"}, ""),
        ("old", {"purpose": "improve", "prompt_sha256": "0" * 64}, "its prompt file changed"),
    ],
)
def test_which_labelled_recordings_are_stale(key: str, label: dict[str, str], stale: str) -> None:
    assert stale_reason(_recording(key, **label), NOW) == stale


def test_prune_keeps_the_samples_addopts_draw_and_the_versions_ci_compares_against(
    project: pytest.Pytester,
) -> None:
    project.makeini("[pytest]\naddopts = --prompteval-samples=3\n")
    project.inline_run("--prompt=v").assertoutcome(passed=9)
    assert count(project) == 9  # samples 0-2 of three cases
    git(project.path, "init", "-q", "-b", "main")
    git(project.path, "add", ".")
    git(project.path, "commit", "-q", "-m", "main")
    project.path.joinpath("prompts", "v.yaml").write_text("user_prompt: Explain {n} well.\n")
    project.inline_run("--prompt=v", "--compare=v@main").assertoutcome(passed=18)

    dry = prompteval(project.path, "recordings", "--prune", "--dry-run", "--compare", "v@main")
    assert dry.stdout.splitlines()[-1] == (
        "would remove 0 stale recordings from prompt_recordings, kept 18"
    )
    # without the comparison, main's recordings are no current item's
    dry = prompteval(project.path, "recordings", "--prune", "--dry-run")
    assert dry.stdout.splitlines()[-1] == (
        "would remove 9 stale recordings from prompt_recordings, kept 9"
    )
