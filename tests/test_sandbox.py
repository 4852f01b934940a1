"""The sandbox's own behaviour: start-up failures explained, isolation required unless the
user opts in, samples run ahead in order, verdicts that do not depend on the machine's load.
(Hostile samples: test_sandbox_hostile.py; the standard library: test_sandbox_stdlib.py.)"""

from __future__ import annotations

import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import nullcontext
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from pytest_prompteval.core.cases import load_case_file
from pytest_prompteval.core.errors import PromptevalError
from pytest_prompteval.sandbox import client, startup
from pytest_prompteval.sandbox.client import Limits, Sandbox, SandboxUnavailable
from pytest_prompteval.sandbox.isolation import Isolation
from pytest_prompteval.sandbox.pool import AHEAD, SandboxPool
from pytest_prompteval.sandbox.provider import NamespaceSandboxes
from pytest_prompteval.sandbox.server import parse_events, readiness
from pytest_prompteval.scoring.code.measure import measure
from pytest_prompteval.scoring.code.spec import CodeSpec, CodeTest, parse_code_spec

from .conftest import generated_project, item_results, processes_of
from .test_sandbox_hostile import interpreter_for, run_script

RETURNS_NONE = "def f():\n    return None\n"
SPEC = CodeSpec(entry_point="f", tests=(CodeTest("args", []),))


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    box = Sandbox()
    yield box
    box.close()


def test_a_server_that_does_not_start_shows_its_stderr(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(client, "server_sys_path", lambda: ["/nonexistent"])
    box = Sandbox()
    with pytest.raises(SandboxUnavailable, match=r"did not start: .*No module named"):
        box.run(SPEC.job(RETURNS_NONE), Limits())
    box.close()


def test_without_isolation_code_refuses_to_run_unless_the_user_opts_in() -> None:
    missing = Isolation(missing=["no namespaces (Operation not permitted): ..."])
    refused = readiness(missing, unsafe=False, check=lambda: None)
    assert refused["ready"] is False and refused["missing"] == missing.missing
    assert readiness(missing, unsafe=True, check=lambda: None)["ready"] is True
    box = Sandbox()
    box.info = refused
    message = box._why_not("")
    assert "cannot isolate samples here: no namespaces" in message
    assert "--prompteval-unsafe-sandbox on the command line" in message


def test_the_result_channel_ignores_garbage() -> None:
    data = b'{not json\n[1, 2]\n{"test": 0, "output": 1}\n\xff\xfe\n"text"\n{"done": true}\n'
    assert parse_events(data) == [{"test": 0, "output": 1}, {"done": True}]


def test_an_io_tests_verdict_is_made_outside_the_sample(sandbox: Sandbox) -> None:
    """The sample reports its output and never holds the expected value, so a forged
    'passed' event does not pass it."""
    spec = CodeSpec(entry_point="f", tests=(CodeTest("args", [], expected=1729),))
    looks = (
        "import gc\n"
        "def f():\n"
        "    found = [o for o in gc.get_objects() if type(o) is dict and 'expected' in o]\n"
        "    return [o['expected'] for o in found]\n"
    )
    assert sandbox.run(spec.job(looks), Limits(timeout=2.0)).tests[0]["output"] == []
    forges = (
        "import os\n"
        "def f():\n"
        "    for fd in range(256):\n"
        "        try:\n"
        '            os.write(fd, b\'{"test": 0, "passed": true}\\n\')\n'
        "        except OSError:\n"
        "            pass\n"
    )
    metrics = measure(spec, forges, sandbox.run(spec.job(forges), Limits(timeout=2.0)))
    assert not metrics.functional and metrics.tests_passed == 0


def test_a_property_case_without_hypothesis_fails_at_collection_with_the_install_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(
        "cases:\n- id: c1\n  input: {}\n  entry_point: f\n  reference: 'def f(x): return x'\n"
        "  tests: [{args: [1], expected: 1}]\n  properties: {args: ['integers()']}\n"
    )
    (case,) = load_case_file(path).cases
    monkeypatch.setitem(sys.modules, "hypothesis", None)
    with pytest.raises(PromptevalError, match="pip install hypothesis"):
        parse_code_spec(case)


def _finished(finished: list[str], name: str, future: object) -> None:
    finished.append(name)


def test_the_pool_runs_an_items_own_job_before_those_queued_ahead() -> None:
    """Before every job queued ahead but the one a server may already hold behind the job
    it runs; jobs ahead in the order of the items that need them; -x drops what no server
    holds yet."""
    pool = SandboxPool(NamespaceSandboxes(concurrency=1))
    finished: list[str] = []
    try:
        sleeps = SPEC.job("import time\ndef f():\n    time.sleep(1)\n")
        jobs = {"first": pool.submit(sleeps, Limits())}
        for name, rank in (("ahead1", 0), ("ahead2", 9), ("sooner", 5)):
            jobs[name] = pool.submit(SPEC.job(RETURNS_NONE), Limits(), AHEAD, rank)
        jobs["now"] = pool.submit(SPEC.job(RETURNS_NONE), Limits())
        for name, future in jobs.items():
            future.add_done_callback(functools.partial(_finished, finished, name))
        for future in jobs.values():
            future.result()
        assert finished[0] == "first"
        assert finished.index("now") < finished.index("ahead2")
        assert finished.index("ahead1") < finished.index("sooner") < finished.index("ahead2")
        blocker = pool.submit(sleeps, Limits())
        ahead = [pool.submit(SPEC.job(RETURNS_NONE), Limits(), AHEAD) for _ in range(2)]
        pool.stop()  # -x: what was queued ahead is dropped, items' own jobs still run
        assert ahead[-1].cancelled() and blocker.result().exit_code == 0
        assert pool.submit(SPEC.job(RETURNS_NONE), Limits(), AHEAD).cancelled()
    finally:
        pool.close()


def test_a_server_takes_the_next_job_while_it_runs_one(sandbox: Sandbox) -> None:
    """Jobs sent behind one another are answered in order: the server reads the next one as
    soon as it answers, without a round trip to pytest."""
    jobs = [
        CodeSpec(entry_point="f", tests=(CodeTest("args", [], expected=n),)).job(
            f"def f():\n    return {n}\n"
        )
        for n in range(3)
    ]
    for job in jobs:
        sandbox.send(job, Limits())
    assert sandbox.outstanding == 3
    outputs = [sandbox.receive().tests[0]["output"] for _ in jobs]
    assert outputs == [0, 1, 2] and sandbox.outstanding == 0


def test_ending_a_dead_server_with_a_job_still_buffered_for_it() -> None:
    # the server died before reading what was written to it: closing its stdin cannot
    # flush, and must not turn the crash into an error of the item that was waiting
    process = subprocess.Popen(["true"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    process.wait()
    assert process.stdin is not None
    process.stdin.write("{}\n")  # buffered, not sent
    client.hold_non_dumpable(+1)  # as its start did: ending it must leave the count as it was
    Sandbox()._end(process)
    assert process.stdin.closed and process.stdout is not None and process.stdout.closed


def test_jobs_held_by_a_server_that_dies_run_again_on_a_new_one() -> None:
    pool = SandboxPool(NamespaceSandboxes(concurrency=1))
    try:
        pool.run(SPEC.job(RETURNS_NONE), Limits())  # the server is up
        (box,) = pool._boxes
        assert isinstance(box, Sandbox)
        sleep = "import time\ndef f():\n    time.sleep({})\n"
        gate = pool.submit(SPEC.job(sleep.format(1)), Limits())  # the next two queue meanwhile
        sleeps = pool.submit(SPEC.job(sleep.format(60)), Limits(timeout=60))
        behind = pool.submit(SPEC.job(RETURNS_NONE), Limits())
        for _ in range(3000):
            if gate.done() and box.outstanding == 2:  # both handed to the server
                break
            time.sleep(0.01)
        assert box.outstanding == 2 and box._process is not None
        os.killpg(box._process.pid, signal.SIGKILL)  # the server and its namespace
        assert sleeps.result().crashed is not None
        assert behind.result().exit_code == 0 and behind.result().tests[0]["output"] is None
    finally:
        pool.close()


CPU_CASES = """
cases:
- id: busy_sum
  entry_point: busy_sum
  input: {task: "sum of i*i below n"}
  reference: |
    def busy_sum(n):
        return sum(i * i for i in range(n))
  tests:
  - {args: [300000], expected: 8999955000050000}
"""

CPU_ANSWERS = """
ANSWERS = {
    "same": "def busy_sum(n):\\n    return sum(i * i for i in range(n))\\n",
    "twice": "def busy_sum(n):\\n    sum(i * i for i in range(n))\\n"
    "    return sum(i * i for i in range(n))\\n",
    "endless": "def busy_sum(n):\\n    while True:\\n        pass\\n",
}

def answer(request, *, case, prompt, sample):
    return "```python\\n" + ANSWERS[prompt.version] + "```"
"""

# Processes that keep every core busy while the items run (not while pytest starts).
HOGS = """
import os, subprocess, sys
HOGS = []

def pytest_collection_finish(session):
    for _ in range(os.cpu_count() or 2):
        HOGS.append(subprocess.Popen([sys.executable, "-c", "while True: pass"]))

def pytest_sessionfinish(session):
    for hog in HOGS:
        hog.kill()
        hog.wait()
"""


def test_verdicts_do_not_change_beside_a_cpu_hog(pytester: pytest.Pytester) -> None:
    """Timeouts come from CPU time: replayed beside processes that keep every core busy,
    the same answers get the same verdicts."""
    prompts = pytester.mkdir("prompts")
    for version in ("same", "twice", "endless"):
        prompts.joinpath(f"{version}.yaml").write_text(f"user_prompt: '{{task}} {version}'\n")
    pytester.mkdir("prompt_cases").joinpath("c.yaml").write_text(CPU_CASES)
    pytester.makepyfile(cpuapp=CPU_ANSWERS)
    pytester.makeconftest(HOGS)
    pytester.makeini("[pytest]\npythonpath = .\n")
    reprec = pytester.inline_run(
        "--prompt=same",
        "--compare=twice",
        "--compare=endless",
        "--prompteval-provider=python:cpuapp:answer",
        "--prompteval-results=none",
        "--prompteval-code-workers=1",
    )
    verdicts = {r["prompt"]: (r["passed"], r["error_class"]) for r in item_results(reprec)}
    assert verdicts == {
        "same": (True, None),
        "twice": (True, None),
        "endless": (False, "timeout"),
    }


@pytest.mark.parametrize(
    ("args", "ini", "message"),
    [
        (
            ["--prompteval-code-workers=0"],
            "",
            "ERROR: --prompteval-code-workers '0': expected a whole number from 1 to 128",
        ),
        (
            [],
            "prompteval_code_workers = many\n",
            "ERROR: ini prompteval_code_workers 'many': expected a whole number from 1 to 128",
        ),
    ],
)
def test_a_bad_code_workers_value_is_a_usage_error(
    pytester: pytest.Pytester, args: list[str], ini: str, message: str
) -> None:
    generated_project(pytester, 1)
    pytester.makeini(f"[pytest]\n{ini}")
    result = pytester.runpytest("--prompt=v", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert result.stderr.lines[0] == message


def test_pytest_is_not_dumpable_while_a_sandbox_runs() -> None:
    """Then a sample of the same user can neither read its environ nor ptrace it."""
    import ctypes

    prctl = ctypes.CDLL(None).prctl
    get_dumpable = 3
    before = prctl(get_dumpable, 0, 0, 0, 0)  # 0 too while another test's sandbox runs
    box = Sandbox()
    box.run(SPEC.job(RETURNS_NONE), Limits())
    assert prctl(get_dumpable, 0, 0, 0, 0) == 0
    box.close()
    assert prctl(get_dumpable, 0, 0, 0, 0) == before


UNSAFE_RUN = """
import ctypes, json, os, sys
from pytest_prompteval.sandbox import server
from pytest_prompteval.sandbox.isolation import Isolation
ctypes.CDLL(None).prctl(server.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
job = json.loads(sys.argv[1])
zygote = server.Zygote(Isolation(), False)
result = server.run_job(job, Isolation(), zygote)
server.clean_up(Isolation(), zygote)
alive = []
judge = server._judge.pid if server._judge else 0  # kept for the next sample
spared = {str(os.getpid()), str(zygote.pid), str(judge)}
for pid in set(filter(str.isdigit, os.listdir("/proc"))) - spared:
    try:
        if sys.argv[2].encode() in open(f"/proc/{pid}/cmdline", "rb").read():
            alive.append(pid)
    except OSError:
        pass
print(json.dumps({"events": result["events"], "alive": alive}))
"""


@pytest.mark.parametrize("unprivileged", [False, True], ids=["as-is", "unprivileged"])
def test_without_isolation_a_samples_escaped_children_are_still_killed(unprivileged: bool) -> None:
    """The opt-in mode without namespaces: the server is a subreaper, so a setsid'd and
    re-exec'd grandchild comes back to it and dies with the sample. Unprivileged, with more
    of the user's processes running than a sample may start (its limit counts them all when
    it has no user of its own), the sample's forks still succeed."""
    seconds = str(60 + int.from_bytes(os.urandom(3), "big") / 1e8)  # names our sleeper
    code = (
        "import os\n"
        "def f():\n"
        "    if os.fork() == 0:\n"
        "        os.setsid()\n"
        "        if os.fork() == 0:\n"
        f"            os.execve('/bin/sleep', ['sleep', '{seconds}'], {{}})\n"
        "        os._exit(0)\n"
    )
    job = {**SPEC.job(code), "limits": asdict(Limits())}
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    python, user = interpreter_for(env, unprivileged)
    # pytest's own temporary folders are root's alone: a folder the user may enter
    workdir = tempfile.mkdtemp()
    os.chmod(workdir, 0o777)
    try:
        with processes_of(user, Limits().processes + 2) if user is not None else nullcontext():
            command = [python, "-c", UNSAFE_RUN, json.dumps(job), seconds]
            report = run_script(command, env, user, cwd=workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    assert {"test": 0, "output": None} in report["events"]
    assert report["alive"] == []


#: A check that names the process running it: the judge (its pid in the server's namespace).
JUDGE_PID = "def check(candidate):\n    import os\n    raise AssertionError(os.getpid())\n"
PLANTS = "import math\nmath.planted = True\ndef f():\n    return hasattr(math, 'planted')\n"
LOOKS = "import math\ndef f():\n    return hasattr(math, 'planted')\n"


def _judge_and_output(box: Sandbox, code: str, limits: Limits | None = None) -> tuple[str, Any]:
    spec = CodeSpec(entry_point="f", tests=(CodeTest("check", JUDGE_PID), CodeTest("args", [])))
    run = box.run(spec.job(code), limits or Limits())
    return str(run.tests[0].get("message")), run.tests.get(1, {}).get("output")


def test_one_judge_serves_sample_after_sample_each_against_a_candidate_of_its_own() -> None:
    """A judge is forked once, not per sample; each sample still gets a candidate process
    of its own (what one sample's code changed, the next does not see); a judge a sample
    ended or timed out, or that imported a module on a candidate's word, judges no more."""
    box = Sandbox()
    try:
        first, planted = _judge_and_output(box, PLANTS)
        second, seen = _judge_and_output(box, LOOKS)
        assert first == second and first.startswith("AssertionError: ")
        assert (planted, seen) == (True, False)
        endless = "def f():\n    while True:\n        pass\n"
        after_timeout, _ = _judge_and_output(box, endless, Limits(timeout=0.3))
        assert after_timeout == first  # it ran the check before the endless call
        fresh, seen = _judge_and_output(box, LOOKS)
        assert fresh != first and seen is False
        importer = "import colorsys\ndef f():\n    return False\n"
        imported, _ = _judge_and_output(box, importer)
        assert imported == fresh
        assert _judge_and_output(box, LOOKS)[0] != fresh
    finally:
        box.close()


@pytest.mark.parametrize(
    ("code", "error_class", "message"),
    [
        ("def f(:\n", "syntax", "SyntaxError: invalid syntax (<candidate>, line 1) (line 1)"),
        ("raise ValueError('no')\n", "runtime", "loading the code: ValueError: no"),
        ("def g():\n    return 1\n", "runtime", "loading the code: the code defines no 'f'"),
        # a lone surrogate (a JSON answer may carry one): no UTF-8 text, so no source
        (
            "s = '\ud800'\n",
            "syntax",
            "SyntaxError: 'utf-8' codec can't encode characters in position 5-7: "
            "surrogates not allowed",
        ),
    ],
)
def test_code_that_never_reaches_its_tests_ends_as_what_it_is_and_keeps_the_judge(
    code: str, error_class: str, message: str
) -> None:
    """The judge says the sample is over when the code does not compile or load (the server
    waits for that word: without it, the sample ran into its wall-clock backstop and read
    as a timeout), and judges the next sample."""
    box = Sandbox()
    try:
        before, _ = _judge_and_output(box, LOOKS)
        spec = CodeSpec(entry_point="f", tests=(CodeTest("assert", "f() == 1"),))
        run = box.run(spec.job(code), Limits(timeout=0.5))
        assert not run.timed_out and run.done == {"done": True}
        metrics = measure(spec, code, run)
        assert (metrics.error_class, metrics.first_failure) == (error_class, message)
        assert _judge_and_output(box, LOOKS)[0] == before
    finally:
        box.close()


@pytest.mark.parametrize(
    "code",
    [
        pytest.param("import colorsys\n", id="defines-no-entry-point"),
        # its own word on what it loaded: a module, then a value that is not one
        pytest.param(
            "import os\n"
            'os.write(4, b\'{"loaded": true, "globals": {"c": {"module": "colorsys"}, '
            '"x": {"bad": 1}}}\\n\')\n'
            "os._exit(0)\n",
            id="malformed-module",
        ),
    ],
)
def test_a_judge_that_imported_a_module_for_code_that_did_not_load_judges_no_more(
    code: str,
) -> None:
    """The last event of a sample that ended before its tests carries the judge's wish to
    retire too: the import may have changed it for the next sample."""
    box = Sandbox()
    try:
        before, _ = _judge_and_output(box, LOOKS)
        spec = CodeSpec(entry_point="f", tests=(CodeTest("assert", "f() == 1"),))
        run = box.run(spec.job(code), Limits())
        load = run.phase("load")
        assert load is not None and load["ok"] is False
        assert run.done == {"done": True, "retire": True}
        assert _judge_and_output(box, LOOKS)[0] != before
    finally:
        box.close()


def test_a_judge_keeps_each_tests_own_lines_across_samples(sandbox: Sandbox) -> None:
    """A judge compiles a test once for the samples that share it; a failure still quotes
    the line of the test that failed, whichever test ran before."""
    checks = [
        f"def check(candidate):\n    assert candidate() == {n}, 'check {n}'\n" for n in (1, 2)
    ]
    code = "def f():\n    return 0\n"
    seen = []
    for check in (*checks, *checks):
        spec = CodeSpec(entry_point="f", tests=(CodeTest("check", check),))
        seen.append(sandbox.run(spec.job(code), Limits()).tests[0]["message"])
    quoted = [f"AssertionError: assert candidate() == {n}, 'check {n}' (check {n})" for n in (1, 2)]
    assert seen == quoted * 2


def test_unseeded_random_numbers_are_the_same_for_every_sample_on_every_server() -> None:
    """A test that draws its inputs unseeded, and code that draws its own: each sample sees
    the same numbers, whichever server runs it and whatever its judge judged before; the
    test's are not the code's."""
    check = "def check(candidate):\n    import random\n    raise AssertionError(random.random())\n"
    spec = CodeSpec(entry_point="f", tests=(CodeTest("check", check), CodeTest("args", [])))
    code = "import random\ndef f():\n    return random.random()\n"
    seen = []
    for _ in range(2):
        box = Sandbox()  # a server of its own: its modules were seeded at random
        try:
            for _ in range(3):
                run = box.run(spec.job(code), Limits())
                seen.append((run.tests[0]["message"], run.tests[1]["output"]))
        finally:
            box.close()
    assert len(set(seen)) == 1
    tests_draw, codes_draw = seen[0]
    assert tests_draw.startswith("AssertionError: ") and repr(codes_draw) not in tests_draw


#: A round trip through the test's own encoder: only code that decodes gets the text back.
ROUND_TRIP = (
    "def check(candidate):\n"
    "    import random, string\n"
    "    for _ in range(20):\n"
    "        size = random.randint(10, 20)\n"
    "        text = ''.join(random.choice(string.ascii_lowercase) for _ in range(size))\n"
    "        assert candidate(text[::-1]) == text\n"
)


@pytest.mark.parametrize(
    "draws",
    [
        pytest.param("import random as r\n", id="seeded-alike"),
        pytest.param("import random\nr = random.Random(0)\n", id="seeded-as-documented"),
    ],
)
def test_code_cannot_draw_a_tests_unseeded_inputs_in_step_with_it(
    sandbox: Sandbox, draws: str
) -> None:
    """Code that never decodes, drawing what the test draws the way the test draws it (its
    source public, HumanEval's say), would return the very text the test drew: the test's
    seed is the run's own, never the code's to know."""
    spec = CodeSpec(entry_point="f", tests=(CodeTest("check", ROUND_TRIP),))
    code = (
        f"{draws}import string\n"
        "def f(encoded):\n"
        "    size = r.randint(10, 20)\n"
        "    return ''.join(r.choice(string.ascii_lowercase) for _ in range(size))\n"
    )
    run = sandbox.run(spec.job(code), Limits())
    assert run.tests[0]["passed"] is False and run.tests[0]["kind"] == "assert"
    decodes = "def f(encoded):\n    return encoded[::-1]\n"
    assert sandbox.run(spec.job(decodes), Limits()).tests[0]["passed"] is True


def test_a_reused_judges_earlier_cpu_time_is_not_the_next_samples() -> None:
    """Each sample's CPU limit counts the judge's time from that sample's start: eight
    samples whose tests take a fair part of the limit in the judge (about 0.12 s of 0.6
    here; together more than the limit) all pass."""
    burns = "def check(candidate):\n    sum(range(8_000_000))\n    assert candidate() == 1\n"
    spec = CodeSpec(entry_point="f", tests=(CodeTest("check", burns),))
    box = Sandbox()
    try:
        runs = [
            box.run(spec.job(f"def f():\n    return 1  # {n}\n"), Limits(0.6)) for n in range(8)
        ]
    finally:
        box.close()
    assert [run.timed_out for run in runs] == [False] * 8
    assert [run.tests[0].get("passed") for run in runs] == [True] * 8


def test_a_judge_that_kept_a_samples_memory_judges_no_more() -> None:
    """Memory a sample's tests kept in the judge (or that its allocator did not give back)
    would leave the next sample less: past half a share, the judge is replaced."""
    keeps = (
        "def check(candidate):\n"
        "    import os, sys\n"
        "    sys.modules['__kept__'] = bytearray(20 << 20)\n"
        "    raise AssertionError(os.getpid())\n"
    )
    spec = CodeSpec(entry_point="f", tests=(CodeTest("check", keeps),))
    limits = Limits(memory_mb=256)  # 32 MiB a process: 20 MiB kept is past half of it
    box = Sandbox()
    try:
        first = box.run(spec.job(RETURNS_NONE), limits).tests[0].get("message")
        second, _ = _judge_and_output(box, LOOKS, limits)
    finally:
        box.close()
    assert str(first).startswith("AssertionError: ") and second != first


def test_the_interpreters_folder_is_not_hidden_with_the_project_holding_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # pytest's script puts its folder (a .venv's bin, in the project) first on the import
    # path; hidden with the project, a repository task's shell found no `python`
    programs = os.path.dirname(sys.executable)
    monkeypatch.setattr(sys, "path", [programs, *sys.path])
    shown, _ = startup.view([os.path.dirname(os.path.dirname(programs))])
    assert programs not in shown.hidden
