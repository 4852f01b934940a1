"""Hostile repository content (#15): every path a file names stays in the project, every file
we read is bounded, recordings are checked, and text reaching the terminal is defused. Each
test is a finding's proof of concept."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_prompteval.cli import main
from pytest_prompteval.core.cases import load_case_file, load_case_file_cached
from pytest_prompteval.core.errors import PromptevalError
from pytest_prompteval.core.history import RunHistory
from pytest_prompteval.core.paths import create_new, read_bounded
from pytest_prompteval.core.prompts import build_request, load_prompt, template_variables
from pytest_prompteval.core.request import Message, Request
from pytest_prompteval.core.response import Response
from pytest_prompteval.core.safetext import safe_line, safe_text
from pytest_prompteval.core.yamlload import line_of, load_yaml
from pytest_prompteval.providers.store import Store
from pytest_prompteval.scoring.assertions import Assertion, Observed, check_simple
from pytest_prompteval.scoring.code.spec import parse_code_spec

from .conftest import generated_project

CODE_CASE = (
    "cases:\n- id: p\n  entry_point: f\n  input: {}\n  reference: 'def f(x): return x'\n"
    "  tests: [{assert: 'f(1) == 1'}]\n  properties: {file: %s}\n"
)


def properties_error(project: Path, name: str) -> str:
    cases = project / "prompt_cases"
    cases.mkdir(exist_ok=True)
    path = cases / "c.yaml"
    path.write_text(CODE_CASE % json.dumps(name))
    (case,) = load_case_file(path, root=project).cases
    with pytest.raises(PromptevalError) as excinfo:
        parse_code_spec(case)
    return str(excinfo.value)


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("/proc/self/environ", "path '/proc/self/environ': absolute paths are not allowed"),
        ("../../../../etc/shadow", "path '../../../../etc/shadow' leads outside the project"),
        ("escape.py", "path 'escape.py' leads outside the project"),
        ("fifo.py", "not a regular file"),
    ],
    ids=["absolute", "dotdot", "symlink-out", "fifo"],
)
def test_a_case_cannot_name_a_file_outside_the_project(tmp_path: Path, name: str, why: str) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "prompt_cases").mkdir()
    os.symlink("/etc/hostname", project / "prompt_cases" / "escape.py")
    os.mkfifo(project / "prompt_cases" / "fifo.py")
    message = properties_error(project, name)
    assert message.startswith(
        f"{project}/prompt_cases/c.yaml:7: case 'p', field 'properties': expected a readable "
        "strategies file ("
    )
    assert why in message


def test_a_strategies_file_inside_the_project_is_read(tmp_path: Path) -> None:
    (tmp_path / "prompt_cases").mkdir()
    (tmp_path / "prompt_cases" / "s.py").write_text("def strategies(): ...\n")
    (tmp_path / "prompt_cases" / "c.yaml").write_text(CODE_CASE % "s.py")
    (case,) = load_case_file(tmp_path / "prompt_cases" / "c.yaml", root=tmp_path).cases
    assert parse_code_spec(case).properties == {
        "file": "def strategies(): ...\n",
        "examples": 100,
    }


def test_files_read_are_regular_and_bounded(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    big.write_text("x" * 11)
    with pytest.raises(PromptevalError) as excinfo:
        read_bounded(big, limit=10)
    assert str(excinfo.value) == f"{big}: file too large: 11 bytes (limit 10)"
    with pytest.raises(PromptevalError) as excinfo:
        load_yaml(Path("/dev/zero"))
    assert str(excinfo.value) == "/dev/zero: not a regular file"


# 548 bytes: nine levels of nine aliases, 9**9 strings once expanded
ALIAS_BOMB = (
    "cases:\n- id: bmb\n  input:\n"
    + "    a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
    + "".join(f"    a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]\n" for i in range(1, 9))
)


def test_a_yaml_alias_bomb_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(ALIAS_BOMB)
    assert path.stat().st_size == 548
    with pytest.raises(PromptevalError) as excinfo:
        load_case_file(path)
    assert str(excinfo.value) == (
        f"{path}:10: YAML aliases expand to more than 1,000,000 values; repeat the data or "
        "use fewer nested aliases"
    )


def test_a_self_referring_alias_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "loop.yaml"
    path.write_text("cases:\n- id: a\n  input: &i {self: *i}\n")
    with pytest.raises(PromptevalError) as excinfo:
        load_case_file(path)
    assert str(excinfo.value) == f"{path}:3: invalid YAML: an alias refers to itself"


def test_a_catastrophic_regex_runs_in_linear_time() -> None:
    answer = Observed("a" * 40 + "!", "", 0, None, None)
    checked = check_simple(Assertion("regex", "^(a+)+$"), answer)
    assert checked is not None
    assert (checked.passed, checked.reason) == (False, "expected: matches /^(a+)+$/")


def test_a_regex_the_linear_engine_cannot_run_is_a_collection_error(
    pytester: pytest.Pytester,
) -> None:
    pytester.mkdir("prompts").joinpath("v.yaml").write_text("user_prompt: x\n")
    pytester.mkdir("prompt_cases").joinpath("c.yaml").write_text(
        "cases:\n- id: a\n  input: {}\n  assert:\n  - {regex: '(a)\\1'}\n"
    )
    result = pytester.runpytest("--prompt=v")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        [
            "prompt_cases/c.yaml:5: case 'a', assert[0]: regex: invalid regular expression: "
            "invalid escape sequence: \\1 (patterns run on RE2, in linear time: no lookaround, "
            "no backreferences)"
        ]
    )


REQUEST = Request.create("m", [Message("user", ("hi",))], None, max_tokens=5)
KEY = REQUEST.key(0)


def recording(**changes: object) -> dict[str, object]:
    record: dict[str, object] = {
        "format": 1,
        "key": KEY,
        "sample": 0,
        "origin": "anthropic",
        "request": REQUEST.to_api(),
        "response": Response("hello", "m", latency_ms=12.0).to_json(),
    }
    record.update(changes)
    return record


@pytest.mark.parametrize(
    ("record", "why"),
    [
        (recording(key="0" * 64), "its 'key' is not its file name"),
        (
            recording(request={**REQUEST.to_api(), "max_tokens": 6}),
            "its 'request' does not hash to its key",
        ),
        (  # equal in Python, not in the JSON the key hashes
            recording(request={**REQUEST.to_api(), "max_tokens": 5.0}),
            "its 'request' does not hash to its key",
        ),
        (
            recording(response={"text": "hi", "model": "m", "latency_ms": "x"}),
            "'response.latency_ms': unexpected str 'x'",
        ),
        (
            recording(response={"text": "hi", "model": "m", "output_tokens": True}),
            "'response.output_tokens': unexpected bool True",
        ),
        (recording(response={"model": "m"}), "'response.text': missing"),
        (recording(sample=-1), "'sample': expected a whole number >= 0"),
    ],
    ids=["key", "request", "request-float", "latency", "tokens", "text", "sample"],
)
def test_a_forged_or_broken_recording_is_unreadable(
    tmp_path: Path, record: dict[str, object], why: str
) -> None:
    """Read by its key alone, or (as a replay reads it) for the request asked."""
    path = tmp_path / f"{KEY}.json"
    path.write_text(json.dumps(record))
    for asked in (None, REQUEST):
        with pytest.raises(PromptevalError) as excinfo:
            Store.read(path, KEY, asked)
        why_shown = f"{path}: unreadable recording: {why}; delete it to record again"
        assert str(excinfo.value) == why_shown


def test_non_finite_numbers_in_a_recording_are_refused(tmp_path: Path) -> None:
    path = tmp_path / f"{KEY}.json"
    path.write_text(json.dumps(recording()).replace("12.0", "NaN"))
    with pytest.raises(PromptevalError) as excinfo:
        Store.read(path, KEY)
    assert "unreadable recording: NaN is not a number JSON allows" in str(excinfo.value)
    path.write_text(json.dumps(recording()).replace("12.0", "1e999"))
    with pytest.raises(PromptevalError) as excinfo:
        Store.read(path, KEY)
    assert "unreadable recording: 'response.latency_ms': unexpected float inf" in str(excinfo.value)


def test_a_recording_linked_to_dev_zero_fails_that_item_only(pytester: pytest.Pytester) -> None:
    pytester.mkdir("prompts").joinpath("v.yaml").write_text("user_prompt: x\n")
    pytester.mkdir("prompt_cases").joinpath("c.yaml").write_text(
        "cases:\n- id: a\n  input: {n: 1}\n- id: b\n  input: {n: 2}\n"
    )
    prompt = load_prompt(pytester.path / "prompts" / "v.yaml")
    case_a, _ = load_case_file(pytester.path / "prompt_cases" / "c.yaml").cases
    key = build_request(case_a, prompt, template_variables(case_a), "claude-haiku-4-5").key(0)
    pytester.mkdir("prompt_recordings").joinpath(f"{key}.json").symlink_to("/dev/zero")
    result = pytester.runpytest("--prompt=v", "--prompteval-record=none")
    result.assert_outcomes(errors=2)  # errors of the run's data, not failures of the prompt
    result.stdout.fnmatch_lines(
        [
            f"prompt_recordings/{key}.json: unreadable recording: is a link to /dev/zero, outside "
            "prompt_recordings; delete it to record again",
            "*no recording for case 'b'*",
        ]
    )


def test_a_symlinked_recordings_folder_leading_outside_is_refused(
    pytester: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory
) -> None:
    outside = tmp_path_factory.mktemp("outside")
    pytester.mkdir("prompts").joinpath("v.yaml").write_text("user_prompt: x\n")
    pytester.mkdir("prompt_cases")
    pytester.path.joinpath("prompt_recordings").symlink_to(outside)
    result = pytester.runpytest("--prompt=v")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: ini prompteval_recordings: prompt_recordings: is a symlink to "
            f"{outside}, outside the project"
        ]
    )
    listing = pytester.run(sys.executable, "-m", "pytest_prompteval.cli", "list")
    assert listing.ret == 2
    assert listing.errlines == [
        "prompteval: error: ini prompteval_recordings: prompt_recordings: is a symlink to "
        f"{outside}, outside the project",
        "prompteval: 1 problem(s) found",
    ]


def test_the_parsed_case_cache_is_signed_json_and_a_planted_entry_runs_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user"))
    cache = tmp_path / "cache"
    cache.mkdir()
    path = tmp_path / "c.yaml"
    path.write_text("cases:\n- id: a\n  input: {n: 1}\n  tags: [x]\n")
    first = load_case_file_cached(path, cache)
    (entry,) = cache.iterdir()
    assert json.loads(entry.read_bytes().partition(b"\n")[2])["line"] == 1
    again = load_case_file_cached(path, cache)
    assert again.cases == first.cases and line_of(again.cases[0].raw, "tags") == 4
    entry.write_bytes(b"\x80\x04cos\nsystem\n.")  # a pickle: not ours, so parsed afresh
    assert load_case_file_cached(path, cache).cases == first.cases
    key = tmp_path / "user" / "pytest-prompteval" / "cache-key"
    assert key.stat().st_mode & 0o777 == 0o600 and len(key.read_bytes()) == 32


def test_a_planted_case_cache_entry_is_ignored_and_the_cases_threshold_applies(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """#22: a committed ``.pytest_cache`` entry with ``threshold: 0.0`` made failing answers
    pass. An entry is signed with a key outside the project: a forged one is parsed again."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user"))
    generated_project(pytester, 1, fields="  threshold: 0.99\n")
    pytester.makepyfile(echo="def answer(request, *, case, prompt, sample):\n    return 'x'\n")
    pytester.makeini("[pytest]\npythonpath = .\n")
    args = ["--prompt=v", "--prompteval-provider=python:echo:answer"]
    pytester.runpytest(*args).assert_outcomes(failed=1)
    (entry,) = (pytester.path / ".pytest_cache" / "d" / "prompteval-cases").iterdir()
    data = entry.read_bytes()
    # the same name, the content a pull request would commit: threshold 0.0
    signature, sep, payload = data.partition(b"\n") if data[:1] != b"{" else (b"", b"", data)
    forged = payload.replace(b"0.99", b"0.0")
    assert forged != payload
    entry.write_bytes(signature + sep + forged)
    pytester.runpytest(*args).assert_outcomes(failed=1)


def test_a_recording_linked_outside_the_project_is_not_replayed(
    pytester: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory
) -> None:
    generated_project(pytester, 1)
    pytester.makepyfile(echo="def answer(request, *, case, prompt, sample):\n    return 'x'\n")
    pytester.makeini("[pytest]\npythonpath = .\n")
    args = ["--prompt=v", "--prompteval-provider=python:echo:answer"]
    assert pytester.runpytest(*args).ret == pytest.ExitCode.TESTS_FAILED  # recorded
    (recording,) = (pytester.path / "prompt_recordings").glob("*.json")
    outside = tmp_path_factory.mktemp("outside") / recording.name
    recording.rename(outside)
    recording.symlink_to(outside)
    result = pytester.runpytest(*args, "--prompteval-record=none")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            f"prompt_recordings/{recording.name}: unreadable recording: is a link to {outside}, "
            "outside prompt_recordings; delete it to record again"
        ]
    )


def test_a_link_planted_where_the_results_journal_goes_is_not_written_through(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """#22: a committed ``prompt_results/<stamp>_current.jsonl`` link leading nowhere made
    the run create the file it names, anywhere."""
    monkeypatch.setattr(time, "strftime", lambda *args: "20260101_000000")
    results = tmp_path / "project" / "prompt_results"
    results.mkdir(parents=True)
    victim = tmp_path / "victim"
    (results / "20260101_000000_v.jsonl").symlink_to(victim)
    run = RunHistory(results, {"v": {}})
    (written,) = run.finalize({}, partial=False)
    assert written.name == "20260101_000000-2_v.json" and not victim.exists()
    with pytest.raises(FileExistsError):
        create_new(results / "20260101_000000_v.jsonl")
    assert not victim.exists()


def test_token_counts_are_not_written_through_or_read_from_links(
    pytester: pytest.Pytester, anthropic_server: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """#22: ``token_counts/<hash>.tmp`` as a link made the estimate overwrite any file;
    ``<hash>.json`` as a link was read wherever it led (``/dev/zero``: out of memory)."""
    outside = tmp_path_factory.mktemp("outside")
    victim, forged = outside / "victim", outside / "forged.json"
    victim.write_text("precious\n")
    forged.write_text('{"input_tokens": 1}')
    pytester.mkdir("prompts").joinpath("v.yaml").write_text(
        "user_prompt: Explain.\nmodel_config: {model: claude-haiku-4-5, max_tokens: 200}\n"
    )
    pytester.mkdir("prompt_cases").joinpath("c.yaml").write_text(
        "cases:\n- id: c1\n  input: {n: 1}\n"
    )
    assert pytester.runpytest("--prompt=v", "--prompteval-estimate").ret == 0
    (count,) = (pytester.path / "prompt_recordings" / "token_counts").glob("*.json")
    counted = json.loads(count.read_text())
    count.unlink()
    count.with_suffix(".tmp").symlink_to(victim)
    assert pytester.runpytest("--prompt=v", "--prompteval-estimate").ret == 0
    assert victim.read_text() == "precious\n"
    assert not count.is_symlink() and json.loads(count.read_text()) == counted
    count.unlink()
    count.symlink_to(forged)
    anthropic_server.requests.clear()
    assert pytester.runpytest("--prompt=v", "--prompteval-estimate").ret == 0
    assert [r.path.split("?")[0] for r in anthropic_server.requests] == [
        "/v1/messages/count_tokens"
    ]  # the forged count was not used: asked again
    assert not count.is_symlink() and json.loads(count.read_text()) == counted


@pytest.mark.parametrize("option", ["--prompteval-html", "--prompteval-markdown"])
def test_a_report_is_not_written_through_a_link_planted_in_its_place(
    pytester: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory, option: str
) -> None:
    victim = tmp_path_factory.mktemp("outside") / "victim"
    victim.write_text("precious\n")
    generated_project(pytester, 1)
    pytester.makepyfile(echo="def answer(request, *, case, prompt, sample):\n    return 'x'\n")
    pytester.makeini("[pytest]\npythonpath = .\n")
    pytester.path.joinpath("report").symlink_to(victim)
    pytester.runpytest("--prompt=v", "--prompteval-provider=python:echo:answer", f"{option}=report")
    assert victim.read_text() == "precious\n"
    assert not (pytester.path / "report").is_symlink()
    assert (pytester.path / "report").stat().st_size > 0


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("clear\x1b[2Jscreen", "clear\\x1b[2Jscreen"),
        ("\x1b]0;pwned\x07title", "\\x1b]0;pwned\\x07title"),
        ("csi\x9b31m", "csi\\x9b31m"),
        ("ok\n::error file=README.md::forged", "ok\n  \\::error file=README.md::forged"),
        ("::warning::first", "\\::warning::first"),
        ("a\n  ##[error]old style", "a\n    ##\\[error]old style"),
        ("bidi\u202eevil", "bidi\\u202eevil"),
        ("tab\tand\rreturn", "tab\tand\\x0dreturn"),
    ],
    ids=["clear", "title", "c1", "workflow", "first-line", "v1-command", "bidi", "cr"],
)
def test_text_for_the_terminal_is_escaped(text: str, shown: str) -> None:
    assert safe_text(text) == shown
    assert "\n" not in safe_line(text)


def test_list_escapes_descriptions(pytester: pytest.Pytester) -> None:
    pytester.mkdir("prompts").joinpath("v.yaml").write_text(
        'user_prompt: x\ndescription: "\\e[2J\\n::error file=a::b"\n'
    )
    pytester.mkdir("prompt_cases").joinpath("c.yaml").write_text(
        'description: "\\e]0;t\\a"\ncases:\n- id: a\n  input: {}\n'
    )
    result = pytester.run(sys.executable, "-m", "pytest_prompteval.cli", "list")
    assert result.ret == 0
    assert "\x1b" not in result.stdout.str() and "\x07" not in result.stdout.str()
    assert result.outlines[0] == "prompt_cases/c.yaml: \\x1b]0;t\\x07"
    assert result.outlines[-1] == "  v  (default model)  \\x1b[2J\\n::error file=a::b"


def test_merge_output_names_stay_in_the_output_folder(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    generated_project(pytester, 1)
    pytester.makepyfile(echo="def answer(request, *, case, prompt, sample):\n    return 'x'\n")
    pytester.makeini("[pytest]\npythonpath = .\n")
    pytester.runpytest("--prompt=v", "--prompteval-provider=python:echo:answer")
    (source,) = pytester.path.joinpath("prompt_results").glob("*.json")
    data = json.loads(source.read_text())
    data["meta"]["prompt_version"] = "../../evil"
    source.write_text(json.dumps(data))
    assert main(["merge", str(source), "-o", str(pytester.path / "merged")]) == 2
    assert capsys.readouterr().err == (
        "prompteval: error: prompt version '../../evil': expected a name of letters, digits and "
        "_ . + - (it becomes an id and a file name)\n"
    )
    assert not pytester.path.parent.joinpath("evil.json").exists()


def test_improve_output_cannot_leave_the_prompt_folder(tmp_path: Path) -> None:
    from pytest_prompteval.workflows.improve import write_improved

    prompts = tmp_path / "prompts"
    prompts.mkdir()
    (prompts / "v1.yaml").write_text("user_prompt: u\n")
    prompt = load_prompt(prompts / "v1.yaml")
    answer = {"improved_system_prompt": "s", "improved_user_prompt": "u"}
    with pytest.raises(PromptevalError) as excinfo:
        write_improved(prompt, answer, prompts, "../../X")
    assert str(excinfo.value) == (
        "--output '../../X': expected a name of letters, digits and _ . + - (it becomes an id "
        "and a file name)"
    )
    assert write_improved(prompt, answer, prompts, "v2") == prompts / "v2.yaml"


def test_a_case_file_linked_outside_the_project_is_not_read(pytester: pytest.Pytester) -> None:
    pytester.mkdir("prompts").joinpath("v.yaml").write_text("user_prompt: x\n")
    pytester.mkdir("prompt_cases").joinpath("x.yaml").symlink_to("/etc/hostname")
    result = pytester.runpytest("--prompt=v")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        ["prompt_cases/x.yaml: is a link to /etc/hostname, outside the project"]
    )


@pytest.mark.parametrize(
    ("key", "value", "why"),
    [
        ("prompteval_prices", "/etc/passwd", "path '/etc/passwd': absolute paths are not allowed"),
        ("prompteval_review_templates", "../r.yaml", "path '../r.yaml' leads outside the project"),
    ],
)
def test_table_and_template_paths_from_ini_stay_in_the_project(
    pytester: pytest.Pytester, key: str, value: str, why: str
) -> None:
    pytester.mkdir("prompts").joinpath("v.yaml").write_text("user_prompt: x\n")
    pytester.makeini(f"[pytest]\n{key} = {value}\n")
    result = pytester.runpytest("--prompt=v")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: ini {key}: {why}*"])


def test_a_prompt_file_linked_outside_the_project_is_not_read(
    pytester: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory
) -> None:
    outside = tmp_path_factory.mktemp("outside") / "secret.yaml"
    outside.write_text("user_prompt: x\n")
    pytester.mkdir("prompts").joinpath("v.yaml").symlink_to(outside)
    pytester.mkdir("prompt_cases")
    result = pytester.runpytest("--prompt=v")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [f"ERROR: prompts/v.yaml: is a link to {outside}, outside the project"]
    )


def test_a_projects_topic_patterns_run_in_linear_time(tmp_path: Path) -> None:
    from pytest_prompteval.core.tables import load_table
    from pytest_prompteval.scoring.automatic import AutomaticScorer

    table = tmp_path / "scoring.yaml"
    table.write_text(
        "topics:\n  loops: ['^(a+)+$']\n"
        "incorrect_claims:\n  patterns:\n    '(x+x+)+y': why\n"
        "technical_terms: ['(a|aa)+b']\n"
    )
    scorer = AutomaticScorer(load_table("scoring", table))
    hostile = "a" * 5000 + "!"
    assert not scorer.covers("loops", hostile)
    assert scorer.incorrect_claims("x" * 5000) == []
    assert scorer.clarity_score(hostile) >= 0.0


def test_a_scoring_table_pattern_the_linear_engine_cannot_run_names_its_line(
    pytester: pytest.Pytester,
) -> None:
    pytester.mkdir("prompts").joinpath("v.yaml").write_text("user_prompt: x\n")
    pytester.makefile(".yaml", scoring="topics:\n  loops:\n  - 'loop(?=s)'\n")
    pytester.makeini("[pytest]\nprompteval_scoring = scoring.yaml\n")
    result = pytester.runpytest("--prompt=v")
    assert result.ret != pytest.ExitCode.OK
    result.stdout.no_fnmatch_line("*Traceback*")
    assert (
        "scoring.yaml:2: topics.loops: invalid regular expression: invalid perl operator: (?="
        in (result.stdout.str() + result.stderr.str())
    )
