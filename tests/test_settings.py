"""One Settings value for every entry point: precedence, validation, the project's ini read by
the ``prompteval`` commands, the fixture wired like items, a portable import."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_prompteval.engine.settings import SETTINGS, SettingError, Settings, typed_names
from pytest_prompteval.testing import tool_use

from .conftest import copy_example_suite, generated_project, prompteval


def build(
    options: dict[str, Any] | None = None, ini: dict[str, Any] | None = None, **env: str
) -> Settings:
    """Settings from ``options`` typed on the command line and ``ini`` keys from a file."""
    given = {f"prompteval_{k}": v for k, v in (options or {}).items()}
    return Settings.build(
        Path("/project"), given, lambda key: (ini or {}).get(key, ""), env, typed=set(given)
    )


def test_defaults_come_from_the_one_table() -> None:
    s = build()
    for setting in SETTINGS:
        if setting.name in ("cases", "prompts", "recordings", "results"):
            continue
        assert getattr(s, setting.name) == setting.default, setting.name
    assert s.case_dirs == (Path("/project/prompt_cases"),)
    assert s.results_dir == Path("/project/prompt_results")


def test_precedence_option_then_environment_then_ini() -> None:
    ini = {"prompteval_concurrency": "4", "prompteval_threshold": "0.5"}
    assert build(ini=ini).concurrency == 4
    assert build({"concurrency": "16"}, ini).concurrency == 16
    assert build(ini=ini).threshold == 0.5
    assert build(PROMPTEVAL_RECORD="all").record == "all"
    assert build({"record": "none"}, PROMPTEVAL_RECORD="all").record == "none"
    assert build(ini={"prompteval_results": "none"}).results_dir is None


@pytest.mark.parametrize(
    ("options", "ini", "message"),
    [
        ({"fail_under": "85"}, {}, "--prompteval-fail-under '85': expected a number from 0 to 1"),
        ({}, {"prompteval_threshold": "70"}, "ini prompteval_threshold '70': expected a number "
         "from 0 to 1"),
        ({}, {"prompteval_threshold": "abc"}, "ini prompteval_threshold 'abc': expected a "
         "number from 0 to 1"),
        ({"max_regression": "-1"}, {}, "--prompteval-max-regression '-1': expected a number "
         "from 0 to 1"),
        ({"concurrency": "0"}, {}, "--prompteval-concurrency '0': expected a whole number from 1 "
         "to 256"),
        ({}, {"prompteval_concurrency": "x"}, "ini prompteval_concurrency 'x': expected a whole "
         "number from 1 to 256"),
        ({"concurrency": "100000"}, {}, "--prompteval-concurrency '100000': expected a whole "
         "number from 1 to 256"),
        ({}, {"prompteval_code_workers": "4096"}, "ini prompteval_code_workers '4096': expected a "
         "whole number from 1 to 128"),
        ({"code_timeout": "1e9"}, {}, "--prompteval-code-timeout '1e9': expected a number > 0 "
         "and <= 300"),
        ({}, {"prompteval_code_timeout": "1000000000"}, "ini prompteval_code_timeout "
         "'1000000000': expected a number > 0 and <= 300"),
        ({"max_cost": "-5"}, {}, "--prompteval-max-cost '-5': expected a number > 0"),
        ({"pass_ks": "0,2"}, {}, "--prompteval-pass-k '0,2': expected whole numbers >= 1 "
         "separated by commas, like 1,10"),
        ({"shard": "3/2"}, {}, "--prompteval-shard '3/2': expected I/N with 1 <= I <= N, like "
         "2/5"),
        ({"samples": "nan"}, {}, "--prompteval-samples 'nan': expected a whole number >= 1"),
    ],
)  # fmt: skip
def test_a_bad_value_names_its_option_or_ini_key(
    options: dict[str, str], ini: dict[str, str], message: str
) -> None:
    with pytest.raises(SettingError) as caught:
        build(options, ini)
    assert str(caught.value) == message


def test_bad_values_are_usage_errors_before_anything_runs(pytester: pytest.Pytester) -> None:
    generated_project(pytester, 1)
    pytester.makeini("[pytest]\nprompteval_concurrency = x\n")
    result = pytester.runpytest_subprocess("--prompt=v")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert result.stderr.lines[0] == (
        "ERROR: ini prompteval_concurrency 'x': expected a whole number from 1 to 256"
    )
    assert "Traceback" not in result.stderr.str() + result.stdout.str()
    pytester.makeini("[pytest]\n")
    (pytester.path / "results.txt").write_text("a file")
    result = pytester.runpytest_subprocess("--prompt=v", "--prompteval-results=results.txt")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "INTERNALERROR" not in result.stderr.str() + result.stdout.str()
    result.stderr.fnmatch_lines(
        ["ERROR: --prompteval-results / ini prompteval_results: results.txt: is not a folder"]
    )


def test_an_option_value_given_apart_that_moves_the_rootdir_is_named(
    pytester: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory
) -> None:
    generated_project(pytester, 1)
    pytester.makeini("[pytest]\n")
    elsewhere = tmp_path_factory.mktemp("elsewhere") / "run.json"
    elsewhere.write_text("{}")
    result = pytester.runpytest_subprocess("--prompt=v", "--prompteval-baseline", str(elsewhere))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            f"ERROR: --prompteval-baseline {elsewhere}: pytest took the value for a test path "
            "and moved the rootdir to *; write it as --prompteval-baseline=VALUE"
        ]
    )


INI_STYLES: dict[str, Callable[[str], tuple[str, str]]] = {
    "pytest.ini": lambda keys: ("pytest.ini", "[pytest]\n" + keys),
    "pyproject.toml": lambda keys: (
        "pyproject.toml",
        "[tool.pytest.ini_options]\n"
        + "".join(
            f'{k.strip()} = "{v.strip()}"\n'
            for k, v in (line.split("=", 1) for line in keys.splitlines())
        ),
    ),
}


@pytest.mark.parametrize("style", list(INI_STYLES))
def test_commands_read_the_projects_ini(
    pytester: pytest.Pytester, style: str, anthropic_server: Any
) -> None:
    root = copy_example_suite(pytester)
    for old, new in (
        ("prompt_cases", "my_cases"),
        ("prompts", "my_prompts"),
        ("prompt_recordings", "my_recordings"),
    ):
        shutil.move(root / old, root / new)
    name, text = INI_STYLES[style](
        "prompteval_cases = my_cases\nprompteval_prompts = my_prompts\n"
        "prompteval_recordings = my_recordings\nprompteval_results = my_results\n"
    )
    (root / name).write_text(text)
    pytester.runpytest("--prompt=current").assert_outcomes(passed=5)
    assert len(list((root / "my_results").glob("*_current.json"))) == 1

    listed = prompteval(root, "list")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.startswith("my_cases/basic_optimizations.yaml: ")
    assert "prompt versions in my_prompts:" in listed.stdout

    analyzed = prompteval(root, "analyze", "--json")
    assert analyzed.returncode == 0, analyzed.stderr
    assert "current" in json.loads(analyzed.stdout)["versions"]

    (stored,) = (root / "my_results").glob("*_current.json")
    merged = prompteval(root, "merge", str(stored.relative_to(root)))
    assert merged.returncode == 0, merged.stderr
    assert (root / "my_results" / "merged_current.json").is_file()

    anthropic_server.responder = lambda request: tool_use(
        request,
        {
            "suggestions": [
                {
                    "issue": "i",
                    "current_text": "c",
                    "suggested_text": "s",
                    "rationale": "r",
                    "priority": "low",
                }
            ],
            "expected_impact": "e",
            "improved_system_prompt": "s",
            "improved_user_prompt": "u",
        },
    )
    improved = prompteval(root, "improve", "--prompt", "current")
    assert improved.returncode == 0, improved.stderr
    assert len(anthropic_server.requests) == 1
    assert anthropic_server.requests[0].body["model"] == "claude-sonnet-4-6"
    assert not (root / "prompt_recordings").exists()
    assert len(list((root / "my_recordings").glob("*.json"))) > 5  # the example's + this one


def test_no_default_model_is_deprecated_in_the_installed_sdk() -> None:
    from pytest_prompteval.providers.sdk_internals import deprecated_models

    s = build()
    assert deprecated_models(), "the installed SDK's deprecation list was not found"
    assert s.default_model not in deprecated_models()
    assert s.judge_model not in deprecated_models()


FIXTURE_TESTS = """
import pytest

def test_first(prompteval):
    r = prompteval.run("v", input={"n": 1}, expected_topics=["loop_optimization"])
    assert r.result.replayed is {replayed}

def test_second(prompteval):
    prompteval.run("v", input={"n": 2}, expected_topics=["loop_optimization"])

def test_the_engine_is_the_runs(prompteval, request):
    engine = prompteval.engine
    assert engine is request.config.stash[RUN_KEY].engine
    assert engine.budget is not None and engine.store.budget is engine.budget
    assert engine.gate is not None

from pytest_prompteval.pytest.run import RUN_KEY
"""

PRICED_APP = """
from pytest_prompteval import Response

def answer(request, *, case, prompt, sample):
    # claude-haiku-4-5 at $5 per million output tokens: 2,000 tokens cost $0.01
    return Response(text="The loop optimization.", model="claude-haiku-4-5", output_tokens=2000)
"""


def test_the_fixture_shares_the_budget_and_recordings_of_items(pytester: pytest.Pytester) -> None:
    generated_project(
        pytester, 0, prompt="user_prompt: x\nmodel_config: {model: claude-haiku-4-5}\n"
    )
    pytester.makepyfile(
        pricedapp=PRICED_APP, test_inline=FIXTURE_TESTS.replace("{replayed}", "False")
    )
    args = ["--prompteval-provider=python:pricedapp:answer", "-p", "no:randomly", "-rs"]
    result = pytester.runpytest("--prompteval-max-cost=0.005", *args)
    # the first call spends the whole budget: the second test's call is never started
    result.assert_outcomes(passed=2, skipped=1)
    result.stdout.fnmatch_lines(["SKIPPED * cost budget spent: $0.0100 of --prompteval-max-cost*"])
    assert len(list((pytester.path / "prompt_recordings").glob("*.json"))) == 1

    pytester.makepyfile(test_inline=FIXTURE_TESTS.replace("{replayed}", "True"))
    replay = pytester.runpytest(
        "--prompteval-max-cost=0.005", "--prompteval-record=none", "-k", "first", *args
    )
    replay.assert_outcomes(passed=1, deselected=2)


def test_the_plugin_imports_without_fcntl(tmp_path: Path) -> None:
    code = (
        "import sys; sys.modules['fcntl'] = None\n"
        "import pytest_prompteval.plugin, pytest_prompteval.cli\n"
        "from pytest_prompteval.core.filelock import lock_exclusive\n"
        "from pytest_prompteval.core.errors import PromptevalError\n"
        "try:\n"
        "    lock_exclusive(open(__file__), '--prompteval-max-cost')\n"
        "except PromptevalError as exc:\n"
        "    print(exc)\n"
    )
    script = tmp_path / "nofcntl.py"
    script.write_text(code)
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        "--prompteval-max-cost needs file locks (fcntl or msvcrt), which this platform lacks"
    )


def test_custom_scorers_do_not_leak_between_in_process_runs(pytester: pytest.Pytester) -> None:
    generated_project(pytester, 1, fields="  assert: [{type: lenient}]\n")
    pytester.makepyfile(app="def answer(request, **kw):\n    return 'The loop optimization.'\n")
    conftest = pytester.makeconftest(
        "import pytest_prompteval\n\n\n@pytest_prompteval.scorer('lenient')\n"
        "def lenient(case, request, response):\n    return 1.0\n"
    )
    args = ["--prompt=v", "--prompteval-provider=python:app:answer", "-p", "no:cacheprovider"]
    pytester.inline_run(*args).assertoutcome(passed=1)
    conftest.unlink()
    result = pytester.runpytest_inprocess(*args)
    result.stdout.fnmatch_lines(["*unknown assertion or scorer 'lenient'*"])


REFUSED = (
    "weakens safety, so it is refused from files a pull request can change; give {option} on "
    "the command line instead"
)


def test_settings_that_weaken_safety_are_refused_from_files() -> None:
    """#22: a pull request's ``prompteval_unsafe_sandbox = true`` (or the flag in its
    ``addopts``) ran recorded code unsandboxed."""
    weakening = [s for s in SETTINGS if not s.from_files]
    assert {s.name for s in weakening} == {"unsafe_sandbox", "allow_lower_prices"}
    assert all(s.option for s in weakening)  # the message names what to type instead
    with pytest.raises(SettingError) as caught:
        build(ini={"prompteval_unsafe_sandbox": True})
    assert str(caught.value) == "ini prompteval_unsafe_sandbox: " + REFUSED.format(
        option="--prompteval-unsafe-sandbox"
    )
    for name in ("unsafe_sandbox", "allow_lower_prices"):
        with pytest.raises(SettingError) as caught:  # given, but not typed: from addopts
            Settings.build(
                Path("/project"), {f"prompteval_{name}": True}, lambda key: None, {}, typed=()
            )
        option = f"--prompteval-{name.replace('_', '-')}"
        assert str(caught.value) == f"{option} in addopts: " + REFUSED.format(option=option)
    assert build(ini={"prompteval_unsafe_sandbox": False}).unsafe_sandbox is False
    assert build({"unsafe_sandbox": True}).unsafe_sandbox is True
    typed_o = Settings.build(
        Path("/project"),
        {},
        {"prompteval_unsafe_sandbox": True}.get,
        {},
        typed={"prompteval_unsafe_sandbox"},
    )
    assert typed_o.unsafe_sandbox is True  # -o prompteval_unsafe_sandbox=true, typed


def test_what_was_typed_is_told_from_addopts() -> None:
    assert typed_names(
        [
            "--prompteval-unsafe-sandbox",
            "--prompteval-code-timeout=5",
            "--reviewer-model",
            "m",
            "-o",
            "prompteval_prompts=/x",
            "--override-ini=prompteval_cases=y",
            "-oprompteval_results=z",
            "tests/x.yaml",
        ]
    ) == {
        "prompteval_unsafe_sandbox",
        "prompteval_code_timeout",
        "prompteval_judge_model",
        "prompteval_prompts",
        "prompteval_cases",
        "prompteval_results",
    }


def test_a_bare_pytest_command_types_nothing() -> None:
    # `pytest` with no argument (and no PYTEST_ADDOPTS) stopped every run with a ValueError
    assert typed_names([]) == frozenset()


def test_unsafe_sandbox_from_the_ini_or_addopts_is_a_usage_error(
    pytester: pytest.Pytester, xdist_args: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    generated_project(pytester, 1)
    for ini, where in (
        ("prompteval_unsafe_sandbox = true", "ini prompteval_unsafe_sandbox"),
        ("addopts = --prompteval-unsafe-sandbox", "--prompteval-unsafe-sandbox in addopts"),
    ):
        pytester.makeini(f"[pytest]\n{ini}\n")
        result = pytester.runpytest("--prompt=v", *xdist_args)
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        assert result.stderr.lines[0] == f"ERROR: {where}: " + REFUSED.format(
            option="--prompteval-unsafe-sandbox"
        )
    pytester.makeini("[pytest]\n")
    typed = pytester.runpytest("--prompt=v", "--prompteval-unsafe-sandbox", *xdist_args)
    assert typed.ret == pytest.ExitCode.TESTS_FAILED  # no recording, no key: ran, not refused
    monkeypatch.setenv("PYTEST_ADDOPTS", "--prompteval-unsafe-sandbox")
    assert pytester.runpytest("--prompt=v", *xdist_args).ret == pytest.ExitCode.TESTS_FAILED


@pytest.mark.parametrize(
    ("ini", "where", "name"),
    [
        ({"prompteval_results": "../../../outside/x"}, "ini prompteval_results",
         "'../../../outside/x' leads outside the project (/project)"),
        ({"prompteval_recordings": "/abs"}, "ini prompteval_recordings",
         "'/abs': absolute paths are not allowed, name it relative"),
        ({"prompteval_prompts": "/abs"}, "ini prompteval_prompts",
         "'/abs': absolute paths are not allowed, name it relative"),
        ({"prompteval_cases": ["ok", "/abs"]}, "ini prompteval_cases",
         "'/abs': absolute paths are not allowed, name it relative"),
    ],
)  # fmt: skip
def test_folders_from_the_ini_stay_in_the_project(
    ini: dict[str, Any], where: str, name: str
) -> None:
    with pytest.raises(SettingError) as caught:
        build(ini=ini)
    assert str(caught.value) == (
        f"{where}: path {name}; from a file it must stay in the project (the command line may "
        "name any folder)"
    )


def test_the_command_line_may_name_folders_outside_the_project(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    assert build({"results": str(outside)}).results_dir == outside
    from_o = Settings.build(
        Path("/project"),
        {},
        {"prompteval_recordings": str(outside)}.get,
        {},
        typed={"prompteval_recordings"},
    )
    assert from_o.recordings_dir == outside  # -o prompteval_recordings=..., as `prompteval` does


def test_a_folder_linked_out_of_the_project_and_outputs_from_addopts_are_refused(
    pytester: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory
) -> None:
    outside = tmp_path_factory.mktemp("outside")
    generated_project(pytester, 1)
    pytester.path.joinpath("shared").symlink_to(outside)
    for ini, where, path in (
        ("prompteval_prompts = shared", "ini prompteval_prompts", "'shared'"),
        ("addopts = --prompteval-html=shared/x.html", "--prompteval-html in addopts",
         "'shared/x.html'"),
        (f"addopts = --prompteval-markdown={outside}/x.md", "--prompteval-markdown in addopts",
         f"'{outside}/x.md'"),
    ):  # fmt: skip
        pytester.makeini(f"[pytest]\n{ini}\n")
        result = pytester.runpytest("--prompt=v")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        assert result.stderr.lines[0].startswith(f"ERROR: {where}: path {path}")
    assert list(outside.iterdir()) == []


PRICES_OF_ZERO = "claude-haiku-4-5: {input: 0, output: 0}\n"


def test_a_price_file_cannot_switch_the_budget_off(pytester: pytest.Pytester) -> None:
    """#22: a pull request's price table of zeros let every call through a budget."""
    generated_project(
        pytester, 2, prompt="user_prompt: x\nmodel_config: {model: claude-haiku-4-5}\n"
    )
    pytester.makepyfile(pricedapp=PRICED_APP)
    pytester.makefile(".yaml", prices=PRICES_OF_ZERO)
    pytester.makeini("[pytest]\nprompteval_prices = prices.yaml\n")
    args = ["--prompt=v", "--prompteval-provider=python:pricedapp:answer", "-p", "no:randomly"]
    result = pytester.runpytest("--prompteval-max-cost=0.005", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert result.stderr.lines[0] == (
        "ERROR: prices.yaml:1: claude-haiku-4-5.input: 0 is below the shipped price, 1; give "
        "--prompteval-allow-lower-prices on the command line to use it"
    )
    assert not (pytester.path / "prompt_recordings").exists()  # no call made
    allowed = pytester.runpytest(
        "--prompteval-max-cost=0.005", "--prompteval-allow-lower-prices", *args
    )
    allowed.assert_outcomes(passed=2)  # the user's own choice, typed
