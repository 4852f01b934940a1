"""Repository environments: each case's tests run with the interpreter and packages its
``environment`` names, built offline here from wheels the tests make, never with the
plugin's own packages; and the host never collects a snapshot."""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from pytest_prompteval.sandbox.environments import (
    Environment,
    EnvironmentBuildError,
    ensure,
    site_packages,
)
from pytest_prompteval.testing import AnthropicServer, ScriptedAgent, call

from .conftest import item_results, prompteval
from .wheelhouse import wheel_of, write_wheel

PROMPT = """\
system_prompt: "You fix bugs in the repository at /repo."
user_prompt: "{issue}"
max_steps: 4
tools:
  - {type: text_editor_20250728, name: str_replace_based_edit_tool}
  - {type: bash_20250124, name: bash}
"""
#: The agent changes nothing: each item passes when its pass_to_pass tests pass.
NOTHING = ScriptedAgent({"LOOK": [["Nothing to fix."]]})
#: What a repository's test asserts is not importable in its sandbox: the plugin's own
#: packages (pytest's dependencies aside).
PLUGIN_ONLY = ("pytest_prompteval", "anthropic", "yaml", "xdist", "hypothesis", "jinja2")
ISOLATED_TEST = f"""\
import importlib.util, sys


def test_only_the_environment():
    seen = [n for n in {PLUGIN_ONLY!r} if importlib.util.find_spec(n) is not None]
    assert seen == [], seen
    assert sys.prefix != sys.base_prefix  # a virtual environment of its own
"""


@pytest.fixture(scope="session")
def wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Tiny packages, a pytest plugin adding --cov, and the running pytest as wheels."""
    folder = tmp_path_factory.mktemp("wheelhouse")
    write_wheel(folder, "textdep", "1.0", {"textdep.py": "VALUE = 42\n"})
    write_wheel(
        folder,
        "pytest-fakecov",
        "1.0",
        {"fakecov.py": "def pytest_addoption(parser):\n    parser.addoption('--cov')\n"},
        entry_points="[pytest11]\nfakecov = fakecov\n",
    )
    for name in ("pytest", "pluggy", "iniconfig", "packaging", "pygments", "setuptools"):
        wheel_of(importlib.metadata.distribution(name), folder)
    return folder


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """pip sees no index and no configuration of this machine; a cache of this test's own."""
    for name in list(os.environ):
        if name.startswith("PIP_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    cache = tmp_path / "environments"
    monkeypatch.setenv("PROMPTEVAL_ENVIRONMENTS_CACHE", str(cache))
    return cache


def case(case_id: str, repo: str, tests: list[str], environment: str = "") -> str:
    text = (
        f"- id: {case_id}\n  kind: repo\n  repo: ../repos/{repo}\n"
        f'  input: {{issue: "LOOK"}}\n  pass_to_pass: {tests}\n'
    )
    return text + (f"  environment: {environment}\n" if environment else "")


def project(top: Path, wheelhouse: Path, repos: dict[str, dict[str, str]], cases: str) -> None:
    for name, files in repos.items():
        for path, text in files.items():
            target = top / "repos" / name / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
    (top / "prompts").mkdir()
    (top / "prompts" / "fixer.yaml").write_text(PROMPT)
    (top / "prompt_cases").mkdir()
    (top / "prompt_cases" / "repo.yaml").write_text("cases:\n" + cases)
    (top / "pytest.ini").write_text(f"[pytest]\nprompteval_wheelhouse = {wheelhouse}\n")


def own_packaging() -> dict[str, str]:
    """The installed ``packaging``'s modules as a repository's ``src/packaging``, at
    another version."""
    source = Path(str(importlib.metadata.distribution("packaging").locate_file("packaging")))
    files = {
        f"src/packaging/{p.relative_to(source)}": p.read_text()
        for p in source.rglob("*.py")
        if "__pycache__" not in p.parts
    }
    init = "src/packaging/__init__.py"
    files[init] = files[init].replace("__version__ = ", "__version__ = '99.0'\n_was = ")
    return files


def test_each_case_runs_with_its_environment_and_none_sees_the_plugins_packages(
    pytester: pytest.Pytester,
    anthropic_server: AnthropicServer,
    wheelhouse: Path,
    offline: Path,
) -> None:
    anthropic_server.responder = NOTHING
    repos = {
        # a dependency the plugin lacks
        "dep": {
            "tests/test_dep.py": "import textdep\n\n\ndef test_dep():\n"
            "    assert textdep.VALUE == 42\n",
            "tests/test_isolated.py": ISOLATED_TEST,
        },
        # a src layout, importable through pythonpath alone
        "layout": {
            "src/humane/__init__.py": "def word():\n    return 'humane'\n",
            "tests/test_word.py": "from humane import word\n\n\ndef test_word():\n"
            "    assert word() == 'humane'\n",
        },
        # its own packaging, at a version other than the plugin's (which pytest imports)
        "packaging": {
            **own_packaging(),
            "tests/test_version.py": "import packaging\n\n\ndef test_own():\n"
            "    assert packaging.__version__ == '99.0', packaging.__file__\n"
            "    assert packaging.__file__.startswith('/repo/src/')\n",
        },
        # no environment: the plugin's interpreter and pytest, nothing else of its packages
        "plain": {"tests/test_isolated.py": ISOLATED_TEST},
        # an ini asking for an option of a plugin of the environment (pytest-cov's --cov)
        "cov": {
            "pytest.ini": "[pytest]\naddopts = --cov=m\n",
            "tests/test_cov.py": "def test_cov(pytestconfig):\n"
            "    assert pytestconfig.getoption('cov') == 'm'\n",
        },
        # pytest itself from the environment's requirements (the wheelhouse's)
        "pinned": {
            "tests/test_pinned.py": "import pytest, sys\n\n\ndef test_pinned():\n"
            "    assert pytest.__file__.startswith(sys.prefix)\n",
        },
    }
    cases = (
        case(
            "dep",
            "dep",
            ["tests/test_dep.py::test_dep", "tests/test_isolated.py::test_only_the_environment"],
            "{requirements: [textdep==1.0]}",
        )
        + case("layout", "layout", ["tests/test_word.py::test_word"], "{pythonpath: [src]}")
        + case(
            "own_packaging", "packaging", ["tests/test_version.py::test_own"], "{pythonpath: [src]}"
        )
        + case("plain", "plain", ["tests/test_isolated.py::test_only_the_environment"])
        + case(
            "cov", "cov", ["tests/test_cov.py::test_cov"], "{requirements: [pytest-fakecov==1.0]}"
        )
        + case(
            "pinned",
            "pinned",
            ["tests/test_pinned.py::test_pinned"],
            "{requirements: [pytest, textdep]}",
        )
    )
    project(pytester.path, wheelhouse, repos, cases)
    result = pytester.runpytest("--prompt=fixer", "-p", "no:randomly")
    result.assert_outcomes(passed=6)  # each passes only when its tests pass
    # one build per distinct spec (two cases share pythonpath [src]), said before the
    # items ran
    builds = [line for line in result.outlines if "building environment" in line]
    assert len(builds) == 5
    assert builds[0].startswith("prompteval: building environment ")
    assert " for prompt_cases/repo.yaml:7 (python " in builds[0]
    assert len([p for p in offline.iterdir() if (p / "prompteval-environment.json").exists()]) == 5

    # a later run reuses them all: nothing is built
    again = pytester.runpytest("--prompt=fixer", "-p", "no:randomly")
    again.assert_outcomes(passed=6)
    assert not [line for line in again.outlines if "building environment" in line]


def test_under_xdist_the_controller_builds_the_environments_and_says_so(
    pytester: pytest.Pytester,
    anthropic_server: AnthropicServer,
    wheelhouse: Path,
    offline: Path,
) -> None:
    anthropic_server.responder = NOTHING
    repos = {
        "dep": {"tests/test_dep.py": "import textdep\n\n\ndef test_dep():\n    pass\n"},
        "plain": {"tests/test_plain.py": "def test_plain():\n    pass\n"},
    }
    cases = case("dep", "dep", ["tests/test_dep.py::test_dep"], "{requirements: [textdep]}")
    cases += case("plain", "plain", ["tests/test_plain.py::test_plain"])
    project(pytester.path, wheelhouse, repos, cases)
    result = pytester.runpytest("--prompt=fixer", "-n", "2")
    result.assert_outcomes(passed=2)
    builds = [line for line in result.outlines if "building environment" in line]
    assert len(builds) == 2 and any(" for prompt_cases/repo.yaml:7 " in b for b in builds)
    built = [p for p in offline.iterdir() if (p / "prompteval-environment.json").exists()]
    assert len(built) == 2


def test_a_failed_build_is_one_error_naming_the_case_before_any_call(
    pytester: pytest.Pytester,
    anthropic_server: AnthropicServer,
    wheelhouse: Path,
    offline: Path,
) -> None:
    anthropic_server.responder = NOTHING
    repos = {"dep": {"tests/test_dep.py": "def test_dep():\n    pass\n"}}
    cases = case("dep", "dep", ["tests/test_dep.py::test_dep"], "{requirements: [nosuchdep==1.0]}")
    project(pytester.path, wheelhouse, repos, cases)
    result = pytester.runpytest("--prompt=fixer")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*repo.yaml:7: case 'dep': environment: pip install failed: *"
            "No matching distribution found for nosuchdep==1.0*"
        ]
    )
    assert "Traceback" not in result.stdout.str()
    assert anthropic_server.requests == []
    assert [p for p in offline.iterdir() if p.is_dir()] == []  # nothing half-built is kept


@pytest.mark.parametrize(
    ("environment", "expected"),
    [
        ("{requirements: [textdep, ./local]}", "requirement './local': expected a package name"),
        ("{requirements: [textdep @ https://example.com/t.whl]}", "no path, URL or pip option"),
        ("{requirements: [--index-url=http://x]}", "no path, URL or pip option"),
        ("{requirement: [textdep]}", "unknown field 'requirement'; did you mean 'requirements'?"),
        ("{pythonpath: [../outside]}", "pythonpath: expected a list of folders"),
        ("{python: 'python3; rm -rf /'}", "expected an interpreter's name on PATH"),
        # a program of the pull request's own, by its path: never run on the host
        ("{python: /tmp/evil/python3}", "expected an interpreter's name on PATH"),
        ("{python: python3.nonesuch}", "no such interpreter on PATH"),
        ("[textdep]", "expected a mapping"),
    ],
)
def test_a_mistake_in_an_environment_names_the_file_and_line(
    pytester: pytest.Pytester,
    anthropic_server: AnthropicServer,
    wheelhouse: Path,
    offline: Path,
    environment: str,
    expected: str,
) -> None:
    repos = {"dep": {"tests/test_dep.py": "def test_dep():\n    pass\n"}}
    cases = case("dep", "dep", ["tests/test_dep.py::test_dep"], environment)
    project(pytester.path, wheelhouse, repos, cases)
    result = pytester.runpytest("--prompt=fixer")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([f"*repo.yaml:7: case 'dep': environment: *{expected}*"])
    assert "Traceback" not in result.stdout.str()
    assert anthropic_server.requests == []


def test_the_host_never_collects_a_snapshot(
    pytester: pytest.Pytester, anthropic_server: AnthropicServer, offline: Path
) -> None:
    """With no collect_ignore of the project's own, ``pytest --prompt`` leaves the
    repository alone: its conftest is never imported on the host, nor its tests run."""
    anthropic_server.responder = NOTHING
    marker = pytester.path / "conftest-ran"
    conftest = f"try:\n    open({str(marker)!r}, 'w').close()\nexcept OSError:\n    pass\n"
    repos = {
        "m": {
            "conftest.py": conftest,
            "tests/test_m.py": "def test_m():\n    pass\n",
        }
    }
    project(pytester.path, pytester.path, repos, case("m", "m", ["tests/test_m.py::test_m"]))
    result = pytester.runpytest("--prompt=fixer", "-p", "no:randomly")
    result.assert_outcomes(passed=1)
    assert not marker.exists()
    # nor without --prompt: plain pytest collects nothing of it
    result = pytester.runpytest()
    result.assert_outcomes()
    assert not marker.exists()


def test_envs_build_list_and_prune(
    pytester: pytest.Pytester, wheelhouse: Path, offline: Path
) -> None:
    repos = {"dep": {"tests/test_dep.py": "def test_dep():\n    pass\n"}}
    cases = case("dep", "dep", ["tests/test_dep.py::test_dep"], "{requirements: [textdep]}")
    cases += case("plain", "dep", ["tests/test_dep.py::test_dep"])
    project(pytester.path, wheelhouse, repos, cases)
    built = prompteval(pytester.path, "envs", "build")
    assert built.returncode == 0, built.stderr
    assert built.stdout.count("building environment") == 2
    assert prompteval(pytester.path, "envs", "build").stdout.count("building") == 0
    listed = prompteval(pytester.path, "envs", "list")
    assert "textdep==1.0" in listed.stdout and "in use" in listed.stdout
    stray = offline / ("0" * 32)
    shutil.copytree(next(p for p in offline.iterdir() if p.is_dir()), stray)
    pruned = prompteval(pytester.path, "envs", "prune")
    assert pruned.returncode == 0, pruned.stderr
    assert str(stray) in pruned.stdout and not stray.exists()
    assert len([p for p in offline.iterdir() if p.is_dir()]) == 2


EXTENSION = """\
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static PyObject *twice(PyObject *self, PyObject *args) {
    long x;
    if (!PyArg_ParseTuple(args, "l", &x)) return NULL;
    return PyLong_FromLong(x + x + 1);
}

static PyMethodDef methods[] = {{"double", twice, METH_VARARGS, ""}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "fast", NULL, -1, methods};
PyMODINIT_FUNC PyInit_fast(void) { return PyModule_Create(&module); }
"""


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")
def test_an_install_step_builds_a_c_extension_in_the_sandbox_and_its_products_are_no_diff(
    pytester: pytest.Pytester,
    anthropic_server: AnthropicServer,
    wheelhouse: Path,
    offline: Path,
) -> None:
    fix = call(
        "str_replace_based_edit_tool",
        command="str_replace",
        path="fast.c",
        old_str="x + x + 1",
        new_str="x + x",
    )
    anthropic_server.responder = ScriptedAgent(
        {"LOOK": [[call("bash", command="ls *.so build")], [fix], ["Fixed."]]}
    )
    repos = {
        "fast": {
            "fast.c": EXTENSION,
            "setup.py": "from setuptools import Extension, setup\n\n"
            "setup(name='fast', version='0.1', ext_modules=[Extension('fast', ['fast.c'])])\n",
            "tests/test_fast.py": "from fast import double\n\n\ndef test_double():\n"
            "    assert double(2) == 4\n\n\ndef test_int():\n"
            "    assert isinstance(double(1), int)\n",
        }
    }
    cases = case(
        "fast",
        "fast",
        ["tests/test_fast.py::test_int"],
        "{requirements: [setuptools], install: 'python setup.py -q build_ext --inplace --force'}",
    ).replace(
        "  pass_to_pass:", "  fail_to_pass: [tests/test_fast.py::test_double]\n  pass_to_pass:"
    )
    project(pytester.path, wheelhouse, repos, cases)
    reprec = pytester.inline_run("--prompt=fixer", "-p", "no:randomly")
    reprec.assertoutcome(passed=1)
    (result,) = item_results(reprec)
    listed = result["trajectory"]["steps"][0]["calls"][0]["result"]
    assert ".so" in listed and "temp." in listed  # built before the agent's first command
    diff = result["repo"]["diff"]
    assert diff.startswith("--- a/fast.c\n+++ b/fast.c\n")
    assert ".so" not in diff and "build/" not in diff
    # the snapshot itself never holds a build product
    assert sorted(p.name for p in (pytester.path / "repos" / "fast").iterdir()) == [
        "fast.c",
        "setup.py",
        "tests",
    ]


def test_two_processes_asking_for_one_environment_build_it_once(tmp_path: Path) -> None:
    """As two xdist workers do: the second waits on the first's lock, then finds it built."""
    said: list[str] = []
    start = threading.Barrier(2)

    def build() -> Environment:
        start.wait()
        return ensure(None, tmp_path, progress=said.append)

    with ThreadPoolExecutor(2) as pool:
        first, second = pool.map(lambda _: build(), range(2))
    assert first == second
    assert len(said) == 1 and "building environment" in said[0]
    assert [p.name for p in tmp_path.iterdir() if p.is_dir()] == [first.key]


def test_a_cache_that_cannot_be_written_names_the_setting(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("")
    with pytest.raises(EnvironmentBuildError) as raised:
        ensure(None, tmp_path / "a-file" / "cache")
    message = str(raised.value)
    assert f"cannot build in {tmp_path / 'a-file' / 'cache'}" in message
    assert "ini prompteval_environments_cache or PROMPTEVAL_ENVIRONMENTS_CACHE" in message


def test_an_interpreter_inside_the_project_is_never_run(
    pytester: pytest.Pytester,
    anthropic_server: AnthropicServer,
    wheelhouse: Path,
    offline: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A pull request's own program, found on PATH through a folder of the project (a
    committed ``.venv/bin``), is refused before it runs."""
    marker = pytester.path / "ran"
    program = pytester.path / ".venv" / "bin" / "python3.99"
    program.parent.mkdir(parents=True)
    program.write_text(f"#!/bin/sh\ntouch {marker}\n")
    program.chmod(0o755)
    monkeypatch.setenv("PATH", f"{program.parent}:{os.environ['PATH']}")
    repos = {"dep": {"tests/test_dep.py": "def test_dep():\n    pass\n"}}
    cases = case("dep", "dep", ["tests/test_dep.py::test_dep"], "{python: python3.99}")
    project(pytester.path, wheelhouse, repos, cases)
    result = pytester.runpytest("--prompt=fixer")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*repo.yaml:7: case 'dep': environment: python 'python3.99' is *, inside the project*"]
    )
    assert not marker.exists() and anthropic_server.requests == []


def test_an_environment_is_compiled_when_built(tmp_path: Path) -> None:
    """The sandbox shows it read-only and writes no bytecode: without its compiled modules
    every pytest there compiled pytest again (0.64 s per item instead of 1.51 s in a run
    of ten, benchmarks/repo_tasks.py)."""
    environment = ensure(None, tmp_path)
    site = site_packages(environment.path, environment.python)
    assert list(site.glob("_pytest/__pycache__/main.cpython-*.pyc"))


#: Where .ci/run downloads pytest 7.4.4 and its dependencies as wheels before the tests.
OLD_PYTEST_WHEELS = "PROMPTEVAL_TEST_WHEELS"
#: A conftest of the pytest 7 API (boltons' own): pytest 8 and later refuse ``path``.
OLD_CONFTEST = "def pytest_ignore_collect(path, config):\n    return None\n"


@pytest.fixture
def old_pytest_wheels() -> Path:
    folder = os.environ.get(OLD_PYTEST_WHEELS, "")
    if folder and list(Path(folder).glob("pytest-7.4.4-*.whl")):
        return Path(folder)
    if os.environ.get("PROMPTEVAL_REQUIRE_OLD_PYTEST"):
        pytest.fail(f"pytest 7.4.4's wheels are required here, in ${OLD_PYTEST_WHEELS}")
    pytest.skip(f"no pytest 7.4.4 wheels in ${OLD_PYTEST_WHEELS} (.ci/run downloads them)")


def test_a_repository_whose_conftest_needs_an_older_pytest_runs_with_it(
    pytester: pytest.Pytester,
    anthropic_server: AnthropicServer,
    old_pytest_wheels: Path,
    offline: Path,
) -> None:
    fix = call(
        "str_replace_based_edit_tool",
        command="str_replace",
        path="calc.py",
        old_str="a - b",
        new_str="a + b",
    )
    anthropic_server.responder = ScriptedAgent({"LOOK": [[fix], ["Fixed."]]})
    repos = {
        "old": {
            "conftest.py": OLD_CONFTEST,
            "calc.py": "def add(a, b):\n    return a - b\n",
            "tests/test_calc.py": "import pytest\nfrom calc import add\n\n\n"
            "def test_add():\n    assert add(2, 2) == 4\n\n\n"
            "def test_version():\n    assert pytest.__version__ == '7.4.4'\n",
        }
    }
    listed = ["tests/test_calc.py::test_version"]
    fixed = (
        "  reference_patch: fix.diff\n"
        "  fail_to_pass: [tests/test_calc.py::test_add]\n  pass_to_pass:"
    )
    cases = case("old", "old", listed, "{requirements: [pytest==7.4.4]}")
    project(pytester.path, old_pytest_wheels, repos, cases.replace("  pass_to_pass:", fixed))
    (pytester.path / "prompt_cases" / "fix.diff").write_text(
        "--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n"
        "-    return a - b\n+    return a + b\n"
    )
    # the gold validation under pytest 7.4.4: test_add fails before the fix, passes after
    checked = prompteval(pytester.path, "check-cases")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "old: reference patch validates 1 fail_to_pass, 1 pass_to_pass" in checked.stdout
    reprec = pytester.inline_run("--prompt=fixer", "-p", "no:randomly")
    reprec.assertoutcome(passed=1)  # resolved: the fix passes under pytest 7.4.4
    (result,) = item_results(reprec)
    assert result["repo"]["diff"].startswith("--- a/calc.py\n+++ b/calc.py\n")

    # the same case in the plugin's own pytest: the test command fails, an error before
    # any call, in pytest's own words
    anthropic_server.requests.clear()
    (pytester.path / "prompt_cases" / "repo.yaml").write_text(
        "cases:\n" + case("old", "old", listed).replace("  pass_to_pass:", fixed)
    )
    result_host = pytester.runpytest("--prompt=fixer", "-p", "no:randomly")
    result_host.assert_outcomes(errors=1)
    result_host.stdout.fnmatch_lines(
        [
            "*repo.yaml:4: case 'old': collecting the repository's tests failed *"
            "PluginValidationError*pytest_ignore_collect*path*"
        ]
    )
    assert anthropic_server.requests == []
    checked = prompteval(pytester.path, "check-cases")
    assert checked.returncode == 2
    said = "repo.yaml:4: case 'old': collecting the repository's tests failed (exit status "
    assert said in checked.stderr and "PluginValidationError: " in checked.stderr
