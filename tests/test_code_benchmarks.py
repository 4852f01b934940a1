"""``prompteval import mbpp|humanevalplus|apps|bigcodebench``: each benchmark's own file
becomes code cases that run offline through the whole plugin, a correct answer passing and
a wrong one failing; a file with a mistake is one line per task and nothing written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_prompteval.cli import main

from .conftest import item_results, prompteval

SAMPLES = Path(__file__).parent / "data" / "benchmarks"
EXAMPLES = Path(__file__).parents[1] / "examples"
#: The example prompt version of each benchmark: its placeholders must render every case.
PROMPTS = {
    "mbpp": EXAMPLES / "benchmarks" / "mbpp.yaml",
    "humanevalplus": EXAMPLES / "humaneval" / "complete.yaml",
    "apps": EXAMPLES / "benchmarks" / "apps.yaml",
    "bigcodebench": EXAMPLES / "benchmarks" / "bigcodebench.yaml",
}

#: A wrong answer per case (the right one is the case's reference), and what each fails as.
WRONG = {
    "mbpp_2": ("def similar_elements(a, b):\n    return tuple(set(a) | set(b))", "logic"),
    "mbpp_3": ("def is_not_prime(n):\n    return n % 2 == 0", "logic"),
    # passes MBPP's three asserts, fails the challenge ones
    "mbpp_11": ("def remove_Occ(s, ch):\n    return s.replace(ch, '')", "edge_case"),
    # passes the asserts (they compare sets), fails MBPP+'s exact results
    "mbppplus_2": (
        "def similar_elements(a, b):\n    return tuple(sorted(set(a) & set(b), reverse=True))",
        "edge_case",
    ),
    # within the asserts' rel_tol=0.001, not MBPP+'s atol
    "mbppplus_139": ("def circle_circumference(r):\n    return 6.28 * r", "edge_case"),
    "HumanEval_0": ("def has_close_elements(numbers, threshold):\n    return False", "logic"),
    "HumanEval_2": ("def truncate_number(number):\n    return round(number % 1.0, 2)", "logic"),
    "apps_4001": ("print(sum(map(int, input().split())) + 1)", "logic"),
    "apps_4002": (
        "n = int(input())\nxs = [float(input()) for _ in range(n)]\n"
        "print(round(sum(xs) / n, 2))\nprint(int(max(xs)))",
        "logic",
    ),
    "apps_4003": ("def double_all(values):\n    return [2 * v for v in values], 0", "logic"),
    "apps_4004": (
        "class Solution:\n    def maxProfit(self, prices):\n"
        "        return max(prices) - min(prices)",
        "logic",
    ),
    "BigCodeBench_9001": (
        "import collections\ndef task_func(text):\n"
        "    return collections.Counter(text.split()).most_common(3)",
        "logic",
    ),
    "BigCodeBench_9002": ("def task_func(path, data):\n    return len(str(data))", "logic"),
}

APP = """
import json, pathlib
WRONG = json.loads(pathlib.Path(__file__).with_name("wrong.json").read_text())

def answer(request, *, case, prompt, sample):
    code = case.raw["reference"] if prompt.version == "right" else WRONG[case.id][0]
    return "```python\\n" + code + "\\n```"
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    prompts = pytester.mkdir("prompts")
    for version in ("right", "wrong"):
        prompts.joinpath(f"{version}.yaml").write_text(
            f"system_prompt: 'Solve the task ({version}).'\nuser_prompt: 'Here it is.'\n"
        )
    pytester.path.joinpath("wrong.json").write_text(json.dumps(WRONG))
    pytester.makepyfile(benchapp=APP)
    pytester.makeini("[pytest]\npythonpath = .\n")
    return pytester


def use_example_prompt(project: pytest.Pytester, benchmark: str) -> None:
    """The right and wrong versions are the benchmark's example prompt version, their
    requests told apart (the same request would replay the other's recorded answer)."""
    example = PROMPTS[benchmark].read_text()
    assert "system_prompt: |\n" in example
    for version in ("right", "wrong"):
        text = example.replace("system_prompt: |\n", f"system_prompt: |\n  ({version})\n", 1)
        project.path.joinpath("prompts", f"{version}.yaml").write_text(text)


@pytest.mark.parametrize(
    ("benchmark", "sample", "count"),
    [
        ("mbpp", "mbpp.jsonl", 3),
        ("mbpp", "mbpp_plus.jsonl", 2),
        ("humanevalplus", "HumanEvalPlus.jsonl", 2),
        ("apps", "apps.jsonl", 4),
        ("bigcodebench", "bigcodebench.jsonl", 2),
    ],
)
def test_a_benchmark_file_imports_and_runs_offline_right_passing_wrong_failing(
    project: pytest.Pytester,
    capsys: pytest.CaptureFixture[str],
    benchmark: str,
    sample: str,
    count: int,
) -> None:
    use_example_prompt(project, benchmark)
    out = project.path / "prompt_cases"
    assert main(["import", benchmark, str(SAMPLES / sample), "--out", str(out)]) == 0
    written = f"prompt_cases/{Path(sample).stem}.yaml"  # pytester's folder is the cwd
    assert capsys.readouterr().out.splitlines() == [f"wrote {count} cases to {written}"]
    reprec = project.inline_run(
        "--prompt=right",
        "--compare=wrong",
        "--prompteval-provider=python:benchapp:answer",
        "--prompteval-results=none",
    )
    reprec.assertoutcome(passed=count, failed=count)
    results: dict[tuple[str, str], dict[str, Any]] = {
        (r["case_id"], r["prompt"]): r for r in item_results(reprec)
    }
    for (case_id, version), result in results.items():
        if version == "right":
            assert result["error_class"] is None, (case_id, result["first_failure"])
            assert result["dimensions"]["functional_correctness"] == 1.0
            assert result["dimensions"]["test_pass_rate"] == 1.0
        else:
            assert result["error_class"] == WRONG[case_id][1], (case_id, result["first_failure"])
            assert result["dimensions"]["functional_correctness"] == 0.0


def test_each_test_method_and_plus_input_counts_as_a_test(
    project: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    """The test pass rate counts BigCodeBench's test methods one by one, and HumanEval+'s
    plus inputs beside HumanEval's check."""
    out = str(project.path / "prompt_cases")
    for benchmark, sample in (("bigcodebench", "bigcodebench"), ("humanevalplus", "HumanEvalPlus")):
        assert main(["import", benchmark, str(SAMPLES / f"{sample}.jsonl"), "--out", out]) == 0
    reprec = project.inline_run(
        "--prompt=wrong",
        "--prompteval-provider=python:benchapp:answer",
        "--prompteval-results=none",
    )
    results = {r["case_id"]: r for r in item_results(reprec)}
    counting = results["BigCodeBench_9001"]
    assert (counting["tests_passed"], counting["tests_total"]) == (3, 4)
    assert counting["first_failure"].startswith("test 0 (basic): AssertionError: ")
    assert "self.assertEqual(task_func(" in counting["first_failure"]
    # rounds to 2 places: fails the check, and the plus inputs 999.99999 and 1e-05 (atol 1e-6)
    truncate = results["HumanEval_2"]
    assert (truncate["tests_passed"], truncate["tests_total"]) == (3, 6)


@pytest.mark.parametrize(
    ("benchmark", "lines", "errors"),
    [
        (
            "mbpp",
            [
                '{"task_id": 1, "text": "t", "code": "def f(): pass", "test_list": []}',
                "not json",
                '{"task_id": 2, "text": "t", "code": "def f(): pass", "test_list": ["x = 1"]}',
            ],
            [
                "mbpp.jsonl:1: task 1: field 'test_list': expected a list of assert statements",
                "mbpp.jsonl:2: not JSON: Expecting value (column 1)",
                "mbpp.jsonl:3: task 2: test_list[0] calls no function: the entry point is not "
                "known",
            ],
        ),
        (
            "apps",
            [
                '{"problem_id": 5, "question": "q", "input_output": "{\\"inputs\\": [\\"1\\"]"}',
                '{"problem_id": 6, "question": "q", "input_output": '
                '"{\\"inputs\\": [\\"1\\"], \\"outputs\\": []}"}',
            ],
            [
                "apps.jsonl:1: task 5: field 'input_output': not JSON text (Expecting ',' "
                "delimiter: line 1 column 17 (char 16))",
                "apps.jsonl:2: task 6: field 'input_output': expected as many outputs as inputs, "
                "at least one",
            ],
        ),
        (
            "bigcodebench",
            [
                '{"task_id": "B/1", "entry_point": "task_func", "complete_prompt": "", '
                '"instruct_prompt": "", "test": "import unittest\\nclass T: pass\\n"}',
                '["a list"]',
            ],
            [
                "bigcodebench.jsonl:1: task 'B/1': field 'test': expected a unittest module (no "
                "test methods found)",
                "bigcodebench.jsonl:2: expected a JSON object (a task)",
            ],
        ),
        (
            "humanevalplus",
            ['{"task_id": "H/1", "prompt": "def f(x):\\n", "entry_point": "f"}'],
            ["HumanEvalPlus.jsonl:1: task 'H/1': no 'canonical_solution'"],
        ),
    ],
)
def test_a_file_with_mistakes_is_one_line_per_task_and_nothing_written(
    tmp_path: Path, benchmark: str, lines: list[str], errors: list[str]
) -> None:
    name = {"humanevalplus": "HumanEvalPlus"}.get(benchmark, benchmark)
    (tmp_path / f"{name}.jsonl").write_text("\n".join(lines) + "\n")
    done = prompteval(tmp_path, "import", benchmark, f"{name}.jsonl")
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        *(f"prompteval: error: {e}" for e in errors),
        f"prompteval: {len(errors)} problem(s) found",
    ]
    assert not (tmp_path / "prompt_cases").exists()


def test_import_of_a_code_benchmark_needs_its_file(tmp_path: Path) -> None:
    done = prompteval(tmp_path, "import", "apps")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == "prompteval: error: import apps needs FILE: the benchmark's own file\n"


def test_a_hostile_file_is_one_line_per_task_not_a_traceback(tmp_path: Path) -> None:
    """Nesting past what JSON's reader or YAML's writer recurse through, and an id that
    would not load, are named like any other mistake."""
    deep: Any = [1]
    for _ in range(400):
        deep = [deep]
    lines = [
        json.dumps(
            {
                "task_id": "H/9",
                "prompt": "def f(x):\n",
                "entry_point": "f",
                "canonical_solution": "    return x\n",
                "plus_input": [[deep]],
            }
        ),
        '{"task_id": ' + "[" * 100_000 + "]" * 100_000 + "}",
        json.dumps(
            {
                "task_id": "a b",
                "prompt": "def f(x):\n",
                "entry_point": "f",
                "canonical_solution": "    return x\n",
                "plus_input": [[1]],
            }
        ),
    ]
    (tmp_path / "HumanEvalPlus.jsonl").write_text("\n".join(lines) + "\n")
    done = prompteval(tmp_path, "import", "humanevalplus", "HumanEvalPlus.jsonl")
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "prompteval: error: HumanEvalPlus.jsonl:1: task 'H/9': values nested more than 100 deep",
        "prompteval: error: HumanEvalPlus.jsonl:2: values nested too deeply to read",
        "prompteval: error: HumanEvalPlus.jsonl:3: task 'a b': its id 'a b' is not a name of "
        "letters, digits and _ . + -",
        "prompteval: 3 problem(s) found",
    ]


def test_the_new_kinds_of_test_run_the_same_on_xdist_workers(
    project: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    out = str(project.path / "prompt_cases")
    for benchmark, sample in (
        ("apps", "apps"),
        ("bigcodebench", "bigcodebench"),
        ("mbpp", "mbpp_plus"),
    ):
        assert main(["import", benchmark, str(SAMPLES / f"{sample}.jsonl"), "--out", out]) == 0
    result = project.runpytest(
        "--prompt=right",
        "--compare=wrong",
        "--prompteval-provider=python:benchapp:answer",
        "--prompteval-results=none",
        "-n",
        "2",
    )
    result.assert_outcomes(passed=8, failed=8)
    result.stdout.fnmatch_lines(["wrong: code failures: logic 6, edge_case 2 *"])
