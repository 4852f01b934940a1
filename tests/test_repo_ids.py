"""Every test a repository case lists must exist in its repository: checked at collection
(test patch applied), before any model call, one line per missing id at its entry."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_prompteval.testing import AnthropicServer, ScriptedAgent

from .conftest import prompteval
from .test_repo_environments import PROMPT

TEST_PATCH = """\
--- /dev/null
+++ b/tests/test_new.py
@@ -0,0 +1,2 @@
+def test_added():
+    pass
"""


def project(top: Path, cases: str) -> None:
    repo = top / "repos" / "m" / "tests"
    repo.mkdir(parents=True)
    (repo / "test_m.py").write_text(
        "import pytest\n\n\ndef test_fixed():\n    pass\n\n\ndef test_kept():\n    pass\n\n\n"
        "@pytest.mark.parametrize('x', ['a b', 'c'])\ndef test_params(x):\n    pass\n"
    )
    (top / "prompts").mkdir()
    (top / "prompts" / "fixer.yaml").write_text(PROMPT)
    (top / "prompt_cases").mkdir()
    (top / "prompt_cases" / "repo.yaml").write_text("cases:\n" + cases)
    (top / "tests.diff").write_text(TEST_PATCH)


CASE = """\
- id: m
  kind: repo
  repo: ../repos/m
  input: {issue: "LOOK"}
  test_patch: ../tests.diff
  fail_to_pass:
    - tests/test_new.py::test_added
    - tests/test_m.py::test_fixd
  pass_to_pass: [tests/test_m.py::test_kept, "tests/test_m.py::test_params[a"]
"""


def test_a_misspelt_test_id_is_refused_at_its_entry_before_any_call(
    pytester: pytest.Pytester, anthropic_server: AnthropicServer
) -> None:
    anthropic_server.responder = ScriptedAgent({"LOOK": [["Nothing to fix."]]})
    project(pytester.path, CASE)
    result = pytester.runpytest("--prompt=fixer")
    result.assert_outcomes(errors=1)
    # the test patch's own test exists; a SWE-bench id cut at the space in its brackets too
    result.stdout.fnmatch_lines(
        [
            "prompt_cases/repo.yaml:9: case 'm': fail_to_pass: no test "
            "'tests/test_m.py::test_fixd' in the repository; did you mean "
            "'tests/test_m.py::test_fixed'?"
        ]
    )
    assert "test_added" not in result.stdout.str()
    assert "Traceback" not in result.stdout.str()
    assert anthropic_server.requests == []
    # check-cases says the same, with no reference patch to validate against
    checked = prompteval(pytester.path, "check-cases")
    assert checked.returncode == 2
    assert "repo.yaml:9: case 'm': fail_to_pass: no test 'tests/test_m.py::test_fixd'" in (
        checked.stderr
    )

    # fixed, the case runs
    case_file = pytester.path / "prompt_cases" / "repo.yaml"
    fixed = case_file.read_text().replace("test_fixd", "test_fixed")
    case_file.write_text(fixed.replace(', "tests/test_m.py::test_params[a"', ""))
    pytester.runpytest("--prompt=fixer").assert_outcomes(passed=1)


def test_a_repository_whose_tests_cannot_be_collected_is_named_with_pytests_words(
    pytester: pytest.Pytester, anthropic_server: AnthropicServer
) -> None:
    project(pytester.path, CASE.replace("test_fixd", "test_fixed"))
    (pytester.path / "repos" / "m" / "conftest.py").write_text("import no_such_module\n")
    result = pytester.runpytest("--prompt=fixer")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "prompt_cases/repo.yaml:4: case 'm': collecting the repository's tests failed "
            "(exit status *): *No module named 'no_such_module'*"
        ]
    )
    assert anthropic_server.requests == []


def test_thousands_of_listed_ids_are_checked_in_full(
    pytester: pytest.Pytester, anthropic_server: AnthropicServer
) -> None:
    """3,000 collected ids of 80 characters: more than a command's output keeps."""
    project(pytester.path, "")
    (pytester.path / "repos" / "m" / "tests" / "test_many.py").write_text(
        "import pytest\n\n\n@pytest.mark.parametrize('n', range(3000), "
        "ids=[f'case-{n:05d}-{\"x\" * 50}' for n in range(3000)])\ndef test_many(n):\n    pass\n"
    )
    ids = [f"tests/test_many.py::test_many[case-{n:05d}-{'x' * 50}]" for n in range(2500)]
    ids[-1] = ids[-1].replace("case-", "cse-")
    listed = "".join(f"    - {i}\n" for i in ids)
    cases = (
        '- id: many\n  kind: repo\n  repo: ../repos/m\n  input: {issue: "LOOK"}\n'
        f"  pass_to_pass:\n{listed}"
    )
    (pytester.path / "prompt_cases" / "repo.yaml").write_text("cases:\n" + cases)
    result = pytester.runpytest("--prompt=fixer")
    result.assert_outcomes(errors=1)
    # only the misspelt one, at its own line (the file's 2,505th)
    result.stdout.fnmatch_lines(
        ["prompt_cases/repo.yaml:2506: case 'many': pass_to_pass: no test *cse-02499-*"]
    )
    assert result.stdout.str().count("no test") == 1
    assert anthropic_server.requests == []
