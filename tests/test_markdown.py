"""--prompteval-markdown and GITHUB_STEP_SUMMARY: the run as GitHub-flavoured Markdown."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token

APP = """
def answer(request, *, case, prompt, sample):
    broken = prompt.version == "w" and case.id in ("c2", "c3")
    flaky = case.id == "c4" and sample == 1
    return "nothing" if broken or flaky else "a loop"
"""
PROVIDER = "--prompteval-provider=python:mdapp:answer"


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(mdapp=APP)
    pytester.makeini("[pytest]\npythonpath = .\n")
    prompts = pytester.mkdir("prompts")
    prompts.joinpath("v.yaml").write_text("user_prompt: x\n")
    prompts.joinpath("w.yaml").write_text("user_prompt: y\n")
    cases = "".join(
        f"\n# case {i}\n- id: c{i}\n  threshold: 0\n  input: {{n: {i}}}\n"
        f"  assert: [{{contains: loop}}]\n" + ("  samples: 3\n" if i == 4 else "")
        for i in range(1, 5)
    )
    pytester.mkdir("prompt_cases").joinpath("c.yaml").write_text("cases:\n" + cases)
    return pytester


def tables(tokens: list[Token]) -> list[list[list[str]]]:
    """Each table as rows of cell texts, header row first."""
    found: list[list[list[str]]] = []
    for i, token in enumerate(tokens):
        if token.type == "table_open":
            found.append([])
        elif token.type == "tr_open":
            found[-1].append([])
        elif token.type in ("th_open", "td_open"):
            found[-1][-1].append(tokens[i + 1].content)
    return found


def links(tokens: list[Token]) -> list[str]:
    return [
        str(child.attrs["href"])
        for token in tokens
        for child in token.children or []
        if child.type == "link_open"
    ]


def test_markdown_tables_parse_and_links_point_at_the_cases(project: pytest.Pytester) -> None:
    # w, the --prompt version, breaks c2 and c3 that v passes: its regressions
    result = project.runpytest("--prompt=w", "--compare=v", PROVIDER, "--prompteval-markdown=pr.md")
    result.stdout.fnmatch_lines(["prompteval markdown: pr.md"])
    text = (project.path / "pr.md").read_text()
    assert text.startswith("## ")  # the verdict first
    tokens = MarkdownIt("commonmark").enable("table").parse(text)

    parsed = tables(tokens)
    versions, flaky = parsed[0], parsed[1]
    assert versions[0][:3] == ["version", "items", "passed"]
    assert [row[0] for row in versions[1:]] == ["`w`", "`v`"]
    assert [row[2] for row in versions[1:]] == ["3", "5"]
    assert all(len(row) == len(table[0]) for table in parsed for row in table)
    assert [row[2] for row in flaky[1:]] == ["2/3", "2/3"]

    hrefs = links(tokens)
    assert len(hrefs) == 4  # two regressions, c4 flaky under both versions
    lines = (project.path / "prompt_cases" / "c.yaml").read_text().splitlines()
    named = set()
    for href in hrefs:
        found = re.fullmatch(r"(.+)#L(\d+)", href)
        assert found is not None, href
        path, line = found.groups()
        assert (project.path / path).is_file()
        case_id = lines[int(line) - 1].split("id:")[1].strip()
        named.add(case_id)
    assert named == {"c2", "c3", "c4"}
    assert "**Regressions**" in text and "`prompt_cases/c.yaml:" in text
    assert "**Improvements**" not in text


def test_github_step_summary_is_appended_without_any_option(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    summary = project.path / "step_summary.md"
    summary.write_text("# earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.setenv("GITHUB_REPOSITORY", "octo/repo")
    monkeypatch.setenv("GITHUB_SHA", "abc123")
    monkeypatch.setenv("GITHUB_SERVER_URL", "https://github.com")
    project.runpytest("--prompt=v", "--compare=w", PROVIDER)
    text = summary.read_text()
    assert text.startswith("# earlier step\n## ")
    assert "(https://github.com/octo/repo/blob/abc123/prompt_cases/c.yaml#L" in text
    assert not list(Path(project.path).glob("*.md.*"))


@pytest.mark.parametrize("spelling", ["{dir}//step_summary.md", "{dir}/./step_summary.md"])
def test_a_step_summary_path_spelt_another_way_is_still_appended_to(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, spelling: str
) -> None:
    """The job's summary holds the earlier steps' output: a path with a doubled slash or a
    ``.`` (as a workflow may build it) names the same file, which is appended to."""
    summary = project.path / "step_summary.md"
    summary.write_text("# earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", spelling.format(dir=project.path))
    project.runpytest("--prompt=v", "--compare=w", PROVIDER)
    assert summary.read_text().startswith("# earlier step\n## ")


def test_the_option_naming_the_step_summary_writes_the_run_there_once(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    summary = project.path / "step_summary.md"
    summary.write_text("# earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    result = project.runpytest(
        "--prompt=v", "--compare=w", PROVIDER, f"--prompteval-markdown={summary}"
    )
    text = summary.read_text()
    assert text.startswith("# earlier step\n## ") and text.count("\n## ") == 1
    assert len([line for line in result.outlines if line.startswith("prompteval markdown:")]) == 1


def test_cases_run_by_one_side_only_are_named_in_the_comparison(project: pytest.Pytester) -> None:
    (project.path / "prompts" / "w.yaml").write_text(
        "user_prompt: y\napplies_to: {ids: [c1, c2, c3]}\n"
    )
    result = project.runpytest("--prompt=w", "--compare=v", PROVIDER, "--prompteval-markdown=pr.md")
    result.stdout.fnmatch_lines(
        ["  unpaired, run by v only (1): c.yaml::c4 (prompt_cases/c.yaml:22)"]
    )
    text = (project.path / "pr.md").read_text()
    assert "**Run by `v` only, not compared** (1)\n\n- [`c4`](prompt_cases/c.yaml#L" in text
