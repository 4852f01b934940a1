from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any

# pytester drops the modules an in-process run imported first; importing the SDK here once
# saves about 2 s in every in-process run that makes a call.
import anthropic  # noqa: F401
import pytest

from pytest_prompteval.sandbox.client import Limits, SampleReport
from pytest_prompteval.sandbox.pool import NOW, SandboxPool
from pytest_prompteval.sandbox.provider import NamespaceSandboxes

ROOT = Path(__file__).resolve().parents[1]
COMPAT = ROOT.parent / "shared" / "compat" / "explain"
# What the Compiler Explorer project declares: its case and prompt fields that only its own
# templates and hooks read.
# the public project's fields are known without declaring them: only its folder is named
COMPAT_INI = "[pytest]\nprompteval_cases = test_cases\n"


@pytest.fixture(autouse=True, scope="session")
def _environments_of_the_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Repository environments the tests build go to a cache of the session's, not the
    user's (a test that needs a cache of its own sets the variable itself)."""
    name = "PROMPTEVAL_ENVIRONMENTS_CACHE"
    before = os.environ.get(name)
    os.environ[name] = str(tmp_path_factory.getbasetemp() / "environments")
    yield
    if before is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = before


@pytest.fixture(params=[[], ["-n", "2"]], ids=["no-xdist", "xdist-2"])
def xdist_args(request: pytest.FixtureRequest) -> list[str]:
    """Run a pytester session both without xdist and with two workers."""
    return list(request.param)


def item_results(run: pytest.HookRecorder | pytest.RunResult) -> list[dict[str, Any]]:
    """The ``prompteval`` result of every item an in-process run reported: on its test
    phase's report, or its setup's when an error of the calls ended it there. ``run``: an
    ``inline_run``'s recorder, or an in-process ``runpytest``'s result (which holds one)."""
    reprec: pytest.HookRecorder = vars(run)["reprec"] if isinstance(run, pytest.RunResult) else run
    return [
        prompteval_result(report)
        for report in reprec.getreports("pytest_runtest_logreport")
        if (report.when == "call" or (report.when == "setup" and report.failed))
        and "prompteval" in dict(report.user_properties)  # not a case's min_pass verdict
    ]


def prompteval_result(report: pytest.TestReport) -> dict[str, Any]:
    """The item's result as its report carries it."""
    properties: dict[str, Any] = dict(report.user_properties)
    result: dict[str, Any] = properties["prompteval"]
    return result


def prompteval(cwd: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    """The ``prompteval`` command in its own process, as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "pytest_prompteval.cli", *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
    )


def generated_project(
    pytester: pytest.Pytester,
    count: int,
    prompt: str = "user_prompt: x\n",
    fields: str = "  expected_topics: [loop_optimization]\n",
) -> None:
    """prompts/v.yaml and ``count`` cases c00, c01, ... with distinct inputs."""
    pytester.mkdir("prompts").joinpath("v.yaml").write_text(prompt)
    cases = "".join(f"- id: c{i:02d}\n{fields}  input: {{n: {i}}}\n" for i in range(count))
    pytester.mkdir("prompt_cases").joinpath("c.yaml").write_text("cases:\n" + cases)


def git(root: Path, *args: str) -> str:
    """A git command in ``root`` as a test's author commits; its output."""
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def copy_compat(pytester: pytest.Pytester, edition: str) -> Path:
    source = COMPAT / edition
    if not source.is_dir():
        pytest.skip(f"compatibility corpus not found at {source}")
    for child in source.iterdir():
        target = pytester.path / child.name
        if child.is_dir():
            shutil.copytree(child, target)
        else:
            shutil.copy(child, target)
    pytester.makeini(COMPAT_INI)
    return pytester.path


def copy_example_suite(pytester: pytest.Pytester) -> Path:
    for name in ("prompt_cases", "prompts", "prompt_recordings", "examples"):
        shutil.copytree(ROOT / name, pytester.path / name)
    shutil.copy(ROOT / "conftest.py", pytester.path / "conftest.py")
    return pytester.path


@pytest.fixture(autouse=True)
def _outside_github_actions(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tests' runs write no step summary and link to files, not to a GitHub commit, even
    when the suite itself runs in GitHub Actions."""
    for name in ("GITHUB_STEP_SUMMARY", "GITHUB_REPOSITORY", "GITHUB_SHA", "GITHUB_SERVER_URL"):
        monkeypatch.delenv(name, raising=False)


class LoggingPool(SandboxPool):
    """A real sandbox pool that logs each job handed to it ("submit") and each wait for a
    job's run ("wait"): jobs run side by side show every submit of a round before a wait."""

    def __init__(self) -> None:
        super().__init__(NamespaceSandboxes(concurrency=2))
        self.log: list[str] = []

    def submit(
        self, job: dict[str, Any], limits: Limits, priority: int = NOW, rank: int = 0
    ) -> Future[SampleReport]:
        future = super().submit(job, limits, priority, rank)
        self.log.append("submit")
        result = future.result

        def logged(timeout: float | None = None) -> SampleReport:
            self.log.append("wait")
            return result(timeout)

        future.result = logged  # type: ignore[method-assign]
        return future


@contextlib.contextmanager
def processes_of(uid: int, count: int) -> Iterator[None]:
    """``count`` processes of ``uid`` (``nobody``: as other programs' or sandboxes' would
    be), alive until the block ends; only root can start them."""
    read, write = os.pipe()
    holders = []
    for _ in range(count):
        pid = os.fork()
        if pid == 0:
            os.close(write)
            os.setgid(uid)
            os.setuid(uid)
            os.read(read, 1)  # until the block ends
            os._exit(0)
        holders.append(pid)
    os.close(read)
    try:
        yield
    finally:
        os.close(write)
        for pid in holders:
            os.waitpid(pid, 0)
