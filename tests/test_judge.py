"""The Claude judge, hybrid scoring and judge stability, against the loopback server."""

from __future__ import annotations

import json
import re
import socket
from typing import Any

import pytest

from pytest_prompteval.testing import AnthropicServer, Fault, tool_use

from .conftest import item_results

CASES = "cases:\n" + "".join(
    f"- id: case_{i:02d}\n  difficulty: beginner\n  expected_topics: [loop_optimization]\n"
    f"  input: {{code: 'loop {i}'}}\n"
    for i in range(8)
)
PROMPTS = {
    "current": "system_prompt: 'Be precise.'\nuser_prompt: Explain.\n",
    "v1_baseline": "system_prompt: 'Be brief.'\nuser_prompt: Explain.\n",
}


def verdict_for(answer: str) -> dict[str, Any]:
    good = "loop optimization" in answer
    score = 90 if good else 30
    return {
        "scores": {
            "correctness": score,
            "completeness": score - 10,
            "clarity": 80,
            "usefulness": 70,
        },
        "missing_topics": [] if good else ["loop_optimization"],
        "incorrect_claims": [],
        "notes": "good" if good else "misses the loop",
    }


def responder(request: dict[str, Any]) -> Any:
    if "tools" in request:
        answer = re.search(
            r"<answer>\n(.*)\n</answer>", request["messages"][0]["content"][0]["text"], re.DOTALL
        )
        assert answer is not None
        return tool_use(request, verdict_for(answer.group(1)))
    if request["system"] == "Be precise.":
        return "The loop optimization unrolls the loop and keeps the sum in a register."
    code = json.loads(request["messages"][0]["content"][1]["text"])["code"]
    odd = int(code.split()[-1]) % 2
    return "The loop optimization is plain here." if odd else "It adds numbers."


@pytest.fixture
def project(pytester: pytest.Pytester, anthropic_server: AnthropicServer) -> pytest.Pytester:
    anthropic_server.responder = responder
    prompts = pytester.mkdir("prompts")
    for name, text in PROMPTS.items():
        prompts.joinpath(f"{name}.yaml").write_text(text + "model_config: {model: m-gen}\n")
    pytester.mkdir("prompt_cases").joinpath("cases.yaml").write_text(CASES)
    return pytester


def results(reprec: pytest.HookRecorder) -> list[dict[str, Any]]:
    return item_results(reprec)


def judge_requests(server: AnthropicServer) -> list[dict[str, Any]]:
    return [r.body for r in server.requests if "tools" in r.body]


def test_every_purpose_counts_input_tokens_as_the_api_does(
    project: pytest.Pytester, anthropic_server: AnthropicServer
) -> None:
    """The judge's input tokens leave cache reads apart, as the answer's always have: with
    every recorded call reading 1000 cached tokens, neither figure grows by them."""
    args = ["--prompt=current", "--prompteval-scorer=claude", "-k", "case_00"]
    (first,) = results(project.inline_run(*args))
    for path in project.path.joinpath("prompt_recordings").glob("*.json"):
        recording = json.loads(path.read_text())
        recording["response"]["cache_read_tokens"] = 1000
        path.write_text(json.dumps(recording))
    run = project.runpytest(*args, "--prompteval-record=none")
    run.stdout.fnmatch_lines(
        [f"current: judge: 1 judged, {first['judge_input_tokens']} in / 50 out tokens, *"]
    )
    (again,) = results(project.inline_run(*args, "--prompteval-record=none"))
    assert again["cache_read_tokens"] == 1000
    assert (again["input_tokens"], again["judge_input_tokens"]) == (
        first["input_tokens"],
        first["judge_input_tokens"],
    )


def test_claude_scorer_stores_dimensions_and_replays_without_requests(
    project: pytest.Pytester, anthropic_server: AnthropicServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    args = ["--prompt=current", "--prompteval-scorer=claude", "-k", "case_00 or case_01"]
    first = results(project.inline_run(*args))
    assert len(first) == 2
    judge = judge_requests(anthropic_server)
    assert len(judge) == 2
    assert judge[0]["model"] == "claude-sonnet-4-6" and judge[0]["temperature"] == 0.0
    assert judge[0]["tool_choice"] == {"type": "tool", "name": "submit_verdict"}
    schema = judge[0]["tools"][0]["input_schema"]
    assert schema["properties"]["scores"]["required"] == [
        "correctness",
        "completeness",
        "clarity",
        "usefulness",
    ]
    result = first[0]
    assert result["scorer"] == "claude" and result["passed"]
    assert result["dimensions"] == {
        "correctness": 0.9,
        "completeness": 0.8,
        "clarity": 0.8,
        "usefulness": 0.7,
    }
    assert result["score"] == pytest.approx(0.35 * 0.9 + 0.25 * 0.8 + 0.2 * 0.8 + 0.2 * 0.7)
    assert result["judge_input_tokens"] > 0 and result["judge_output_tokens"] == 50
    assert result["input_tokens"] != result["judge_input_tokens"]

    anthropic_server.stop()
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    monkeypatch.setattr(socket.socket, "connect", lambda *a: pytest.fail("network used"))
    again = results(project.inline_run(*args))
    assert [r["dimensions"] for r in again] == [r["dimensions"] for r in first]
    assert [r["score"] for r in again] == [r["score"] for r in first]


def test_changed_rubric_rejudges_and_reviewer_model_is_used(
    project: pytest.Pytester, anthropic_server: AnthropicServer
) -> None:
    args = ["--prompt=current", "--prompteval-scorer=claude", "-k", "case_00"]
    project.inline_run(*args)
    project.inline_run(*args)
    assert len(judge_requests(anthropic_server)) == 1  # the verdict was replayed
    project.path.joinpath("rubric.yaml").write_text(
        "strict:\n  system_prompt: Be strict.\n  evaluation_dimensions:\n"
        "    correctness: {weight: 1, description: Is it right?}\n"
    )
    project.makeini("[pytest]\nprompteval_review_templates = rubric.yaml\n")
    anthropic_server.responder = lambda r: (
        tool_use(
            r,
            {
                "scores": {"correctness": 55},
                "missing_topics": [],
                "incorrect_claims": [],
                "notes": "ok",
            },
        )
        if "tools" in r
        else responder(r)
    )
    (result,) = results(project.inline_run(*args, "--reviewer-model", "claude-opus-4-6"))
    judge = judge_requests(anthropic_server)
    assert len(judge) == 2 and judge[1]["model"] == "claude-opus-4-6"
    assert judge[1]["system"].startswith("Be strict.")
    assert result["dimensions"] == {"correctness": 0.55} and not result["passed"]


def test_invalid_verdict_is_retried_once_then_errors_with_the_verdict(
    project: pytest.Pytester, anthropic_server: AnthropicServer
) -> None:
    bad = {"scores": {"correctness": 250}, "notes": 3}
    anthropic_server.responder = lambda r: tool_use(r, bad) if "tools" in r else responder(r)
    result = project.runpytest("--prompt=current", "--prompteval-scorer=claude", "-k", "case_00")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "judge verdict for case 'case_00' does not match the schema after one retry: *",
            '  verdict: {"scores": {"correctness": 250}, "notes": 3}',
            "*errors: judge_invalid 1*",
        ]
    )
    judge = judge_requests(anthropic_server)
    assert len(judge) == 2
    assert "Your previous answer was rejected" in judge[1]["system"]


def test_a_good_retry_is_accepted(
    project: pytest.Pytester, anthropic_server: AnthropicServer
) -> None:
    def flaky(request: dict[str, Any]) -> Any:
        if "tools" not in request:
            return responder(request)
        if "rejected" in request["system"]:
            return tool_use(request, verdict_for("loop optimization"))
        return "I think it is fine."  # text instead of the tool call

    anthropic_server.responder = flaky
    reprec = project.inline_run("--prompt=current", "--prompteval-scorer=claude", "-k", "case_00")
    reprec.assertoutcome(passed=1)
    (result,) = results(reprec)
    assert result["judge_calls"] == 2


def test_judge_api_failure_errors_the_item_without_fallback(
    project: pytest.Pytester, anthropic_server: AnthropicServer
) -> None:
    project.inline_run("--prompt=current", "-k", "case_00")  # record the generation only
    anthropic_server.inject(*[Fault(status=500, message="judge down")] * 3)
    reprec = project.inline_run("--prompt=current", "--prompteval-scorer=claude", "-k", "case_00")
    reprec.assertoutcome(failed=1)  # at setup: an error, not a failure of the prompt
    (result,) = results(reprec)
    assert result["outcome"] == "error"
    assert result["error_type"] == "api_error" and "judge down" in result["error"]
    assert result["score"] is None and result["automatic_score"] is not None
    assert result["response"]  # what was computed before the failure is kept


def test_hybrid_judges_the_same_cases_for_every_version(
    project: pytest.Pytester, anthropic_server: AnthropicServer, xdist_args: list[str]
) -> None:
    args = [
        "--prompt=current",
        "--compare=v1_baseline",
        "--prompteval-scorer=hybrid",
        "--prompteval-judge-rate=0.5",
        "--prompteval-seed=7",
    ]
    result = project.runpytest(*args, "--json-report", "--json-report-file=r.json", *xdist_args)
    report = json.loads(project.path.joinpath("r.json").read_text())
    items = [t["metadata"]["prompteval"] for t in report["tests"]]
    judged = {
        version: sorted(r["case_id"] for r in items if r["prompt"] == version and r["judged"])
        for version in ("current", "v1_baseline")
    }
    assert judged["current"] == judged["v1_baseline"]
    assert 0 < len(judged["current"]) < 8
    # Pass/fail in hybrid mode comes from the automatic score.
    assert all(r["passed"] == (r["automatic_score"] >= r["threshold"]) for r in items)
    result.stdout.fnmatch_lines(
        [
            f"current: judge: {len(judged['current'])} judged, * tokens, $*",
            f"current: automatic vs judge on {len(judged['current'])}: Spearman *, mean |diff| *, "
            "pass/fail agree *%, Cohen's kappa * (both pass *, automatic only *, judge only *, "
            "both fail *)",
            "v1_baseline: automatic vs judge on *",
        ]
    )


def test_judge_repeats_report_their_spread(
    project: pytest.Pytester, anthropic_server: AnthropicServer
) -> None:
    scores = iter([90, 70, 80])
    anthropic_server.responder = lambda r: (
        tool_use(
            r,
            {
                **verdict_for("loop optimization"),
                "scores": dict.fromkeys(
                    ("correctness", "completeness", "clarity", "usefulness"), next(scores)
                ),
            },
        )
        if "tools" in r
        else responder(r)
    )
    result = project.runpytest(
        "--prompt=current",
        "--prompteval-scorer=claude",
        "--prompteval-judge-repeats=3",
        "-k",
        "case_00",
    )
    result.assert_outcomes(passed=1)
    assert len(judge_requests(anthropic_server)) == 3
    # The standard deviation of 0.9, 0.7, 0.8 (the range, 0.2, would grow with the repeats).
    result.stdout.fnmatch_lines(
        ["current: judge spread: mean standard deviation 0.100 over 3 repeats"]
    )


def test_prompteval_fixture_from_python_tests(
    project: pytest.Pytester, anthropic_server: AnthropicServer, xdist_args: list[str]
) -> None:
    project.makepyfile(
        test_inline="""
        def test_good(prompteval):
            r = prompteval.run("current", input={"code": "loop 1"}, difficulty="beginner",
                               expected_topics=["loop_optimization"])
            assert "loop optimization" in r.text
            assert prompteval.check(r, "automatic", min_score=0.5) >= 0.5
            assert prompteval.check(r, "contains", value="register") == 1.0
            assert prompteval.check(r, "claude", min_score=0.8) > 0.8

        def test_judge_says_no(prompteval):
            r = prompteval.run("v1_baseline", input={"code": "loop 2"})
            prompteval.check(r, "claude", min_score=0.8)

        def test_unknown_version(prompteval):
            prompteval.run("v9", input={})
        """
    )
    result = project.runpytest("test_inline.py", *xdist_args)
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines_random(
        [
            "*claude score 0.* < 0.80 (judge: misses the loop)*",
            "*unknown prompt version 'v9'*available: current, v1_baseline*",
            "*prompteval inline runs*",
            "test_inline.py::test_good [[]current[]]: passed, score *, live",
            "test_inline.py::test_judge_says_no [[]v1_baseline[]]: *, live",
        ]
    )
    # inline runs are their own cases: out of the suite's history, summary and gates
    assert not (project.path / "prompt_results").exists()
    assert "prompteval summary" not in result.stdout.str()


def test_generate_with_your_app_judge_with_claude(
    project: pytest.Pytester, anthropic_server: AnthropicServer
) -> None:
    project.makepyfile(myapp="def answer(request, **kw):\n    return 'It adds numbers.'\n")
    project.makeini("[pytest]\npythonpath = .\n")
    result = project.runpytest(
        "--prompt=current",
        "--prompteval-scorer=claude",
        "--prompteval-provider=python:myapp:answer",  # the judge stays on anthropic
        "-k",
        "case_00",
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*judge notes: misses the loop*"])
    # only the judge went to the API: the generation came from the app
    assert len(judge_requests(anthropic_server)) == len(anthropic_server.requests) == 1


def test_a_judge_by_majority_of_votes_records_each_vote_and_replays_them(
    pytester: pytest.Pytester, anthropic_server: AnthropicServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    scores = iter([90, 40, 80])

    def respond(request: dict[str, Any]) -> Any:
        if "tools" in request:
            return tool_use(request, {"score": next(scores), "reason": "it explains the loop"})
        return "The loop optimization."

    anthropic_server.responder = respond
    pytester.mkdir("prompts").joinpath("v.yaml").write_text("user_prompt: Explain.\n")
    pytester.mkdir("prompt_cases").joinpath("c.yaml").write_text(
        "cases:\n- id: c1\n  input: {}\n  assert:\n"
        "    - {type: judge, value: 'Is the explanation correct?', votes: 3}\n"
    )
    (first,) = results(pytester.inline_run("--prompt=v"))
    assert first["passed"]
    (check,) = first["assertions"]
    assert check["reason"] == (
        "judge: 2/3 votes pass (scores 0.90, 0.40, 0.80; agreement 2/3): it explains the loop "
        "(score 0.80 >= 0.70)"
    )
    votes = judge_requests(anthropic_server)
    assert len(votes) == 3 and {v["temperature"] for v in votes} == {1.0}
    assert first["judge_calls"] == 3
    # each vote replays from its own recording, offline
    anthropic_server.stop()
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    (again,) = results(pytester.inline_run("--prompt=v", "--prompteval-record=none"))
    assert again["assertions"] == first["assertions"]
    pytester.path.joinpath("prompt_cases", "c.yaml").write_text(
        "cases:\n- id: c1\n  input: {}\n  assert: [{judge: 'Correct?', votes: 2}]\n"
    )
    bad = pytester.runpytest("--prompt=v", "--prompteval-record=none")
    bad.stdout.fnmatch_lines(
        ["*c.yaml:4: case 'c1', assert[[]0]: votes: expected an odd whole number from 1 to 9 (a "
         "majority)"]
    )  # fmt: skip


def test_a_baseline_grade_asks_the_judge_against_the_reference(
    pytester: pytest.Pytester, anthropic_server: AnthropicServer
) -> None:
    def respond(request: dict[str, Any]) -> Any:
        if "tools" in request:
            good = "unrolls" in request["messages"][0]["content"][0]["text"]
            return tool_use(request, {"score": 100 if good else 20, "reason": "compared"})
        return "It unrolls the loop." if "good" in json.dumps(request) else "It adds numbers."

    anthropic_server.responder = respond
    pytester.mkdir("prompts").joinpath("v.yaml").write_text("user_prompt: Explain.\n")
    pytester.mkdir("prompt_cases").joinpath("c.yaml").write_text(
        "cases:\n"
        + "".join(
            f"- id: {name}\n  input: {{kind: {name}}}\n  assert:\n"
            "    - {baseline: 'The loop is unrolled four times.'}\n"
            for name in ("good", "bad")
        )
    )
    good, bad = results(pytester.inline_run("--prompt=v", "-p", "no:randomly"))
    assert (good["passed"], bad["passed"]) == (True, False)
    assert bad["assertions"][0]["reason"] == "judge: compared (score 0.20 < 0.70)"
    system = judge_requests(anthropic_server)[0]["system"]
    assert "at least as good as this reference" in system
    assert "<reference>\nThe loop is unrolled four times.\n</reference>" in system
