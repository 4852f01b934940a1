"""The newer compat format (2026-11) adapted through the two documented hooks, not by editing
its data: template variables from the prompt's nested sections, and a request the project
builds itself from its nested ``model:`` block."""

from __future__ import annotations

import pytest

from pytest_prompteval.testing import AnthropicServer

from .conftest import copy_compat, item_results, prompteval_result

CONFTEST = """
import json

from pytest_prompteval import fill_template


def pytest_prompteval_template_vars(case, prompt):
    audience = case.raw.get("audience", "beginner")
    kind = case.raw.get("explanation_type", "assembly")
    explanation = prompt.raw["explanation_types"][kind]
    override = (explanation.get("audience_levels") or {}).get(audience, {})
    guidance = (override["guidance"] if "guidance" in override
                else prompt.raw["audience_levels"][audience]["guidance"])
    return {
        "audience": audience,
        "audience_guidance": guidance or "",
        "explanation_type": kind,
        "explanation_focus": explanation["focus"],
        "user_prompt_phrase": explanation["user_prompt_phrase"],
    }


def pytest_prompteval_build_request(case, prompt, variables):
    model = prompt.raw["model"]
    user = fill_template(prompt.raw["user_prompt"], variables)
    return {
        "model": model["name"],
        "max_tokens": model["max_tokens"],
        "temperature": model["temperature"],
        "system": fill_template(prompt.raw["system_prompt"], variables),
        "messages": [{"role": "user", "content": [
            {"type": "text", "text": user},
            {"type": "text", "text": json.dumps(dict(case.input))},
        ]}],
    }
"""


def test_compat_2026_11_runs_through_the_hooks(
    pytester: pytest.Pytester, anthropic_server: AnthropicServer
) -> None:
    copy_compat(pytester, "2026-11")
    pytester.makeconftest(CONFTEST)
    reprec = pytester.inline_run("--prompt=current")
    results = item_results(reprec)
    assert len(results) == 21
    assert [r["error"] for r in results if r["error"]] == []
    assert len(anthropic_server.requests) == 21
    for sent in anthropic_server.requests:
        body = sent.body
        assert body["model"] == "claude-sonnet-4-6" and body["max_tokens"] == 1536
        assert body["temperature"] == 0.0
        assert body["system"].startswith("You are an expert in ")
        assert body["system"].split(" ")[5] in {"x86_64", "aarch64", "arm64"}
        user = body["messages"][0]["content"][0]["text"]
        assert "{" not in user, user
    by_case = {r["case_id"]: r for r in results}
    haiku = next(
        s.body
        for s in anthropic_server.requests
        if "Explanation type: haiku" in s.body["messages"][0]["content"][0]["text"]
    )
    assert "three-line haiku" in haiku["messages"][0]["content"][0]["text"]
    assert by_case["factorial_beginner_haiku"]["model"] == "claude-sonnet-4-6"


def test_template_vars_from_several_plugins_merge(pytester: pytest.Pytester) -> None:
    pytester.mkdir("prompts").joinpath("current.yaml").write_text(
        "user_prompt: '{greeting} {who}'\nmodel_config: {model: m}\n"
    )
    pytester.mkdir("prompt_cases").joinpath("c.yaml").write_text(
        "cases:\n- id: c1\n  vars: {who: case}\n  input: {}\n"
    )
    pytester.makeconftest(
        "def pytest_prompteval_template_vars(case, prompt):\n    return {'greeting': 'hello'}\n"
    )
    pytester.makepyfile(
        myapp="def answer(request, *, case, prompt, sample):\n"
        "    return request.messages[0].content[0]\n"
    )
    pytester.syspathinsert()
    reprec = pytester.inline_run("--prompt=current", "--prompteval-provider=python:myapp:answer")
    (report,) = [r for r in reprec.getreports("pytest_runtest_logreport") if r.when == "call"]
    assert prompteval_result(report)["response"] == "hello case"
