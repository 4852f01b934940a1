"""Sharding across machines: stable shards whose merged results equal the unsharded run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_prompteval.cli import main
from pytest_prompteval.core.sharding import shard_of

from .conftest import generated_project

APP = """
def answer(request, *, case, prompt, sample):
    good = (int(case.id[1:]) + sample) % 3 != 0
    return "The loop optimization unrolls it." if good else "Nothing to see."
"""


TIMINGS = ("latency_ms", "latency_p50_ms", "latency_p95_ms")


def stored(path: Path) -> dict[str, object]:
    """A results file without its timings (the provider measures its own latency)."""
    data = json.loads(path.read_text())
    results = [{k: v for k, v in r.items() if k not in TIMINGS} for r in data["results"]]
    summary = {k: v for k, v in data["summary"].items() if k not in TIMINGS}
    return {"results": results, "summary": summary}


def test_merged_shards_equal_the_unsharded_run(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    generated_project(pytester, 20, prompt="user_prompt: x\n")
    pytester.makepyfile(shardapp=APP)
    pytester.makeini("[pytest]\npythonpath = .\n")
    common = [
        "--prompt=v",
        "--prompteval-samples=3",
        "--prompteval-pass-k=1,2",
        "--prompteval-provider=python:shardapp:answer",
        "--prompteval-record=all",  # every run calls, so "replayed" agrees too
    ]
    pytester.runpytest(*common, "--prompteval-results=whole")
    counts = []
    for shard in (1, 2, 3):
        result = pytester.runpytest(
            *common, f"--prompteval-shard={shard}/3", f"--prompteval-results=shard{shard}"
        )
        counts.append(sum(result.parseoutcomes().get(k, 0) for k in ("passed", "failed")))
    assert sum(counts) == 60 and all(counts)  # every item in exactly one shard
    files = [str(p) for n in (1, 2, 3) for p in pytester.path.glob(f"shard{n}/*.json")]
    assert main(["merge", *files, "-o", str(pytester.path / "merged")]) == 0
    assert "merged_v.json: 60 items from 3 files" in capsys.readouterr().out
    (whole,) = pytester.path.glob("whole/*.json")
    assert stored(pytester.path / "merged" / "merged_v.json") == stored(whole)
    assert "warning" not in capsys.readouterr().err
    some = [str(p) for n in (1, 3) for p in pytester.path.glob(f"shard{n}/*.json")]
    assert main(["merge", *some, "-o", str(pytester.path / "part")]) == 0
    assert capsys.readouterr().err == "prompteval: warning: no results for shard v 2/3\n"


def test_shards_are_stable_and_keep_a_case_together() -> None:
    ids = [
        f"prompt_cases/c.yaml::c{i:02d}[{v}-s{s}]"
        for i in range(50)
        for v in ("current", "v2")
        for s in range(3)
    ]
    shards = {nodeid: shard_of(nodeid, 4) for nodeid in ids}
    for i in range(50):
        assert len({s for n, s in shards.items() if f"::c{i:02d}[" in n}) == 1
    assert set(shards.values()) == {0, 1, 2, 3}
    assert shard_of(ids[0], 4) == shard_of(ids[0], 4)


def test_bad_shard_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.mkdir("prompts").joinpath("v.yaml").write_text("user_prompt: x\n")
    result = pytester.runpytest("--prompt=v", "--prompteval-shard=4/3")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --prompteval-shard '4/3': expected I/N with 1 <= I <= N*"])
