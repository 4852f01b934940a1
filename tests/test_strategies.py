"""Strategy versions beside a plain one: accuracy, attempts and cost per solved case."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_prompteval import Response
from pytest_prompteval.core.cases import load_case_file
from pytest_prompteval.core.prompts import load_prompt
from pytest_prompteval.core.request import Message, Request
from pytest_prompteval.interaction.strategies import course, parse_strategy
from pytest_prompteval.providers.base import CallContext
from pytest_prompteval.scoring.code.runner import CodeRunner
from pytest_prompteval.scoring.code.spec import parse_code_spec

from .conftest import LoggingPool, item_results

CASES = """
cases:
- id: clamp_001
  entry_point: clamp
  input: {task: "Write clamp(x, low, high)."}
  tests:
  - {args: [5, 0, 10], expected: 5}
  - {args: [-3, 0, 10], expected: 0}
  - {args: [11, 0, 10], expected: 10, tag: edge}
"""

APP = """
from pytest_prompteval import Response

WRONG = "```python\\ndef clamp(x, low, high):\\n    return x\\n```"
RIGHT = "```python\\ndef clamp(x, low, high):\\n    return max(low, min(x, high))\\n```"

def answer(request, *, case, prompt, sample):
    text = " ".join(block for m in request.messages for block in m.content)
    if prompt.version == "best_of_3":
        reply = RIGHT if sample % 3 == 2 else WRONG  # only the third draw is right
    else:
        reply = RIGHT if "failed" in text or "Failed tests" in text else WRONG
    return Response(text=reply, model="claude-haiku-4-5", input_tokens=100, output_tokens=50)
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    prompts = pytester.mkdir("prompts")
    base = "user_prompt: '{task}'\\nmodel_config: {model: claude-haiku-4-5}\\n"
    prompts.joinpath("plain.yaml").write_text("system_prompt: Plain.\n" + base.replace("\\n", "\n"))
    for name, strategy in (
        ("verify", "{name: self_verify, attempts: 3}"),
        ("refine", "{name: refine, attempts: 2}"),
        ("best_of_3", "{name: best_of_n, n: 3}"),
    ):
        prompts.joinpath(f"{name}.yaml").write_text(
            f"system_prompt: 'Strategy {name}.'\n"
            + base.replace("\\n", "\n")
            + f"strategy: {strategy}\n"
        )
    pytester.mkdir("prompt_cases").joinpath("code.yaml").write_text(CASES)
    pytester.makepyfile(stratapp=APP)
    pytester.makeini("[pytest]\npythonpath = .\n")
    return pytester


def test_strategies_beside_a_plain_version(project: pytest.Pytester) -> None:
    args = [
        "--prompt=plain",
        "--compare=verify",
        "--compare=refine",
        "--compare=best_of_3",
        "--prompteval-provider=python:stratapp:answer",
    ]
    reprec = project.inline_run(*args)
    by_version: dict[str, dict[str, Any]] = {r["prompt"]: r for r in item_results(reprec)}
    assert not by_version["plain"]["passed"] and by_version["plain"]["answer_calls"] == 1
    for version, attempts in (("verify", 2), ("refine", 2), ("best_of_3", 3)):
        result = by_version[version]
        assert result["passed"], version
        assert result["answer_calls"] == attempts
        assert (result["input_tokens"], result["output_tokens"]) == (100 * attempts, 50 * attempts)
    replayed = project.runpytest(*args, "--prompteval-record=none")
    replayed.stdout.fnmatch_lines(
        [
            "plain: per solved case: - (none solved)",
            "verify: per solved case: 2.0 attempts, 300 tokens, $0.0007",
            "best_of_3: per solved case: 3.0 attempts, 450 tokens, $0.001*",
        ]
    )


def test_every_calls_cache_tokens_are_counted(project: pytest.Pytester) -> None:
    """A strategy's later calls count their cache tokens too, as they count the rest."""
    project.makepyfile(
        cached=APP.replace("output_tokens=50", "output_tokens=50, cache_read_tokens=7, "
                           "cache_write_tokens=3")
    )  # fmt: skip
    reprec = project.inline_run("--prompt=verify", "--prompteval-provider=python:cached:answer")
    (result,) = item_results(reprec)
    assert result["answer_calls"] == 2
    assert (result["cache_read_tokens"], result["cache_write_tokens"]) == (14, 6)
    assert (result["calls_live"], result["calls_replayed"]) == (2, 0)


def test_bad_strategy_is_a_collection_error(project: pytest.Pytester) -> None:
    project.path.joinpath("prompts", "verify.yaml").write_text(
        "user_prompt: x\nstrategy: {name: vote, attempts: 3}\n"
    )
    result = project.runpytest("--prompt=verify")
    result.stdout.fnmatch_lines(
        [
            "*prompts/verify.yaml:2: field 'strategy': expected {name: one of self_verify, "
            "refine, best_of_n, attempts: N}*"
        ]
    )


def test_refine_retries_carry_the_task(project: pytest.Pytester) -> None:
    project.inline_run("--prompt=refine", "--prompteval-provider=python:stratapp:answer")
    recordings = [
        json.loads(p.read_text()) for p in project.path.joinpath("prompt_recordings").glob("*.json")
    ]
    (retry,) = [r["request"] for r in recordings if "Failed tests" in json.dumps(r["request"])]
    (turn,) = retry["messages"]
    text = turn["content"][0]["text"]
    assert text.startswith("Task:\nWrite clamp(x, low, high).\n")
    assert "\n\nCurrent code:\n```python\ndef clamp" in text
    assert "1 of 2 tests passed" in text and retry["system"] == "Strategy refine."


def test_replayed_and_live_count_calls_not_items() -> None:
    from pytest_prompteval.core.result import ItemResult
    from pytest_prompteval.report.summary import summarize_version
    from pytest_prompteval.report.terminal import notes_block

    strategy_item = ItemResult(
        case_id="c", file="c.yaml", prompt="v", outcome="passed", passed=True, score=1.0,
        answer_calls=4, calls_replayed=1, calls_live=3,
    )  # fmt: skip
    s = summarize_version("v", [strategy_item], [1])
    assert (
        "v: cost: $0.0000 over 3 live and 1 replayed calls (a replay is free now; its figure "
        "is what it cost to record)" in notes_block([s])
    )
    old = ItemResult.from_json({"case_id": "c", "file": "c.yaml", "prompt": "v", "replayed": True})
    assert (old.calls_replayed, old.calls_live) == (1, 0)  # history before calls were counted


def test_history_that_named_the_answer_calls_attempts_reads() -> None:
    from pytest_prompteval.core.result import ItemResult

    old = ItemResult.from_json({"case_id": "c", "file": "c.yaml", "prompt": "v", "attempts": 3})
    assert (old.answer_calls, old.extra) == (3, {})
    assert "attempts" not in old.to_json() and old.to_json()["answer_calls"] == 3


def test_best_of_n_runs_its_candidates_side_by_side(tmp_path: Path) -> None:
    """All n candidates are handed to the sandbox pool before the first is waited for."""
    (tmp_path / "c.yaml").write_text(CASES)
    (case,) = load_case_file(tmp_path / "c.yaml").cases
    (tmp_path / "best.yaml").write_text(
        "user_prompt: '{task}'\nstrategy: {name: best_of_n, n: 3}\n"
    )
    prompt = load_prompt(tmp_path / "best.yaml")
    request = Request.create("claude-haiku-4-5", [Message("user", ("Write clamp.",))])
    scorer = CodeRunner()
    scorer.sandbox = pool = LoggingPool()
    wrong, right = (
        Response(f"```python\ndef clamp(x, low, high):\n    return {body}\n```", "claude")
        for body in ("x", "max(low, min(x, high))")
    )
    strategy = parse_strategy(prompt)
    assert strategy is not None
    try:
        walk = course(
            strategy,
            scorer,
            case,
            parse_code_spec(case),
            request,
            CallContext(case, prompt, 0),
        )
        assert len(next(walk)) == 3  # the three draws, asked for together
        with pytest.raises(StopIteration) as done:
            walk.send([wrong, right, wrong])
    finally:
        scorer.close()
    assert done.value.value == (right.text, "")
    assert pool.log == ["submit"] * 3 + ["wait"] * 3
