"""The kinds of test code benchmarks need: programs fed stdin (APPS), unittest modules
(BigCodeBench), assertion lists with setup code (MBPP), io tests compared with the
reference's output within an atol (HumanEval+); each against hostile programs too."""

from __future__ import annotations

import fnmatch
import glob
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_prompteval.core.cases import Case, load_case_file
from pytest_prompteval.core.errors import PromptevalError
from pytest_prompteval.sandbox.provider import NamespaceSandboxes
from pytest_prompteval.scoring.code.measure import Metrics, stdout_matches
from pytest_prompteval.scoring.code.runner import CodeRunner
from pytest_prompteval.scoring.code.spec import parse_code_spec

CASES = """
cases:
- id: sum
  kind: code
  input: {question: "Print the sum of the numbers on the first line."}
  reference: |
    print(sum(map(int, input().split())))
  tests:
  - {stdin: "1 2\\n", stdout: "3\\n"}
  - {stdin: "10 -2 5", stdout: "13"}
- id: mean
  kind: code
  input: {question: "Print the mean of the numbers, one a line after their count."}
  tests:
  - {stdin: "3\\n1\\n2\\n4\\n", stdout: "2.3333333\\n"}
- id: add
  entry_point: add
  input: {}
  reference: "def add(a, b):\\n    return a + b\\n"
  test_setup: "import math\\nTOLERANCE = 1e-9\\n"
  atol: 0.001
  tests:
  - unittest: |
      import unittest

      class Base(unittest.TestCase):
          def setUp(self):
              self.numbers = (1, 2)

          def test_inherited(self):
              self.assertEqual(add(*self.numbers), 3)

      class TestCases(Base):
          def test_floats(self):
              self.assertTrue(math.isclose(add(0.1, 0.2), 0.3, abs_tol=TOLERANCE))

          def test_strings(self):
              self.assertEqual(add("a", "b"), "ab")
  - {assert: "math.isclose(add(1, 1), 2)"}
  - {args: [2, 3]}
  - {args: [0.1, 0.2], expected: 0.3}
  - {args: [[1], [2]], expected_any: [[1, 2], [2, 1]]}
"""


@pytest.fixture(scope="module")
def runner() -> Iterator[CodeRunner]:
    scorer = CodeRunner(sandboxes=NamespaceSandboxes(concurrency=1))
    yield scorer
    scorer.close()


@pytest.fixture
def cases(tmp_path: Path) -> dict[str, Case]:
    path = tmp_path / "c.yaml"
    path.write_text(CASES)
    return {case.id: case for case in load_case_file(path).cases}


def glob_of(message: str) -> str:
    """``message`` as an fnmatch pattern whose only wildcards are its ``*``."""
    return "*".join(glob.escape(part) for part in message.split("*"))


def score(runner: CodeRunner, case: Case, code: str) -> Metrics:
    return runner.score(case, parse_code_spec(case), f"```python\n{code}\n```", "")[1]


@pytest.mark.parametrize(
    "code",
    [
        "print(sum(map(int, input().split())))",
        "import sys\nprint(sum(int(x) for x in sys.stdin.readline().split()))\nexit()",
        "import sys\nprint(sum(map(int, sys.stdin.buffer.read().split())))",
        "print(sum(map(int, open(0).read().split())))",
        "import os\nprint(sum(map(int, os.read(0, 99).split())))",
        "def main():\n    print('  ', sum(map(int, input().split())), '  ')\n\n"
        "if __name__ == '__main__':\n    main()",
        # the first run's open(0), kept in a cycle, must not close the second run's input
        "import gc\ngc.collect()\nf = open(0)\ndef main():\n"
        "    print(sum(map(int, f.read().split())))\nmain()",
    ],
    ids=["input", "readline-exit", "buffer", "open0", "fd0", "main-spaces", "open0-kept"],
)
def test_a_program_reads_its_input_however_it_likes(
    runner: CodeRunner, cases: dict[str, Case], code: str
) -> None:
    m = score(runner, cases["sum"], code)
    assert (m.tests_passed, m.tests_total, m.error_class) == (2, 2, None), m.first_failure


@pytest.mark.parametrize(
    ("code", "error_class", "failure"),
    [
        ("print(sum(map(int, input().split())) + 1)", "logic", "*printed '4\\n', expected '3\\n'"),
        ("while True:\n    pass", "timeout", "no answer within *"),
        ("while True:\n    print('x' * 1000)", "resource_limit", "*printed more than 4,194,304*"),
        ("while True:\n    input()", "runtime", "*EOFError: EOF when reading a line"),
        ("import sys\nwhile True:\n    sys.stdin.read()", "timeout", "no answer within *"),
        ("import sys\nsys.exit(3)", "runtime", "*the program exited with status 3"),
        ("print(1 +)", "syntax", "SyntaxError: *"),
        ("import os\nos._exit(0)", "runtime", "the sample ended before all tests ran"),
    ],
    ids=["wrong", "loop", "flood", "eof", "read-forever", "exit-3", "syntax", "exits"],
)
def test_a_hostile_program_fails_as_what_it_is(
    runner: CodeRunner, cases: dict[str, Case], code: str, error_class: str, failure: str
) -> None:
    m = score(runner, cases["sum"], code)
    assert m.tests_passed == 0 and m.error_class == error_class, m.first_failure
    assert fnmatch.fnmatch(m.first_failure or "", glob_of(failure)), m.first_failure


def test_a_program_is_run_afresh_for_each_input(runner: CodeRunner, cases: dict[str, Case]) -> None:
    """Each test runs the program in a new ``__main__``: a global left by the first run is
    gone in the second."""
    code = "print(sum(map(int, input().split())) + globals().get('seen', 0))\nseen = 100"
    m = score(runner, cases["sum"], code)
    assert (m.tests_passed, m.error_class) == (2, None), m.first_failure


def test_printed_numbers_match_within_tolerance(runner: CodeRunner, cases: dict[str, Case]) -> None:
    mean = "n = int(input())\nprint(sum(float(input()) for _ in range(n)) / n)"
    assert score(runner, cases["mean"], mean).functional
    rounded = "n = int(input())\nprint(round(sum(float(input()) for _ in range(n)) / n, 3))"
    assert not score(runner, cases["mean"], rounded).functional


@pytest.mark.parametrize(
    ("printed", "expected", "matches"),
    [
        ("3\n", "3", True),
        ("  1 2 \n\n\n3\n", "1 2\n3", True),
        ("1  2\n", "1 2", True),  # tokens, whatever spaces between them
        ("0.3333333333\n", "0.333333", True),
        ("0.3334\n", "0.333333", False),
        ("1e3", "1000", True),
        ("yes\n", "YES\n", False),
        ("1 2 3", "1 2", False),
        ("1\n2\n", "1 2", False),
        ("nan", "nan", True),  # the same text
        ("inf", "1e400", True),  # both infinite: the same number
    ],
)
def test_stdout_is_compared_as_apps_compares_it(printed: str, expected: str, matches: bool) -> None:
    assert stdout_matches(printed, expected) is matches


def test_unittest_methods_setup_reference_and_atol(
    runner: CodeRunner, cases: dict[str, Case]
) -> None:
    # the test methods one by one (Base's own too, as unittest's loader finds it), then the
    # assert and the io tests
    right = score(runner, cases["add"], "def add(a, b):\n    return a + b")
    assert (right.tests_passed, right.tests_total, right.error_class) == (8, 8, None), (
        right.first_failure
    )
    # within the case's atol of 0.001 for the io tests, not the unittest's 1e-9; adding a
    # float to lists or strings raises
    near = score(runner, cases["add"], "def add(a, b):\n    return a + b + 0.0001 * (a != 1)")
    assert near.tests_passed == 5 and near.first_failure is not None
    assert near.first_failure.startswith("test 1 (basic): AssertionError: self.assertTrue(")
    numbers = score(runner, cases["add"], "def add(a, b):\n    return a - b")
    assert numbers.tests_passed == 0 and numbers.error_class == "logic"
    assert numbers.first_failure == (
        "test 0 (basic): AssertionError: self.assertEqual(add(*self.numbers), 3) (-1 != 3)"
    )


def test_a_candidate_that_dies_inside_a_test_method_ends_the_sample(
    runner: CodeRunner, cases: dict[str, Case]
) -> None:
    """unittest records every exception of a method as an error: the candidate's end is
    not one more failed test after which the rest run against a dead process."""
    m = score(runner, cases["add"], "import os\ndef add(a, b):\n    os._exit(7)")
    assert m.tests_passed == 0 and m.error_class == "runtime"
    assert m.first_failure == "the sample ended before all tests ran"


def test_a_stdin_test_sees_none_of_the_expected_output_in_the_sandbox() -> None:
    spec_job = parse_code_spec(
        Case(
            "c",
            {},
            Path("c.yaml"),
            1,
            raw={"kind": "code", "tests": [{"stdin": "1\n", "stdout": "SECRET\n"}]},
        )
    ).job("print(1)")
    assert "SECRET" not in str(spec_job) and spec_job["program"] is True


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (
            "kind: code\n  tests: [{stdin: '1'}]",
            "c.yaml:5: case 'c1', field 'tests[0]': expected stdout: the text the program must "
            "print",
        ),
        (
            "kind: code\n  tests: [{stdin: '1', stdot: '2'}]",
            "c.yaml:5: case 'c1', tests[0]: unknown field 'stdot'; did you mean 'stdout'?",
        ),
        (
            "entry_point: f\n  tests: [{stdin: '1', stdout: '1'}, {assert: 'f()'}]",
            "c.yaml:5: case 'c1', field 'tests': expected stdin tests only (a program), or none "
            "(a function's tests)",
        ),
        (
            "kind: code\n  tests: [{assert: 'f()'}]",
            "c.yaml:2: case 'c1', field 'entry_point': expected the name of the function under "
            "test (a program: stdin tests)",
        ),
        (
            "entry_point: f\n  tests: [{unittest: 'import unittest'}]",
            "c.yaml:5: case 'c1', field 'tests[0]': expected unittest: a module defining "
            "unittest.TestCase classes (no test methods found)",
        ),
        (
            "entry_point: f\n  tests: [{unittest: 'class T(TestCase):'}]",
            "*field 'tests[0]': expected unittest: a module defining unittest.TestCase classes "
            "(IndentationError: expected an indented block *",
        ),
        (
            "entry_point: f\n  tests: [{args: [1], expected: 1, expected_any: [1]}]",
            "*field 'tests[0]': expected expected or expected_any, not both",
        ),
        (
            "entry_point: f\n  tests: [{args: [1], expected_any: []}]",
            "*field 'tests[0].expected_any': expected a list of accepted values",
        ),
        (
            "entry_point: f\n  tests: [{args: [1]}]",
            "*field 'tests[0]': expected args: a list of arguments, and expected (or a reference "
            "solution, whose output it must then equal)",
        ),
        (
            "entry_point: f\n  atol: -1\n  tests: [{args: [1], expected: 1}]",
            "c.yaml:5: case 'c1', field 'atol': expected an absolute tolerance, a number >= 0",
        ),
        ("entry_point: f\n  atol: true\n  tests: [{assert: x}]", "*field 'atol': expected *"),
        (
            'entry_point: f\n  tests: [{check: "METADATA = {}\\ndef chek(candidate):\\n  '
            'assert candidate(1)"}]',
            "c.yaml:5: case 'c1', field 'tests[0]': expected check: a def check(candidate), or "
            "statements that test (this source defines neither)",
        ),
        (
            "entry_point: f\n  test_setup: [import math]\n  tests: [{assert: x}]",
            "c.yaml:5: case 'c1', field 'test_setup': expected Python source run before each test",
        ),
    ],
)
def test_a_mistake_in_the_new_kinds_of_test_is_one_line(
    tmp_path: Path, fields: str, message: str
) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(f"cases:\n- id: c1\n  input: {{}}\n  {fields}\n")
    (case,) = load_case_file(path).cases
    with pytest.raises(PromptevalError) as excinfo:
        parse_code_spec(case)
    text = str(excinfo.value)
    assert "\n" not in text and fnmatch.fnmatch(text, glob_of(f"*{message}")), text


def test_a_program_case_without_kind_is_still_a_code_case(pytester: pytest.Pytester) -> None:
    """A program has no entry point: its tests alone make it a code case, never a text case
    whose tests are ignored."""
    pytester.mkdir("prompts").joinpath("v.yaml").write_text(
        "system_prompt: 'Write the program.'\nuser_prompt: 'Sum the numbers.'\n"
    )
    pytester.mkdir("prompt_cases").joinpath("p.yaml").write_text(
        "cases:\n- id: p\n  input: {}\n  tests: [{stdin: '1 2', stdout: '3'}]\n"
    )
    pytester.makepyfile(
        app="def answer(request, *, case, prompt, sample):\n"
        "    return '```python\\nprint(sum(map(int, input().split())) + 1)\\n```'\n"
    )
    pytester.makeini("[pytest]\npythonpath = .\n")
    result = pytester.runpytest("--prompt=v", "--prompteval-provider=python:app:answer")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*v: code failures: logic 1*"])
