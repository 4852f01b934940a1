"""Every assertion type passing and failing, custom scorers, and assertion errors."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_prompteval.testing import AnthropicServer, tool_use

from .conftest import item_results

APP = """
from pytest_prompteval import Response

def answer(request, *, case, prompt, sample):
    return Response(text=case.raw["answer"], model="claude-haiku-4-5",
                    output_tokens=case.raw.get("tokens", 10),
                    input_tokens=case.raw.get("input_tokens", 10),
                    latency_ms=case.raw.get("latency", 5.0))
"""

SCHEMA = "{type: object, required: [name], properties: {name: {type: string}}}"
TICKET = '{\\"priority\\": \\"urgent\\", \\"labels\\": [\\"billing\\"], \\"score\\": 0.82}'
FENCED_TICKET = "Here:\\n```json\\n" + TICKET + "\\n```"
# (assertion, answer, passes)
CHECKS: list[tuple[str, str, bool]] = [
    ("{type: contains, value: loop}", "a loop here", True),
    ("{type: contains, value: loop}", "nothing", False),
    ("{not_contains: TODO}", "done", True),
    ("{not_contains: TODO}", "TODO later", False),
    ("{icontains: LOOP}", "a Loop", True),
    ("{icontains: LOOP}", "a lap", False),
    ("{regex: 'r[a-d]x'}", "uses rax", True),
    ("{regex: 'r[a-d]x'}", "uses rsi", False),
    ("{not_regex: '(?i)always'}", "usually", True),
    ("{not_regex: '(?i)always'}", "Always", False),
    ("{equals: 'forty two'}", "  forty two\\n", True),
    ("{not_equals: 'forty two'}", "forty-two", True),
    ("{not_equals: 'forty two'}", "forty two", False),
    ("{not_icontains: SORRY}", "glad to", True),
    ("{not_icontains: SORRY}", "I am Sorry", False),
    ("{starts_with: Sure}", "  Sure, it is", True),
    ("{starts_with: Sure}", "Well, sure", False),
    ("{not_starts_with: Sure}", "Well, sure", True),
    ("{not_starts_with: Sure}", "Sure.", False),
    ("{contains_any: [fire, flame]}", "a flame", True),
    ("{contains_any: [fire, flame]}", "a Fire", False),
    ("{icontains_any: [fire, flame]}", "a Fire", True),
    ("{icontains_any: [fire, flame]}", "water", False),
    ("{contains_all: [red, blue]}", "red and blue", True),
    ("{contains_all: [red, blue]}", "red and Blue", False),
    ("{icontains_all: [red, blue]}", "Red and BLUE", True),
    ("{icontains_all: [red, blue]}", "red only", False),
    ("{not_contains_any: [fire, flame]}", "water", True),
    ("{not_contains_any: [fire, flame]}", "fire", False),
    ("{not_contains_all: [red, blue]}", "red only", True),
    ("{not_contains_all: [red, blue]}", "red, blue", False),
    ("{not_regex: 'r[a-d]x'}", "uses rsi", True),
    ("{equals: 'forty two'}", "forty-two", False),
    ("{type: is_json}", '{\\"a\\": 1}', True),
    ("{type: is_json}", "```json\\n[1, 2]\\n```", True),
    ("{type: is_json}", "{a: 1", False),
    ("{type: not_is_json}", "{a: 1", True),
    ("{type: not_is_json}", "[1]", False),
    ("{type: contains_json}", 'Sure: {\\"a\\": [1]} done', True),
    ("{type: contains_json}", "{a: 1} [oops", False),
    (f"{{contains_json: {SCHEMA}}}", 'x {\\"id\\": 1} y {\\"name\\": \\"n\\"}', True),
    (f"{{contains_json: {SCHEMA}}}", 'x {\\"name\\": 2}', False),
    ("{type: not_contains_json}", "no data", True),
    ("{type: not_contains_json}", "data: [1, 2]", False),
    (f"{{json_schema: {SCHEMA}}}", '{\\"name\\": \\"x\\"}', True),
    (f"{{json_schema: {SCHEMA}}}", '{\\"name\\": 3}', False),
    ("{json_field: {path: priority, equals: urgent}}", TICKET, True),
    ("{json_field: {path: priority, equals: urgent}}", FENCED_TICKET, True),
    ("{json_field: {path: /priority, equals: low}}", TICKET, False),
    ("{json_field: {path: labels.0, in: [billing, refund]}}", TICKET, True),
    ("{json_field: {path: /labels/0, in: [refund, other]}}", TICKET, False),
    ("{json_field: {path: labels.1, in: [billing]}}", TICKET, False),
    ("{json_field: {path: priority, matches: '^urg'}}", TICKET, True),
    ("{json_field: {path: score, matches: '0'}}", TICKET, False),
    ("{json_field: {path: score, approx: 0.8, tolerance: 0.05}}", TICKET, True),
    ("{json_field: {path: score, approx: 0.8}}", TICKET, False),
    ("{json_field: {path: priority, equals: urgent}}", "urgent", False),
    ("{max_length: 5}", "12345", True),
    ("{max_length: 5}", "123456", False),
    ("{min_length: 3}", "abc", True),
    ("{min_length: 3}", "ab", False),
    ("{max_tokens: 10}", "short", True),
    ("{max_tokens: 9}", "short", False),
    ("{max_latency_ms: 100}", "fast", True),
    ("{max_latency_ms: 1}", "slow", False),
    ("{max_cost_usd: 0.001}", "cheap", True),
    ("{max_cost_usd: 0.00001}", "dear", False),
    (
        "{type: topics, value: [loop_optimization, vectorization]}",
        "loop optimization and SIMD vectorization",
        True,
    ),
    ("{type: topics, value: [loop_optimization, vectorization]}", "loop optimization", False),
    (
        "{type: topics, value: [loop_optimization, vectorization], threshold: 0.5}",
        "loop optimization",
        True,
    ),
    ("{type: length_ok, threshold: 0.5}", "just right", True),
    ("{type: length_ok, threshold: 0.5}", "far too long for the custom scorer", False),
    ("{type: dims, weight: 2}", "anything", True),
]

CONFTEST = """
import pytest_prompteval
from pytest_prompteval import Score

@pytest_prompteval.scorer("length_ok")
def length_ok(case, request, response):
    return 1.0 if len(response.text) <= 12 else 0.2

@pytest_prompteval.scorer("dims")
def dims(case, request, response):
    return Score(value=0.9, dimensions={"tone": 0.8, "format": 1.0})
"""


def case_yaml(index: int, assertion: str, answer: str, passes: bool) -> str:
    return (
        f'- id: c{index:02d}\n  answer: "{answer}"\n  expect: {str(passes).lower()}\n'
        f"  threshold: 0\n  input: {{n: {index}}}\n  assert:\n  - {assertion}\n"
    )


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.mkdir("prompts").joinpath("v.yaml").write_text("user_prompt: x\n")
    pytester.makepyfile(myapp=APP)
    pytester.makeconftest(CONFTEST)
    # the fake model reads a case's answer and expectation: fields this project declares
    pytester.makeini("[pytest]\npythonpath = .\nprompteval_case_fields = answer expect\n")
    return pytester


def test_every_assertion_type_passes_and_fails(
    project: pytest.Pytester, xdist_args: list[str]
) -> None:
    cases = "cases:\n" + "".join(case_yaml(i, *check) for i, check in enumerate(CHECKS))
    project.mkdir("prompt_cases").joinpath("c.yaml").write_text(cases)
    result = project.runpytest(
        "--prompt=v", "--prompteval-provider=python:myapp:answer", "-rA", *xdist_args
    )
    outcomes = {}
    for line in result.outlines:
        for word in ("PASSED", "FAILED"):
            if line.startswith(word + " prompt_cases/c.yaml::"):
                outcomes[line.split("::")[1].split("[")[0]] = word == "PASSED"
    expected = {f"c{i:02d}": passes for i, (_, _, passes) in enumerate(CHECKS)}
    assert outcomes == expected
    result.stdout.fnmatch_lines(["*failed assert contains: expected: contains 'loop'*"])
    result.stdout.fnmatch_lines(["*failed assert max_cost_usd: expected: cost $0.0000* <= $1e-05"])
    for line in (  # in any order: xdist reports as the workers finish
        '*failed assert json_schema: schema: name: expected type "string", got 3',
        '*failed assert json_field: priority: expected "low", got "urgent"',
        '*failed assert json_field: labels.0: expected one of [[]"refund", "other"[]], got '
        '"billing"',
        "*failed assert json_field: labels.1: missing: labels has 1 items, no [[]1[]]",
        "*failed assert json_field: score: expected a string matching /0/, got 0.82",
        "*failed assert json_field: score: expected 0.8 ± 1e-6 relative, got 0.82",
        "*failed assert json_field: not JSON: *",
        "*failed assert not_starts_with: expected: does not start with 'Sure'",
        '*failed assert icontains_all: expected: contains all of [[]"red", "blue"[]] (any case)',
        '*failed assert contains_json: schema: name: expected type "string", got 2',
        "*failed assert not_is_json: expected: is not JSON",
    ):
        result.stdout.fnmatch_lines([line])


def test_assertion_results_and_weighted_score(project: pytest.Pytester) -> None:
    """With expected topics the automatic scorer weighs 1 beside the assertions; a case that
    gives only assertions is scored by them alone."""
    project.mkdir("prompt_cases").joinpath("c.yaml").write_text(
        "cases:\n- id: c1\n  answer: 'a loop'\n  input: {}\n  threshold: 0\n  assert:\n"
        "  - {contains: loop, weight: 3}\n  - {type: dims, weight: 2}\n"
        "  expected_topics: [loop]\n"
        "- id: c2\n  answer: 'a loop'\n  input: {}\n  threshold: 0\n  assert:\n"
        "  - {contains: loop, weight: 3}\n  - {type: dims, weight: 2}\n"
    )
    reprec = project.inline_run("--prompt=v", "--prompteval-provider=python:myapp:answer")
    with_topics, alone = item_results(reprec)
    assert [(a["type"], a["passed"], a["score"], a["weight"]) for a in alone["assertions"]] == [
        ("contains", True, 1.0, 3.0),
        ("dims", True, 0.9, 2.0),
    ]
    assert "tone 0.80 format 1.00" in alone["assertions"][1]["reason"]
    main = with_topics["main_score"]
    assert with_topics["scorer"] == "automatic" and with_topics["dimensions"]
    assert with_topics["score"] == pytest.approx((main + 3 * 1.0 + 2 * 0.9) / 6, abs=1e-6)
    assert (alone["scorer"], alone["dimensions"], alone["automatic_score"]) == (
        "assertions",
        {},
        None,
    )
    assert alone["score"] == alone["main_score"] == pytest.approx((3 * 1.0 + 2 * 0.9) / 5)


def test_prompt_level_assertions_apply_to_every_case(project: pytest.Pytester) -> None:
    project.path.joinpath("prompts", "v.yaml").write_text(
        "user_prompt: x\nassert:\n- {not_contains: sorry}\n"
    )
    project.mkdir("prompt_cases").joinpath("c.yaml").write_text(
        "cases:\n- id: ok\n  answer: fine\n  threshold: 0\n  input: {n: 1}\n"
        "- id: apologetic\n  answer: I am sorry\n  threshold: 0\n  input: {n: 2}\n"
    )
    result = project.runpytest("--prompt=v", "--prompteval-provider=python:myapp:answer")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*failed assert not_contains: expected: does not contain 'sorry'"])


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (
            "{type: lenght_ok}",
            "*c.yaml:5: case 'c1', assert[[]0[]]: unknown assertion or scorer "
            "'lenght_ok'; did you mean 'length_ok'?; known: baseline, contains, contains_all, *, "
            "dims, equals, *, "
            "length_ok, *",
        ),
        ("{regex: '('}", "*assert[[]0[]]: regex: invalid regular expression: *"),
        ("{max_length: many}", "*assert[[]0[]]: max_length: expected a number >= 0"),
        ("{contains_any: fire}", "*assert[[]0[]]: contains_any: expected a non-empty list of *"),
        ("{not_icontains_all: []}", "*not_icontains_all: expected a non-empty list of non-*"),
        ("{not_starts_with: ''}", "*assert[[]0[]]: not_starts_with: expected a non-empty str*"),
        ("{not_regex: '(?=x)'}", "*assert[[]0[]]: not_regex: invalid regular expression: *"),
        ("{contains_json: {type: 12}}", "*assert[[]0[]]: contains_json: invalid schema: *"),
        ("{not_topics: [a]}", "*unknown assertion or scorer 'not_topics'; did you mean 'topics'?*"),
        ("{json_schema: {type: 12}}", "*assert[[]0[]]: json_schema: invalid schema: *"),
        ("{contains: x, wieght: 2}", "*assert[[]0[]]: unknown option(s) wieght; allowed: *"),
        (
            "{json_field: {path: priority, equal: urgent}}",
            "*c.yaml:5: case 'c1', assert[[]0[]]: json_field: unknown key 'equal'; did you mean "
            "'equals'?; allowed: path, equals, in, matches, approx, tolerance",
        ),
        (
            "{json_field: {path: priority, equals: a, in: [b]}}",
            "*assert[[]0[]]: json_field: give exactly one of equals, in, matches, approx",
        ),
        ("{json_field: {path: 'a..b', equals: x}}", "*json_field: path 'a..b': an empty key; *"),
        ("{json_field: {path: a, matches: '('}}", "*json_field: matches: invalid regular exp*"),
        ("{json_field: {path: a, approx: high}}", "*json_field: approx: expected a number"),
        (
            "{json_field: {path: a, equals: x, tolerance: 1}}",
            "*json_field: tolerance: expected a number >= 0, beside approx",
        ),
        (
            "{json_field: {path: day, equals: 2024-01-01}}",
            "*json_field: equals: datetime.date(2024, 1, 1) is no JSON value (quote a date *",
        ),
        (
            "{file_matches: {path: m.py, regx: 'x'}}",
            "*c.yaml:5: case 'c1', assert[[]0[]]: file_matches: unknown key 'regx'; did you "
            "mean 'regex'?; allowed: path, regex",
        ),
        ("{file_matches: {path: m.py, regex: '(?=x)'}}", "*file_matches: regex: invalid reg*"),
        (
            "{file_exists: '../etc/passwd'}",
            "*assert[[]0[]]: file_exists: expected a glob's path within the repository "
            "(relative, no '..'), got '../etc/passwd'",
        ),
        ("{file_unchanged: 'src/*.py'}", "*file_unchanged: expected a file's path * no wildcard*"),
        (
            "{file_exists: src/x.py}",
            "*c.yaml:4: case 'c1': assertion file_exists needs a repository case (kind: repo)*",
        ),
    ],
    ids=[
        "typo",
        "regex",
        "limit",
        "list-not-list",
        "list-empty",
        "negated-empty",
        "negated-regex",
        "contains-json-schema",
        "not-of-a-scored-type",
        "schema",
        "option",
        "field-key",
        "field-two-checks",
        "field-path",
        "field-regex",
        "field-approx",
        "field-tolerance",
        "field-date",
        "file-key",
        "file-regex",
        "file-outside",
        "file-wildcard",
        "file-not-repo",
    ],
)
def test_bad_assertions_are_collection_errors(
    project: pytest.Pytester, entry: str, message: str
) -> None:
    project.mkdir("prompt_cases").joinpath("c.yaml").write_text(
        f"cases:\n- id: c1\n  input: {{}}\n  assert:\n  - {entry}\n"
    )
    result = project.runpytest("--prompt=v")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines([message])
    assert "Traceback" not in result.stdout.str()


def test_judge_assertion_asks_the_question(
    project: pytest.Pytester, anthropic_server: AnthropicServer
) -> None:
    def respond(request: dict[str, Any]) -> Any:
        if "tools" not in request:
            return "It is a haiku about loops."
        polite = "polite" in request["system"]
        return tool_use(request, {"score": 90 if polite else 20, "reason": "as asked"})

    anthropic_server.responder = respond
    project.mkdir("prompt_cases").joinpath("c.yaml").write_text(
        "cases:\n- id: c1\n  threshold: 0\n  input: {n: 1}\n  assert:\n"
        "  - {judge: 'Is the answer polite?'}\n"
        "- id: c2\n  threshold: 0\n  input: {n: 2}\n  assert:\n"
        "  - {judge: 'Is it a sonnet?', threshold: 0.5}\n"
    )
    result = project.runpytest("--prompt=v", "-rA")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        ["*failed assert judge: judge: as asked (score 0.20 < 0.50)*", "PASSED*c1*"]
    )


def test_a_schema_sharing_nodes_through_aliases_is_checked_once_per_node(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # each level holds the one below twice, as YAML aliases make it: 2**16 paths, 17 nodes
    from pytest_prompteval.core.errors import PromptevalError
    from pytest_prompteval.scoring import assertions

    node: dict[str, Any] = {"type": "string"}
    for _ in range(16):
        node = {"type": "object", "properties": {"a": node, "b": node}}
    looked: list[int] = []
    real = assertions._subschemas

    def counted(schema: Any) -> Any:
        looked.append(id(schema))
        return real(schema)

    monkeypatch.setattr(assertions, "_subschemas", counted)
    assertions._check_schema(node, lambda message, line=None: PromptevalError(message))
    assert len(looked) == 17
