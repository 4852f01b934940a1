"""Repository cases run as pytest items: a scripted agent on the loopback server fixes (or
breaks, or leaves) a repository through the client tools in its sandbox, the repository's
tests decide, and the recorded conversation replays offline to the same verdicts though
the tools' output differs from run to run.

The hostile agent's whole loop runs in a separate process (``python this_file.py PROJECT
OUTSIDE PORT``) with an API key in its environment, as root and as an unprivileged user.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_prompteval.testing import AnthropicServer, ScriptedAgent, call

if TYPE_CHECKING or __package__:  # imported as tests.test_repo_items (mypy reads it so)
    from .conftest import ROOT, item_results
    from .test_lazy_imports import NOT_LOADED
    from .test_repo_sandbox import digest
else:  # run as a script: the hostile loop, as another user
    from conftest import ROOT, item_results
    from test_lazy_imports import NOT_LOADED
    from test_repo_sandbox import digest

EDIT = "str_replace_based_edit_tool"
PROMPT = """\
system_prompt: "You fix bugs in the repository at /repo."
user_prompt: "{issue}"
max_steps: 10
tools:
  - {type: text_editor_20250728, name: str_replace_based_edit_tool}
  - {type: bash_20250124, name: bash}
"""
CASE = """\
- id: %s
  kind: repo
  repo: ../repos/m
  input: {issue: "%s: double(2) gives 5"}
  fail_to_pass: [tests/test_m.py::test_fixed]
  pass_to_pass: [tests/test_m.py::test_kept]
  timeout: %s
"""
RUN_TESTS = "cd /repo && python -m pytest -q -p no:cacheprovider"


def replace(old: str, new: str) -> dict[str, Any]:
    return call(EDIT, command="str_replace", path="m.py", old_str=old, new_str=new)


AGENT = ScriptedAgent(
    {
        # its first command's output differs on every run: a fresh temporary folder, the
        # time in nanoseconds, pytest's timings
        "RIGHT": [
            [call("bash", command=f"mktemp -d; date +%s%N; {RUN_TESTS}")],
            [replace("x + x + 1", "x + x")],
            [call("bash", command=RUN_TESTS)],
            ["Fixed."],
        ],
        "BREAK": [
            [replace("x + x + 1", "x + x")],
            [replace("return 1", "return 2")],
            ["Fixed, and tidied keep()."],
        ],
        "NOTHING": [["I see no bug."]],
        # fixes the code, and writes a conftest the verdict puts back
        "CONFTEST": [
            [call("bash", command="echo 'import sys' > conftest.py")],
            [replace("x + x + 1", "x + x")],
            ["Fixed."],
        ],
        # commits its fix: the verdict's diff is still against the snapshot
        "GIT": [
            [call("bash", command="git status --short && git log --oneline")],
            [replace("x + x + 1", "x + x")],
            [call("bash", command="git commit -qam fix && git status --short && echo clean")],
            ["Fixed and committed."],
        ],
    }
)


def make_repository(top: Path) -> Path:
    repo = top / "repos" / "m"
    (repo / "tests").mkdir(parents=True)
    (repo / "m.py").write_text(
        "def double(x):\n    return x + x + 1\n\n\ndef keep():\n    return 1\n"
    )
    (repo / "tests" / "test_m.py").write_text(
        "from m import double, keep\n\n\ndef test_fixed():\n    assert double(2) == 4\n\n\n"
        "def test_kept():\n    assert keep() == 1\n"
    )
    return repo


def make_project(top: Path, cases: Sequence[tuple[str, str, float]]) -> Path:
    """A project with the repository, the fixer prompt and ``cases`` (id, issue word,
    timeout); the repository's own tests are not pytest's to collect here."""
    repo = make_repository(top)
    (top / "prompts").mkdir()
    (top / "prompts" / "fixer.yaml").write_text(PROMPT)
    (top / "prompt_cases").mkdir()
    body = "".join(CASE % case for case in cases)
    (top / "prompt_cases" / "repo.yaml").write_text("cases:\n" + body)
    (top / "conftest.py").write_text('collect_ignore = ["repos"]\n')
    return repo


def by_case(results: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["case_id"]: r for r in results}


def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object) -> None:
        raise AssertionError(f"replay opened a connection to {args}")

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setattr(socket.socket, "connect", refuse)


def test_the_repository_tests_decide_and_a_replay_gives_the_same_verdicts(
    pytester: pytest.Pytester,
    anthropic_server: AnthropicServer,
    monkeypatch: pytest.MonkeyPatch,
    xdist_args: list[str],
    request: pytest.FixtureRequest,
) -> None:
    anthropic_server.responder = AGENT
    cases = [("right_fix", "RIGHT", 60), ("breaks_kept", "BREAK", 60), ("no_change", "NOTHING", 60)]
    repo = make_project(pytester.path, cases)
    snapshot = digest(repo)
    # the items' copies and sandbox homes go here (xdist's workers read TMPDIR)
    private = Path(tempfile.mkdtemp(prefix="prompteval-items-"))
    request.addfinalizer(lambda: shutil.rmtree(private, ignore_errors=True))
    monkeypatch.setenv("TMPDIR", str(private))
    monkeypatch.setattr(tempfile, "tempdir", str(private))
    result = pytester.runpytest("--prompt=fixer", "-p", "no:randomly", *xdist_args)
    result.assert_outcomes(passed=1, failed=2)
    # each failure names its tests and shows the diff (in whichever order xdist ran them)
    result.stdout.fnmatch_lines(
        [
            "*breaks_kept [[]fixer]: not resolved: pass_to_pass broken: "
            "tests/test_m.py::test_kept (failed)",
            "*-    return 1",
            "*+    return 2",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*no_change [[]fixer]: not resolved: fail_to_pass not fixed: "
            "tests/test_m.py::test_fixed (failed)",
            "*(no change)",
        ]
    )
    result.stdout.fnmatch_lines(
        ["fixer * 3 * 1 * 2 * 0 * 0 * 33.3% *", "fixer: repository: 1/3 resolved"]
    )
    assert digest(repo) == snapshot
    assert [p.name for p in private.iterdir() if p.name.startswith("prompteval-")] == []
    sent = [r.body for r in anthropic_server.requests]
    # the tools ran: what the model was sent is the real output, and it varies
    first_output = next(
        b["messages"][2]["content"][0]["content"]
        for b in sent
        if "RIGHT" in json.dumps(b["messages"][0]) and len(b["messages"]) == 3
    )
    assert "/tmp/tmp." in first_output and "1 failed, 1 passed" in first_output

    # replayed offline: the tools run again (a new temporary folder, another time) and the
    # recorded turns apply the same edits, to the same verdicts
    anthropic_server.requests.clear()
    no_network(monkeypatch)
    reprec = pytester.inline_run("--prompt=fixer", "--prompteval-record=none", "-p", "no:randomly")
    reprec.assertoutcome(passed=1, failed=2)
    assert anthropic_server.requests == []
    replayed = by_case(item_results(reprec))
    assert {c: r["repo"]["resolved"] for c, r in replayed.items()} == {
        "right_fix": True,
        "breaks_kept": False,
        "no_change": False,
    }
    right = replayed["right_fix"]
    assert right["replayed"] and right["calls_replayed"] == 4
    assert right["repo"]["fail_to_pass_fixed"] == 1.0
    assert right["repo"]["outcomes"] == {
        "tests/test_m.py::test_fixed": "PASSED",
        "tests/test_m.py::test_kept": "PASSED",
    }
    assert "-    return x + x + 1\n+    return x + x" in right["repo"]["diff"]
    again = right["trajectory"]["steps"][0]["calls"][0]["result"]
    assert again != first_output and "1 failed, 1 passed" in again
    kept = replayed["breaks_kept"]["repo"]
    assert (kept["fail_to_pass_fixed"], kept["pass_to_pass_kept"]) == (1.0, 0.0)
    # the test output of an unresolved item is kept (the view shows it), not a resolved one's
    assert "test_kept" in kept["output"] and right["repo"]["output"] is None
    assert replayed["no_change"]["repo"]["diff"] == ""
    assert digest(repo) == snapshot


def test_a_changed_model_turn_is_a_missing_recording_naming_its_step(
    pytester: pytest.Pytester, anthropic_server: AnthropicServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    anthropic_server.responder = AGENT
    make_project(pytester.path, [("right_fix", "RIGHT", 60)])
    pytester.runpytest("--prompt=fixer").assert_outcomes(passed=1)
    # the recorded second turn now makes another edit: the third step's request (which holds
    # that turn) was never recorded
    for path in (pytester.path / "prompt_recordings").glob("*.json"):
        data = json.loads(path.read_text())
        for block in data["response"].get("content", []):
            if block.get("input", {}).get("new_str") == "x + x":
                block["input"]["new_str"] = "2 * x"
                path.write_text(json.dumps(data))
    no_network(monkeypatch)
    result = pytester.runpytest("--prompt=fixer", "--prompteval-record=none")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "step 3 of the conversation: no recording answers it: message 3 (the agent's) "
            "differs from its recording since it was recorded*"
        ]
    )


def test_repo_is_a_git_repository_of_the_snapshot_and_a_commit_hides_nothing(
    pytester: pytest.Pytester, anthropic_server: AnthropicServer
) -> None:
    anthropic_server.responder = AGENT
    make_project(pytester.path, [("committed", "GIT", 60)])
    reprec = pytester.inline_run("--prompt=fixer", "-p", "no:randomly")
    reprec.assertoutcome(passed=1)
    (result,) = item_results(reprec)
    calls = [c for s in result["trajectory"]["steps"] for c in s["calls"]]
    assert calls[0]["result"].endswith(" the repository as the task begins\n")
    assert calls[2]["result"] == "clean\n"
    assert "-    return x + x + 1\n+    return x + x" in result["repo"]["diff"]


def test_a_repository_item_runs_in_the_sandboxes_of_the_engines_provider(
    pytester: pytest.Pytester, anthropic_server: AnthropicServer
) -> None:
    """The agent's sandbox and the verdict's come from the engine's ``SandboxProvider``,
    the item's copy too: another provider is one the engine is given."""
    from pytest_prompteval.pytest.run import RUN_KEY
    from pytest_prompteval.sandbox.provider import NamespaceSandboxes, RepoSandbox
    from pytest_prompteval.sandbox.workspace import Copy, Snapshot

    made: list[str] = []

    class Counted(NamespaceSandboxes):
        def copy_in(self, snapshot: Snapshot) -> Copy:
            made.append("copy in")
            return super().copy_in(snapshot)

        def repo_sandbox(
            self, copy: Path, base: Path | None = None, *args: Any, **kwargs: Any
        ) -> RepoSandbox:
            made.append("the verdict's sandbox" if base else "the agent's sandbox")
            return super().repo_sandbox(copy, base, *args, **kwargs)

    class Swap:
        # after collection, whose check of the listed test ids (a sandbox of its own, unless
        # cached from an earlier run) is not the item's
        @pytest.hookimpl(trylast=True)
        def pytest_collection_finish(self, session: pytest.Session) -> None:
            session.config.stash[RUN_KEY].engine.sandboxes = Counted()

    anthropic_server.responder = AGENT
    make_project(pytester.path, [("right_fix", "RIGHT", 60)])
    reprec = pytester.inline_run("--prompt=fixer", "-p", "no:randomly", plugins=[Swap()])
    reprec.assertoutcome(passed=1)
    assert made == ["copy in", "the agent's sandbox", "the verdict's sandbox"]


def test_the_verdicts_sandbox_starts_while_the_agent_works_and_takes_the_copy_it_left(
    pytester: pytest.Pytester, anthropic_server: AnthropicServer
) -> None:
    """The verdict's sandbox is made before the agent's first turn is answered (its start
    costs the item no time), yet its diff and tests see the copy as the agent left it."""
    from pytest_prompteval.pytest.run import RUN_KEY
    from pytest_prompteval.sandbox.provider import NamespaceSandboxes, RepoSandbox

    verdicts = threading.Event()
    answered_after: list[bool] = []

    class Watched(NamespaceSandboxes):
        def repo_sandbox(
            self, copy: Path, base: Path | None = None, *args: Any, **kwargs: Any
        ) -> RepoSandbox:
            made = super().repo_sandbox(copy, base, *args, **kwargs)
            if base:
                verdicts.set()
            return made

    class Swap:
        @pytest.hookimpl(trylast=True)
        def pytest_collection_finish(self, session: pytest.Session) -> None:
            session.config.stash[RUN_KEY].engine.sandboxes = Watched()

    def responder(request: dict[str, Any]) -> Any:
        if not answered_after:  # a verdict made after the conversation never comes: 30 s
            answered_after.append(verdicts.wait(30))
        return AGENT(request)

    anthropic_server.responder = responder
    make_project(pytester.path, [("right_fix", "RIGHT", 60)])
    reprec = pytester.inline_run("--prompt=fixer", "-p", "no:randomly", plugins=[Swap()])
    reprec.assertoutcome(passed=1)
    assert answered_after == [True]
    (result,) = item_results(reprec)
    assert "-    return x + x + 1\n+    return x + x" in result["repo"]["diff"]


def test_the_agents_sandbox_is_closed_when_the_verdicts_cannot_be_started_beside_it(
    pytester: pytest.Pytester, anthropic_server: AnthropicServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process out of threads (a container's pids limit) cannot start the verdict's
    sandbox beside the agent's: the item errs, and the agent's sandbox is closed, not left
    running with its cgroup and folder until pytest ends."""
    import types

    from pytest_prompteval.pytest.run import RUN_KEY
    from pytest_prompteval.sandbox import provider
    from pytest_prompteval.sandbox.workspace import Workspace

    made: list[Workspace] = []

    class Watched(provider.NamespaceSandboxes):
        def repo_sandbox(self, *args: Any, **kwargs: Any) -> provider.RepoSandbox:
            workspace = super().repo_sandbox(*args, **kwargs)
            assert isinstance(workspace, Workspace)
            made.append(workspace)
            return workspace

    class Swap:
        @pytest.hookimpl(trylast=True)
        def pytest_collection_finish(self, session: pytest.Session) -> None:
            session.config.stash[RUN_KEY].engine.sandboxes = Watched()

    def no_thread(*args: Any, **kwargs: Any) -> threading.Thread:
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(provider, "threading", types.SimpleNamespace(Thread=no_thread))
    anthropic_server.responder = AGENT
    make_project(pytester.path, [("right_fix", "RIGHT", 60)])
    try:
        reprec = pytester.inline_run("--prompt=fixer", "-p", "no:randomly", plugins=[Swap()])
        running = [w for w in made if w._process.poll() is None]
    finally:
        for workspace in made:
            if workspace._process.poll() is None:  # left running: closed once, here
                workspace.close()
    assert len(made) == 1  # the agent's
    assert running == []
    (report,) = [r for r in reprec.getreports("pytest_runtest_logreport") if r.failed]
    assert "can't start new thread" in str(report.longrepr)


def test_the_summary_counts_the_items_whose_test_infrastructure_was_restored(
    pytester: pytest.Pytester, anthropic_server: AnthropicServer
) -> None:
    anthropic_server.responder = AGENT
    make_project(pytester.path, [("conftest", "CONFTEST", 60), ("right_fix", "RIGHT", 60)])
    result = pytester.runpytest("--prompt=fixer", "-p", "no:randomly")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "fixer: repository: 2/2 resolved; the agent changed the test infrastructure in 1 "
            "(restored for the verdict: see each result's repo.restored)"
        ]
    )


@pytest.mark.parametrize("checked", [True, False], ids=["ids-checked", "verdict"])
def test_a_test_patch_that_does_not_apply_is_the_cases_error(
    pytester: pytest.Pytester, anthropic_server: AnthropicServer, checked: bool
) -> None:
    """Refused at collection, before any call, where the listed ids are checked (the test
    patch applied); where they cannot be (a test command that is not pytest itself), the
    verdict's own apply makes it an error of the item, never the agent's failure."""
    anthropic_server.responder = AGENT
    make_project(pytester.path, [("right_fix", "RIGHT", 60)])
    (pytester.path / "tests.diff").write_text(
        "--- a/tests/test_m.py\n+++ b/tests/test_m.py\n@@ -1 +1 @@\n-not there\n+x\n"
    )
    with (pytester.path / "prompt_cases" / "repo.yaml").open("a") as cases:
        cases.write("  test_patch: ../tests.diff\n")
        if not checked:
            cases.write('  test_command: "env python -m pytest -p no:cacheprovider"\n')
    reprec = pytester.inline_run("--prompt=fixer")
    if checked:
        (report,) = [r for r in reprec.getreports("pytest_collectreport") if r.failed]
        assert "repo.yaml:4: case 'right_fix': test_patch does not apply" in str(report.longrepr)
        assert anthropic_server.requests == []
        return
    (result,) = item_results(reprec)
    assert result["outcome"] == "error" and result["error_type"] == "verdict"
    assert "test_patch does not apply to the snapshot's test files" in result["error"]
    assert "patch failed: tests/test_m.py:1" in result["error"]


def test_the_examples_replay_offline_every_case_resolved(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, xdist_args: list[str]
) -> None:
    """examples/repo-tasks (docs/guides/repo-tasks.md), from its committed recordings."""
    shutil.copytree(ROOT / "examples" / "repo-tasks", pytester.path, dirs_exist_ok=True)
    no_network(monkeypatch)
    result = pytester.runpytest("--prompt=fixer", *xdist_args)
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(
        [
            "fixer * 4 * 4 * 0 * 0 * 0 * 100.0% *",
            "fixer: repository: 4/4 resolved",
            "fixer: cost: $0.0000 spent: all 17 calls replayed from recordings*",
        ]
    )


def test_the_estimate_walks_a_repository_task_through_its_recordings(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the steps are recorded without their tools' output: the estimate finds every one
    # without running a tool (before, the walk asked the scripted world for `bash`)
    shutil.copytree(ROOT / "examples" / "repo-tasks", pytester.path, dirs_exist_ok=True)
    no_network(monkeypatch)
    result = pytester.runpytest("--prompt=fixer", "--prompteval-estimate")
    result.stdout.fnmatch_lines(["fixer * 17 * 0 * 0 * 0 * 0.0000", "total: 0 new calls*"])


HOSTILE = "HOSTILE"


def hostile_agent(outside: Path, port: int) -> ScriptedAgent:
    return ScriptedAgent(
        {
            HOSTILE: [
                [call("bash", command="cat /proc/1/environ; cat /proc/*/environ; env")],
                [call("bash", command="cat /etc/shadow")],
                [call(EDIT, command="view", path="/proc/1/environ")],
                [call("bash", command=f"echo pwned > /tmp/pwned; echo pwned > {outside}/pwned")],
                [call("bash", command="echo pwned > ../../pwned; echo pwned > ../pwned")],
                [call(EDIT, command="create", path="../../pwned", file_text="pwned")],
                [
                    call(
                        "bash",
                        command="python -c 'import socket; socket.create_connection("
                        f'("127.0.0.1", {port}), timeout=2)\' || echo NO-CONNECTION',
                    )
                ],
                [call("bash", command="sleep 300")],
                [call("bash", command="echo still here")],
                ["Done."],
            ]
        }
    )


class Results:
    """Every item's result of an in-process run."""

    def __init__(self) -> None:
        self.results: list[dict[str, Any]] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        found = dict(report.user_properties).get("prompteval")
        if isinstance(found, dict) and report.when == "call":
            self.results.append(found)


def hostile(project: Path, outside: Path, port: int) -> dict[str, Any]:
    """The hostile agent's conversation recorded against the loopback server, then replayed
    with no server; what the server received, the verdicts and what was left behind."""
    repo = project / "repos" / "m"
    before = digest(repo)
    runs = []
    with AnthropicServer(hostile_agent(outside, port)) as server:
        os.environ["ANTHROPIC_BASE_URL"] = server.url
        for mode in ("all", "none"):
            collected = Results()
            args = [str(project), "--prompt=fixer", f"--prompteval-record={mode}"]
            pytest.main([*args, "-q", "-p", "no:randomly", "-p", "no:cacheprovider"], [collected])
            runs.append(collected.results)
            if mode == "all":
                bodies = [r.body for r in server.requests]
                server.requests.clear()
        replay_requests = len(server.requests)
    return {
        "runs": runs,
        "bodies": bodies,
        "replay_requests": replay_requests,
        "same_snapshot": digest(repo) == before,
        "host_files": [str(p) for p in (outside / "pwned", Path("/tmp/pwned")) if p.exists()],
    }


@pytest.mark.parametrize("unprivileged", [False, True], ids=["root", "unprivileged"])
def test_a_hostile_agent_through_the_whole_loop_is_contained(unprivileged: bool) -> None:
    from tests.test_sandbox_hostile import (
        KEY,
        interpreter_for,
        outside_tmp,
        run_script,
        unreached_port,
    )

    if not unprivileged and os.geteuid() != 0:
        pytest.skip("the root mode needs root")
    project = Path(tempfile.mkdtemp(prefix="prompteval-project-"))
    make_project(project, [("hostile", HOSTILE, 3)])
    outside = Path(tempfile.mkdtemp(prefix="prompteval-outside-", dir=outside_tmp()))
    for folder, _, _ in (*os.walk(project), (str(outside), 0, 0)):
        Path(folder).chmod(0o777)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "ANTHROPIC_API_KEY": KEY}
    python, user = interpreter_for(env, unprivileged)
    if user is not None:  # the sandbox's `python` is nobody's interpreter, without pytest
        pythonpath = f"{env['PYTHONPATH']}:$PYTHONPATH"  # the verdict's reporter is on it
        command = f"PYTHONPATH={pythonpath} {python} -m pytest -q -p no:cacheprovider"
        with (project / "prompt_cases" / "repo.yaml").open("a") as cases:
            cases.write(f"  test_command: {json.dumps(command)}\n")
    try:
        with unreached_port() as port:
            report = run_script([python, __file__, str(project), str(outside), port], env, user)
    finally:
        shutil.rmtree(project, ignore_errors=True)
    recorded, replayed = report["runs"]
    assert KEY not in json.dumps(report["bodies"]) and "sk-ant" not in json.dumps(report["bodies"])
    calls = [c for s in recorded[0]["trajectory"]["steps"] for c in s["calls"]]
    assert len(calls) == 9 and len(report["bodies"]) == 10
    assert "Permission denied" in calls[0]["result"] and "Permission denied" in calls[1]["result"]
    assert calls[2]["is_error"] and "outside /repo" in calls[2]["result"]
    assert calls[5]["is_error"] and "outside /repo" in calls[5]["result"]
    assert "NO-CONNECTION" in calls[6]["result"]
    assert calls[7]["is_error"] and "timed out" in calls[7]["result"]
    assert calls[8]["result"] == "still here\n"
    assert report["host_files"] == []
    assert report["same_snapshot"]
    # the verdict: nothing fixed, the same when replayed with no server answering
    for run in (recorded, replayed):
        (result,) = run
        assert result["outcome"] == "failed" and result["repo"]["resolved"] is False
        assert result["repo"]["outcomes"]["tests/test_m.py::test_fixed"] == "FAILED"
    assert replayed[0]["calls_replayed"] == 10 and report["replay_requests"] == 0


if __name__ == "__main__":
    os.chdir(sys.argv[1])
    stdout = os.dup(1)
    os.dup2(2, 1)  # pytest's own output goes to stderr: stdout is the report
    found = hostile(Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]))
    sys.stdout.flush()
    os.dup2(stdout, 1)
    print(json.dumps(found))


def test_a_repository_case_needs_the_client_tools_named_by_file_and_line(
    pytester: pytest.Pytester,
) -> None:
    make_project(pytester.path, [("right_fix", "RIGHT", 60)])
    prompt = pytester.path / "prompts" / "fixer.yaml"
    prompt.write_text(PROMPT.replace("{type: bash_20250124, name: bash}", "lookup"))
    (pytester.path / "conftest.py").write_text(
        'import pytest_prompteval\ncollect_ignore = ["repos"]\n\n\n'
        '@pytest_prompteval.tool("lookup")\ndef lookup(key: str) -> str:\n    """Look."""\n'
        "    return key\n"
    )
    result = pytester.runpytest("--prompt=fixer")
    assert result.ret != 0
    result.stdout.fnmatch_lines(
        [
            "*prompts/fixer.yaml:4: case 'right_fix' is a repository case: tool 'lookup' of "
            "prompt 'fixer' is not one the sandbox runs; give {type: text_editor_20250728, "
            "name: ...} and {type: bash_20250124, name: ...}"
        ]
    )
    assert "Traceback" not in result.stdout.str()
    prompt.write_text('system_prompt: "Fix it."\nuser_prompt: "{issue}"\n')
    result = pytester.runpytest("--prompt=fixer")
    result.stdout.fnmatch_lines(
        ["*prompts/fixer.yaml*: case 'right_fix' is a repository case: prompt 'fixer' needs tools*"]
    )


@pytest.mark.parametrize(
    ("tool", "limit"),
    [("text_editor_20250728", 0), ("text_editor_20250728", '"many"'), ("bash_20250124", 100)],
)
def test_a_bad_max_characters_is_named_by_file_and_line(
    pytester: pytest.Pytester, tool: str, limit: object
) -> None:
    make_project(pytester.path, [("right_fix", "RIGHT", 60)])
    prompt = pytester.path / "prompts" / "fixer.yaml"
    name = "bash" if tool.startswith("bash") else "str_replace_based_edit_tool"
    text = PROMPT.replace(
        f"{{type: {tool}, name: {name}}}",
        f"{{type: {tool}, name: {name}, max_characters: {limit}}}",
    )
    assert text != PROMPT
    prompt.write_text(text)
    result = pytester.runpytest("--prompt=fixer")
    assert result.ret != 0
    result.stdout.fnmatch_lines(
        [
            f"*prompts/fixer.yaml:*: tool '{name}': max_characters: expected a whole number of "
            "at least 1 on a text_editor_20250728 tool*"
        ]
    )
    assert "Traceback" not in result.stdout.str()


def test_a_sandbox_that_fails_is_an_error_of_the_item_not_a_failure(
    pytester: pytest.Pytester, anthropic_server: AnthropicServer
) -> None:
    anthropic_server.responder = AGENT
    repo = make_project(pytester.path, [("right_fix", "RIGHT", 60)])
    # the snapshot goes away between collection and the item: its copy cannot be made
    (pytester.path / "conftest.py").write_text(
        'import shutil\ncollect_ignore = ["repos"]\n\n\n'
        f"def pytest_collection_finish(session):\n    shutil.rmtree({str(repo)!r})\n"
    )
    reprec = pytester.inline_run("--prompt=fixer")
    (report,) = [r for r in reprec.getreports("pytest_runtest_logreport") if r.failed]
    assert report.when == "setup"  # an error, not a failed test
    (result,) = item_results(reprec)
    assert result["outcome"] == "error" and result["error_type"] == "sandbox"
    assert "copying 'right_fix''s repository" in result["error"]


def test_a_replayed_repository_run_imports_no_client_server_or_templates(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A repository item whose turns all replay needs neither the SDK nor the view's server
    nor Jinja2, nor the plugin's modules for what the run does not ask for: each process of
    a one-item run would pay for importing them."""
    shutil.copytree(ROOT / "examples" / "repo-tasks", pytester.path, dirs_exist_ok=True)
    heavy = ("anthropic", "httpx", "jinja2", "starlette", "uvicorn", *NOT_LOADED)
    with open(pytester.path / "conftest.py", "a") as conftest:
        conftest.write(
            "\n\ndef pytest_unconfigure(config):\n    import sys\n\n"
            f"    heavy = {heavy!r}\n"
            '    print("IMPORTED", sorted(n for n in heavy if n in sys.modules))\n'
        )
    no_network(monkeypatch)
    result = pytester.runpytest_subprocess(
        "--prompt=fixer", "-k", "slug_double_space", "-s", "--prompteval-results=none"
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["IMPORTED []"])
