"""``check-cases --mutation``: weak tests flagged, equivalent mutants set apart, a case with
no mutants unscored, and ``--json`` that is JSON only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_prompteval.cli import main
from pytest_prompteval.core.cases import load_case_file
from pytest_prompteval.scoring.code.runner import CodeRunner
from pytest_prompteval.scoring.code.spec import parse_code_spec
from pytest_prompteval.scoring.mutation import mutation_test

from .conftest import LoggingPool

MUTATION_CASES = """
cases:
- id: weak_tests
  entry_point: fee
  input: {}
  reference: &fee |
    def fee(amount, rate):
        if amount <= 0:
            return 0
        return amount * rate // 100 + 1
  tests:
  - {args: [100, 0], expected: 1}
- id: strong_tests
  entry_point: fee
  input: {}
  reference: *fee
  tests:
  - {args: [0, 10], expected: 0}
  - {args: [-5, 10], expected: 0}
  - {args: [1, 10], expected: 1}
  - {args: [250, 10], expected: 26}
  - {args: [1000, 7], expected: 71}
  - {args: [40, 50], expected: 21}
- id: clamp_001
  entry_point: clamp
  input: {}
  reference: |
    def clamp(x, low, high):
        if x < low:
            return low
        if x > high:
            return high
        return x
  tests:
  - {args: [5, 0, 10], expected: 5}
  - {args: [-3, 0, 10], expected: 0}
  - {args: [11, 0, 10], expected: 10}
- id: identity
  entry_point: same
  input: {}
  reference: |
    def same(x):
        return x
  tests:
  - {args: [3], expected: 3}
- id: no_reference
  entry_point: same
  input: {}
  tests:
  - {args: [3], expected: 3}
"""


@pytest.fixture
def cases(tmp_path: Path) -> Path:
    directory = tmp_path / "prompt_cases"
    directory.mkdir()
    (directory / "c.yaml").write_text(MUTATION_CASES)
    return directory


def test_mutation_json_is_pure_json_and_sets_equivalent_mutants_apart(
    cases: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["check-cases", "--mutation", "--cases", str(cases), "--json"])
    document = json.loads(capsys.readouterr().out)  # the whole output: nothing before it
    assert code == 1  # the weak case is flagged
    assert (document["cases"], document["code_cases"]) == (5, 5)
    assert document["no_reference"] == ["no_reference"]
    reports = {r["case"]: r for r in document["mutation"]}
    assert reports["strong_tests"]["score"] >= 0.85
    assert reports["weak_tests"]["score"] < 0.6
    # amount < 0 differs from amount <= 0 at 0, a probe input: a real survivor.
    assert any("LtE -> Lt" in s for s in reports["weak_tests"]["survivors"])
    # x <= low returns low where x < low returned x == low: no test could tell them apart.
    clamp = reports["clamp_001"]
    assert "line 2: Lt -> LtE" in clamp["possibly_equivalent"]
    assert "line 4: Gt -> GtE" in clamp["possibly_equivalent"]
    assert clamp["survivors"] == [] and clamp["score"] == 1.0
    assert clamp["killed"] == clamp["mutants"] - len(clamp["possibly_equivalent"])
    # No mutants is no score, not a perfect one.
    assert reports["identity"] == {
        "case": "identity",
        "mutants": 0,
        "killed": 0,
        "score": None,
        "survivors": [],
        "possibly_equivalent": [],
    }


def test_mutation_table_says_no_mutants_and_possibly_equivalent(
    cases: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check-cases", "--mutation", "--cases", str(cases)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[:2] == ["5 cases in 1 files (5 code cases)", "all valid"]
    assert "  no_reference: no reference solution, not mutation-tested" in lines
    identity = next(line.split() for line in lines if line.strip().startswith("identity"))
    assert identity == ["identity", "0", "0", "0", "no", "mutants"]
    assert any(
        line.startswith("clamp_001: 2 possibly equivalent (same answers as the reference")
        for line in lines
    )


def test_check_cases_json_without_mutation(cases: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check-cases", "--cases", str(cases), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"cases": 5, "code_cases": 5}


def test_a_cases_mutants_run_side_by_side(cases: Path) -> None:
    """Every mutant is handed to the sandbox pool before the first is waited for, then
    every survivor's probe."""
    (case,) = [c for c in load_case_file(cases / "c.yaml").cases if c.id == "clamp_001"]
    spec = parse_code_spec(case)
    scorer = CodeRunner()
    scorer.sandbox = pool = LoggingPool()
    try:
        scorer.timeout_for(case, spec)  # the reference's run: one job, waited for
        del pool.log[:]
        report = mutation_test(case, spec, scorer)
    finally:
        scorer.close()
    probed = len(report.survivors) + len(report.possibly_equivalent)
    assert report.mutants > 2 and probed == 2
    rounds = (report.mutants, probed)
    assert pool.log == [event for n in rounds for event in ["submit"] * n + ["wait"] * n]


ASSERT_ONLY_CASES = """
cases:
- id: args_tests
  entry_point: fee
  input: {}
  reference: &fee |
    def fee(amount, rate):
        if amount <= 0:
            return 0
        return amount * rate // 100 + 1
  tests:
  - {args: [100, 0], expected: 1}
- id: assert_tests
  entry_point: fee
  input: {}
  reference: *fee
  tests:
  - {assert: "fee(100, 0) == 1"}
- id: check_tests
  entry_point: fee
  input: {}
  reference: *fee
  tests:
  - check: |
      def check(candidate):
          assert candidate(100, 0) == 1
- id: opaque_check
  entry_point: fee
  input: {}
  reference: *fee
  tests:
  - check: |
      def check(candidate):
          amount = 100
          assert candidate(amount, 0) == 1
"""


def test_assert_and_check_tests_are_probed_and_survivors_never_dropped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Once: survivors [] for a case with only assert or check tests while 3 mutants survived.
    (tmp_path / "c.yaml").write_text(ASSERT_ONLY_CASES)
    main(["check-cases", "--mutation", "--cases", str(tmp_path), "--json"])
    reports = {r.pop("case"): r for r in json.loads(capsys.readouterr().out)["mutation"]}
    # the literal call fee(100, 0) probes as the args test [100, 0] does
    assert reports["assert_tests"] == reports["check_tests"] == reports["args_tests"]
    assert any("LtE -> Lt" in s for s in reports["assert_tests"]["survivors"])
    # no literal call to probe with: every mutant that passed the tests is a survivor
    opaque = reports["opaque_check"]
    assert opaque["possibly_equivalent"] == []
    assert len(opaque["survivors"]) == opaque["mutants"] - opaque["killed"] >= 3
