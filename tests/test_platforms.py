"""Claude on Amazon Bedrock and Google Vertex AI through the SDK's own clients
(``AnthropicBedrock``, ``AnthropicVertex``) against the loopback server, with fake
credentials: recorded, replayed offline, replayed across platforms, priced; what a platform
lacks said once; what is missing said before any call; no credential written anywhere."""

from __future__ import annotations

import fnmatch
import json
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_prompteval.core.modelids import canonical_model
from pytest_prompteval.core.pricing import PriceTable
from pytest_prompteval.core.request import Message, Request
from pytest_prompteval.core.response import Response
from pytest_prompteval.testing import (
    AnthropicServer,
    Fault,
    judge_verdict,
    platform_request,
    route,
    tool_use,
)

from .conftest import item_results

MODEL = "claude-haiku-4-5-20251001"
BEDROCK_MODEL = f"us.anthropic.{MODEL}-v1:0"
VERTEX_MODEL = "claude-haiku-4-5@20251001"
#: distinctive fake credentials, looked for in everything a run writes
SECRETS = {
    "AWS_ACCESS_KEY_ID": "AKIDFAKEKEYID0001",
    "AWS_SECRET_ACCESS_KEY": "fake-aws-secret-0001",
    "AWS_SESSION_TOKEN": "fake-aws-session-token-0001",
    "ANTHROPIC_VERTEX_ACCESS_TOKEN": "fake-vertex-token-0001",
}
BEARER = "fake-bedrock-bearer-0001"
#: every variable that could point the SDKs at real credentials or a real region
CLEARED = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_BEARER_TOKEN_BEDROCK",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "CLOUD_ML_REGION",
    "ANTHROPIC_VERTEX_PROJECT_ID",
    "ANTHROPIC_VERTEX_ACCESS_TOKEN",
    "GOOGLE_CLOUD_PROJECT",
)
PROMPT = "user_prompt: 'Explain {code}.'\nmodel_config: {max_tokens: 100}\n"
CASES = (
    "description: two snippets\ncases:\n"
    "- id: loop\n  expected_topics: [loop]\n  input: {code: 'for (;;)'}\n"
    "- id: call\n  expected_topics: [call]\n  input: {code: 'f()'}\n"
)


def answer(request: dict[str, Any]) -> str:
    text = request["messages"][0]["content"][0]["text"]
    return " A loop that never ends." if "for" in text else " A call to f."


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """No credentials or region from the machine: no ~/.aws, no instance metadata, no
    Google default credentials."""
    for name in CLEARED:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "no-google.json"))
    monkeypatch.setenv("NO_GCE_CHECK", "True")
    return monkeypatch


@pytest.fixture
def server(clean_env: pytest.MonkeyPatch) -> Iterator[AnthropicServer]:
    with AnthropicServer(responder=answer) as running:
        clean_env.setenv("ANTHROPIC_BASE_URL", running.url)
        clean_env.setenv("ANTHROPIC_BEDROCK_BASE_URL", running.url)
        clean_env.setenv("ANTHROPIC_VERTEX_BASE_URL", f"{running.url}/v1")
        yield running


def bedrock_env(env: pytest.MonkeyPatch) -> None:
    env.setenv("AWS_REGION", "us-east-1")
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        env.setenv(name, SECRETS[name])


def vertex_env(env: pytest.MonkeyPatch) -> None:
    env.setenv("CLOUD_ML_REGION", "us-east5")
    env.setenv("ANTHROPIC_VERTEX_PROJECT_ID", "prompteval-test")
    env.setenv("ANTHROPIC_VERTEX_ACCESS_TOKEN", SECRETS["ANTHROPIC_VERTEX_ACCESS_TOKEN"])


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.mkdir("prompts").joinpath("v.yaml").write_text(PROMPT)
    pytester.mkdir("prompt_cases").joinpath("cases.yaml").write_text(CASES)
    return pytester


def by_case(reprec: pytest.HookRecorder) -> dict[str, dict[str, Any]]:
    return {r["case_id"]: r for r in item_results(reprec)}


def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_network(*args: object) -> None:
        raise AssertionError(f"a replay opened a connection to {args}")

    monkeypatch.setattr(socket.socket, "connect", no_network)


def written(root: Path) -> str:
    """Everything the run wrote under ``root``, as text."""
    return "\n".join(
        p.read_text(errors="replace")
        for p in root.rglob("*")
        if p.is_file() and ".pytest_cache" not in p.parts
    )


def assert_no_credentials(text: str) -> None:
    for secret in [*SECRETS.values(), BEARER]:
        assert secret not in text
    for header in ("AWS4-HMAC-SHA256", "Signature=", "x-amz-", "Bearer ", "authorization"):
        assert header.lower() not in text.lower()


# -- model ids, keys and prices -----------------------------------------------------------


@pytest.mark.parametrize(
    "platform_id, api_id",
    [
        ("anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5-20250929"),
        ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5-20250929"),
        ("global.anthropic.claude-opus-4-1-20250805-v1:0", "claude-opus-4-1-20250805"),
        ("anthropic.claude-3-5-sonnet-20241022-v2:0", "claude-3-5-sonnet-20241022"),
        ("claude-sonnet-4-5@20250929", "claude-sonnet-4-5-20250929"),
        ("claude-3-5-sonnet-v2@20241022", "claude-3-5-sonnet-20241022"),
        ("claude-haiku-4-5", "claude-haiku-4-5"),
        # not Claude as a platform spells it: left as it is
        ("arn:aws:bedrock:us-east-1:1:application-inference-profile/x", None),
        ("anthropic.titan-v1:0", None),
        ("a.b.anthropic.claude-x-v1:0", None),
        ("claude-x@latest", None),
    ],
)
def test_platform_model_ids_map_to_the_api_id(platform_id: str, api_id: str | None) -> None:
    assert canonical_model(platform_id) == (api_id or platform_id)


def test_a_hostile_model_id_maps_in_linear_time() -> None:
    for hostile in ("anthropic." + "-v1" * 200_000, "x@" + "9" * 400_000, "us." * 200_000):
        assert canonical_model(hostile) == hostile  # no claude- name: unchanged, at once


def test_the_same_request_has_one_key_on_every_platform() -> None:
    def request(model: str) -> Request:
        return Request.create(model, [Message("user", ("hi",))], max_tokens=5)

    keys = {request(m).key(3) for m in (MODEL, BEDROCK_MODEL, VERTEX_MODEL)}
    assert len(keys) == 1
    assert request("claude-sonnet-4-5@20250929").key() != request(MODEL).key()


def test_platform_ids_are_priced_and_a_table_of_their_own_wins() -> None:
    table = PriceTable(
        {"claude-haiku-4-5": {"input": 1.0, "output": 5.0}, "eu.anthropic.claude": {"input": 2.0}}
    )
    answer = Response("x", BEDROCK_MODEL, input_tokens=1_000_000, output_tokens=0)
    assert table.cost(answer) == table.cost(answer, VERTEX_MODEL) == 1.0
    assert table.cost(answer, f"eu.anthropic.{MODEL}-v1:0") == 2.0


def test_the_server_refuses_what_the_platforms_refuse() -> None:
    assert route("/model/us.anthropic.claude-x-v1:0/invoke") == (
        "messages",
        "us.anthropic.claude-x-v1:0",
    )
    vertex = "/v1/projects/p/locations/r/publishers/anthropic/models/claude-x%40123:rawPredict"
    assert route(vertex) == ("messages", "claude-x@123")
    assert route(vertex.replace("claude-x%40123", "count-tokens"))[0] == "count_tokens"
    assert route("/model/x/invoke-with-response-stream") == ("", None)
    assert platform_request({"max_tokens": 1}, "m")[1] is not None  # no anthropic_version
    assert platform_request({"anthropic_version": "v", "model": "m"}, "m")[1] is not None
    assert platform_request({"anthropic_version": "v", "max_tokens": 1}, "m") == (
        {"model": "m", "max_tokens": 1},
        None,
    )


# -- runs through the SDK's clients ---------------------------------------------------------


@pytest.mark.parametrize("platform", ["bedrock", "vertex"])
def test_a_platform_run_records_then_replays_offline(
    project: pytest.Pytester,
    server: AnthropicServer,
    clean_env: pytest.MonkeyPatch,
    platform: str,
) -> None:
    model = BEDROCK_MODEL if platform == "bedrock" else VERTEX_MODEL
    (bedrock_env if platform == "bedrock" else vertex_env)(clean_env)
    args = ["--prompt=v", f"--prompteval-provider={platform}", f"--prompteval-model={model}"]
    result = project.runpytest(*args, "--json-report", "--junitxml=junit.xml")
    result.assert_outcomes(passed=2)
    assert len(server.requests) == 2
    sent = server.requests[0]
    if platform == "bedrock":
        assert sent.path == f"/model/{model}/invoke"
        assert sent.headers["authorization"].startswith(
            f"AWS4-HMAC-SHA256 Credential={SECRETS['AWS_ACCESS_KEY_ID']}/"
        )
        assert sent.headers["x-amz-security-token"] == SECRETS["AWS_SESSION_TOKEN"]
    else:
        assert sent.path == (
            "/v1/projects/prompteval-test/locations/us-east5/publishers/anthropic/models/"
            f"{model}:rawPredict"
        )
        assert sent.headers["authorization"] == f"Bearer {SECRETS['ANTHROPIC_VERTEX_ACCESS_TOKEN']}"
    assert "model" not in sent.body and "anthropic_version" in sent.body
    # priced as the model it is, in the summary too
    (spent,) = [line for line in result.outlines if "spent on 2 live calls" in line]
    assert "cost: $0.0" in spent and "$0.0000" not in spent
    result.stdout.no_fnmatch_line("*without a price*")
    recordings = [
        json.loads(p.read_text()) for p in project.path.joinpath("prompt_recordings").glob("*.json")
    ]
    assert {r["origin"] for r in recordings} == {platform}
    assert {r["request"]["model"] for r in recordings} == {model}
    assert_no_credentials(written(project.path))

    for name in CLEARED:
        clean_env.delenv(name, raising=False)  # no credentials, no region: replay only
    offline(clean_env)
    replayed = by_case(project.inline_run(*args))
    assert len(server.requests) == 2
    assert all(r["replayed"] and r["passed"] and r["cost_usd"] > 0 for r in replayed.values())
    assert replayed["loop"]["response"].endswith("A loop that never ends.")


def test_a_recording_replays_on_every_platform(
    project: pytest.Pytester, server: AnthropicServer, clean_env: pytest.MonkeyPatch
) -> None:
    clean_env.setenv("ANTHROPIC_API_KEY", "test-key-not-secret")
    first = by_case(project.inline_run("--prompt=v", f"--prompteval-model={MODEL}"))
    assert len(server.requests) == 2 and not any(r["replayed"] for r in first.values())
    clean_env.delenv("ANTHROPIC_API_KEY")
    offline(clean_env)
    for platform, model in (("bedrock", BEDROCK_MODEL), ("vertex", VERTEX_MODEL)):
        again = by_case(
            project.inline_run(
                "--prompt=v", f"--prompteval-provider={platform}", f"--prompteval-model={model}"
            )
        )
        for case_id, made in first.items():
            assert again[case_id]["replayed"] and again[case_id]["passed"]
            assert again[case_id]["response"] == made["response"]
            assert again[case_id]["cost_usd"] == made["cost_usd"]
    assert len(server.requests) == 2
    assert len(list(project.path.joinpath("prompt_recordings").glob("*.json"))) == 2


def test_bedrock_with_a_bearer_token(
    project: pytest.Pytester, server: AnthropicServer, clean_env: pytest.MonkeyPatch
) -> None:
    clean_env.setenv("AWS_REGION", "eu-west-1")
    clean_env.setenv("AWS_BEARER_TOKEN_BEDROCK", BEARER)
    reprec = project.inline_run(
        "--prompt=v", "--prompteval-provider=bedrock", f"--prompteval-model={BEDROCK_MODEL}"
    )
    reprec.assertoutcome(passed=2)
    assert server.requests[0].headers["authorization"] == f"Bearer {BEARER}"
    assert_no_credentials(written(project.path))


def test_the_judge_on_bedrock_is_priced_as_its_model(
    project: pytest.Pytester, server: AnthropicServer, clean_env: pytest.MonkeyPatch
) -> None:
    bedrock_env(clean_env)
    server.responder = lambda r: tool_use(r, judge_verdict(r)) if r.get("tools") else answer(r)
    judge = "global.anthropic.claude-sonnet-4-5-20250929-v1:0"
    reprec = project.inline_run(
        "--prompt=v",
        "--prompteval-provider=bedrock",
        "--prompteval-judge-provider=bedrock",
        f"--prompteval-model={BEDROCK_MODEL}",
        f"--prompteval-reviewer-model={judge}",
        "--prompteval-scorer=claude",
    )
    reprec.assertoutcome(passed=2)
    assert sorted(r.path for r in server.requests) == sorted(
        [f"/model/{BEDROCK_MODEL}/invoke"] * 2 + [f"/model/{judge}/invoke"] * 2
    )
    results = item_results(reprec)
    assert all(r["judge_cost_usd"] > 0 and r["score"] == 1.0 for r in results)


def test_an_error_that_quotes_credentials_is_written_without_them(
    project: pytest.Pytester, server: AnthropicServer, clean_env: pytest.MonkeyPatch
) -> None:
    bedrock_env(clean_env)
    quoted = (
        f"The security token {SECRETS['AWS_SESSION_TOKEN']} included in the request is "
        f"invalid (access key {SECRETS['AWS_ACCESS_KEY_ID']})"
    )
    server.inject(Fault(status=403, error_type="permission_error", message=quoted))
    result = project.runpytest(
        "--prompt=v",
        "--prompteval-provider=bedrock",
        f"--prompteval-model={BEDROCK_MODEL}",
        "-k",
        "loop",
        "--json-report",
        "--junitxml=junit.xml",
    )
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*PermissionDeniedError: status 403, request_id req_fault_000001: The security "
            "token [[]AWS_SESSION_TOKEN] included in the request is invalid (access key "
            "[[]AWS_ACCESS_KEY_ID])*"
        ]
    )
    assert_no_credentials(result.stdout.str() + result.stderr.str())
    assert_no_credentials(written(project.path))


# -- what a platform lacks, said once --------------------------------------------------------


def test_batches_on_a_platform_are_said_once_and_the_calls_go_one_by_one(
    project: pytest.Pytester, server: AnthropicServer, clean_env: pytest.MonkeyPatch
) -> None:
    vertex_env(clean_env)
    result = project.runpytest(
        "--prompt=v",
        "--prompteval-provider=vertex",
        f"--prompteval-model={VERTEX_MODEL}",
        "--prompteval-batch",
    )
    result.assert_outcomes(passed=2)
    lines = [line for line in result.outlines if "Message Batches" in line]
    assert lines == [
        "prompteval: --prompteval-batch: Google Vertex AI has no Message Batches, so the calls "
        "are sent one by one, at full price"
    ]
    assert [r.path.endswith(":rawPredict") for r in server.requests] == [True, True]


def test_estimate_counts_on_vertex_and_approximates_on_bedrock_said_once(
    project: pytest.Pytester, server: AnthropicServer, clean_env: pytest.MonkeyPatch
) -> None:
    vertex_env(clean_env)
    bedrock_env(clean_env)
    counted = project.runpytest(
        "--prompt=v",
        "--prompteval-provider=vertex",
        f"--prompteval-model={VERTEX_MODEL}",
        "--prompteval-estimate",
    )
    assert [r.path.rpartition("/")[2] for r in server.requests] == ["count-tokens:rawPredict"] * 2
    assert server.requests[0].body["model"] == VERTEX_MODEL
    counted.stdout.fnmatch_lines(["*2 token-counting calls made*"])
    counted.stdout.no_fnmatch_line("*has no token counting*")

    approximated = project.runpytest(
        "--prompt=v",
        "--prompteval-provider=bedrock",
        f"--prompteval-model={BEDROCK_MODEL}",
        "--prompteval-estimate",
    )
    assert len(server.requests) == 2  # Bedrock: nothing asked
    lines = [line for line in approximated.outlines if "no token counting" in line]
    assert lines == [
        "Amazon Bedrock has no token counting: the input tokens of 2 new requests "
        "approximated at 4 characters a token"
    ]
    approximated.stdout.fnmatch_lines(["total: 2 new calls, $0.0*"])


# -- what is missing, said before any call ---------------------------------------------------


@pytest.mark.parametrize(
    "platform, unset, named",
    [
        ("bedrock", "AWS_REGION", "AWS_REGION is not set*"),
        ("bedrock", "AWS_ACCESS_KEY_ID", "no AWS credentials found for Amazon Bedrock: set*"),
        ("vertex", "CLOUD_ML_REGION", "CLOUD_ML_REGION is not set*"),
        ("vertex", "ANTHROPIC_VERTEX_PROJECT_ID", "ANTHROPIC_VERTEX_PROJECT_ID is not set*"),
        ("vertex", "ANTHROPIC_VERTEX_ACCESS_TOKEN", "no Google credentials found for Vertex AI*"),
    ],
)
def test_what_is_missing_is_one_line_before_any_call(
    project: pytest.Pytester,
    server: AnthropicServer,
    clean_env: pytest.MonkeyPatch,
    platform: str,
    unset: str,
    named: str,
) -> None:
    (bedrock_env if platform == "bedrock" else vertex_env)(clean_env)
    clean_env.delenv(unset)
    if unset == "AWS_ACCESS_KEY_ID":
        clean_env.delenv("AWS_SECRET_ACCESS_KEY")
        clean_env.delenv("AWS_SESSION_TOKEN")
    result = project.runpytest(
        "--prompt=v", f"--prompteval-provider={platform}", "--prompteval-record=new"
    )
    result.assert_outcomes(errors=1)  # the first item's, then the run stops
    lines = [line for line in result.outlines if "nothing can be recorded" in line]
    assert fnmatch.fnmatch(lines[0], f"{named}: nothing can be recorded; replay only with *")
    result.stdout.fnmatch_lines([f"! Interrupted: {named}: nothing can be recorded*"])
    assert "Traceback" not in result.stderr.str() + result.stdout.str()
    assert server.requests == []


@pytest.mark.parametrize(
    "platform, module, extra",
    [("bedrock", "boto3", "bedrock"), ("vertex", "google.auth", "vertex")],
)
def test_a_missing_extra_is_one_line_saying_what_to_install(
    project: pytest.Pytester,
    server: AnthropicServer,
    clean_env: pytest.MonkeyPatch,
    platform: str,
    module: str,
    extra: str,
) -> None:
    bedrock_env(clean_env)
    vertex_env(clean_env)
    clean_env.delenv("ANTHROPIC_VERTEX_ACCESS_TOKEN")  # default credentials: google-auth
    clean_env.setitem(sys.modules, module, None)  # as if it were not installed
    result = project.runpytest_inprocess(
        "--prompt=v", f"--prompteval-provider={platform}", "--prompteval-record=new"
    )
    result.assert_outcomes(errors=1)
    (stopped,) = [line for line in result.outlines if line.startswith("! Interrupted: ")]
    assert f"pip install 'pytest-prompteval[{extra}]'" in stopped
    assert server.requests == []


def test_without_credentials_a_platform_run_replays_only(
    project: pytest.Pytester, server: AnthropicServer
) -> None:
    result = project.runpytest(
        "--prompt=v", "--prompteval-provider=bedrock", f"--prompteval-model={BEDROCK_MODEL}"
    )
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(
        [
            "*no recording for case 'loop' *Replay-only mode, as Amazon Bedrock cannot answer: "
            "AWS_REGION is not set*then run with --prompteval-record=new to record it*"
        ]
    )
    assert server.requests == []


def test_a_misspelt_provider_is_one_line_with_a_suggestion(project: pytest.Pytester) -> None:
    result = project.runpytest("--prompt=v", "--prompteval-provider=bedrok")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: --prompteval-provider 'bedrok': expected 'anthropic', 'bedrock', 'vertex' or "
            "python:package.module:function; did you mean 'bedrock'?"
        ]
    )
