"""Models: the SDK's deprecations reported once and never a failure, a refused prefill as the
prompt's failure, prices for the models the installed SDK names."""

from __future__ import annotations

import sys
import typing
from pathlib import Path

import pytest
from anthropic.types.model_param import ModelParam

from pytest_prompteval.core.pricing import PriceTable
from pytest_prompteval.core.tables import load_table
from pytest_prompteval.providers.sdk_internals import deprecated_models
from pytest_prompteval.testing import AnthropicServer, Fault

DEPRECATED = "claude-sonnet-4-5"
CASES = "cases:\n" + "".join(
    f"- id: c{i}\n  expected_topics: [loop_optimization]\n  input: {{n: {i}}}\n" for i in range(4)
)
# pytest's own "error" filter, as this project sets it: any warning fails the test it is in
STRICT_INI = "[pytest]\nfilterwarnings =\n    error\n"


def prompt(model: str, prefill: str = "", user: str = "Explain the loop.") -> str:
    text = f"user_prompt: '{user}'\nmodel_config: {{model: {model}, max_tokens: 50}}\n"
    return text + (f"assistant_prefill: '{prefill}'\n" if prefill else "")


def answer(request: dict[str, object]) -> str:
    return "The loop optimization unrolls it."


@pytest.fixture
def project(
    pytester: pytest.Pytester, anthropic_server: AnthropicServer, monkeypatch: pytest.MonkeyPatch
) -> pytest.Pytester:
    # the runs below are controllers, even when this test runs in an xdist worker
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    anthropic_server.responder = answer
    pytester.makeini(STRICT_INI)
    prompts = pytester.mkdir("prompts")
    prompts.joinpath("old.yaml").write_text(prompt(DEPRECATED))
    prompts.joinpath("also_old.yaml").write_text(prompt(DEPRECATED, user="Explain this loop."))
    prompts.joinpath("new.yaml").write_text(prompt("claude-haiku-4-5"))
    pytester.mkdir("prompt_cases").joinpath("c.yaml").write_text(CASES)
    return pytester


def test_the_sdk_lists_the_model_these_tests_use_as_deprecated() -> None:
    assert DEPRECATED in deprecated_models()
    assert "claude-haiku-4-5" not in deprecated_models()


def test_the_deprecation_list_is_read_from_the_sdks_source_without_importing_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "prompteval_sdk_listing" / "_data"
    data.mkdir(parents=True)
    data.parent.joinpath("__init__.py").write_text("raise ImportError('not to be imported')\n")
    data.joinpath("deprecated_models.py").write_text(
        "DEPRECATED_MODELS: dict[str, str] = {'claude-old': 'June 1st, 2026'}\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert deprecated_models("prompteval_sdk_listing") == {"claude-old": "June 1st, 2026"}
    assert "prompteval_sdk_listing" not in sys.modules


def test_an_sdk_without_the_deprecation_list_is_said_once_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    tmp_path.joinpath("prompteval_sdk_bare").mkdir()
    tmp_path.joinpath("prompteval_sdk_bare", "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert deprecated_models("prompteval_sdk_bare") == {}
    assert deprecated_models("prompteval_sdk_bare") == {}
    assert capsys.readouterr().err.splitlines() == [
        "prompteval: warning: the prompteval_sdk_bare SDK's deprecated models"
        " (prompteval_sdk_bare._data, 0.5x-2.x) not found; deprecated models are not reported"
    ]


def test_deprecated_model_is_one_line_once_and_never_a_failure(
    project: pytest.Pytester, anthropic_server: AnthropicServer, xdist_args: list[str]
) -> None:
    result = project.runpytest("--prompt=all", "-p", "no:cacheprovider", "-W", "error", *xdist_args)
    result.assert_outcomes(passed=12)
    lines = [line for line in result.errlines if "is deprecated" in line]
    assert lines == [
        f"prompteval: warning: prompts/also_old.yaml:2, prompts/old.yaml:2: model "
        f"'{DEPRECATED}' is deprecated in the installed anthropic SDK (end of life "
        f"{deprecated_models()[DEPRECATED]}); choose a newer model"
    ]
    assert "DeprecationWarning" not in result.stdout.str() + result.stderr.str()
    sent = [r.body["model"] for r in anthropic_server.requests]
    assert sorted(sent) == ["claude-haiku-4-5"] * 4 + [DEPRECATED] * 8


def test_a_deprecated_model_chosen_by_option_is_named_once(
    project: pytest.Pytester, anthropic_server: AnthropicServer
) -> None:
    result = project.runpytest(
        "--prompt=new", f"--prompteval-model={DEPRECATED}", "-p", "no:cacheprovider", "-W", "error"
    )
    result.assert_outcomes(passed=4)
    lines = [line for line in result.errlines if "is deprecated" in line]
    assert lines == [
        f"prompteval: warning: --prompteval-model: model '{DEPRECATED}' is deprecated in the "
        f"installed anthropic SDK (end of life {deprecated_models()[DEPRECATED]}); choose a "
        "newer model"
    ]
    assert [r.body["model"] for r in anthropic_server.requests] == [DEPRECATED] * 4


def test_deprecated_model_through_the_fixture_is_not_a_failure(
    project: pytest.Pytester, anthropic_server: AnthropicServer
) -> None:
    project.makepyfile(
        test_inline="""
        def test_it(prompteval):
            result = prompteval.run("old", input={"n": 1})
            assert result.response.text == "The loop optimization unrolls it."
        """
    )
    project.runpytest("test_inline.py", "-W", "error").assert_outcomes(passed=1)
    assert [r.body["model"] for r in anthropic_server.requests] == [DEPRECATED]


def test_refused_prefill_fails_the_item_naming_the_prompt_field_and_model(
    project: pytest.Pytester, anthropic_server: AnthropicServer
) -> None:
    project.path.joinpath("prompts", "prefilled.yaml").write_text(
        prompt("claude-opus-4-7", prefill="My analysis:")
    )
    refusal = Fault(
        status=400,
        error_type="invalid_request_error",
        message="This model does not support assistant message prefill. "
        "The conversation must end with a user message.",
        retry_after=None,
    )
    anthropic_server.inject(refusal)
    result = project.runpytest("--prompt=prefilled", "-k", "c0")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*prompts/prefilled.yaml:3: model 'claude-opus-4-7' does not accept the "
            "assistant_prefill of this prompt (BadRequestError: status 400, request_id "
            "req_fault_*: This model does not support assistant message prefill.*); remove "
            "assistant_prefill or choose a model that accepts one"
        ]
    )
    assert "Traceback" not in result.stdout.str()
    assert len(anthropic_server.requests) == 1  # a 400 is not retried


def test_another_400_stays_an_api_error(
    project: pytest.Pytester, anthropic_server: AnthropicServer
) -> None:
    project.path.joinpath("prompts", "prefilled.yaml").write_text(
        prompt("claude-opus-4-7", prefill="My analysis:")
    )
    anthropic_server.inject(
        Fault(status=400, error_type="invalid_request_error", message="max_tokens: too large")
    )
    result = project.runpytest("--prompt=prefilled", "-k", "c0")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*BadRequestError: status 400, *max_tokens: too large*"])


def sdk_models() -> list[str]:
    (names, _) = typing.get_args(ModelParam)
    return list(typing.get_args(names))


@pytest.mark.parametrize("model", sdk_models())
def test_every_current_model_the_sdk_names_has_a_price(model: str) -> None:
    if model in deprecated_models():
        pytest.skip("deprecated in the installed SDK")
    assert PriceTable(load_table("prices", None)).prices_for(model) is not None


@pytest.mark.parametrize("model", ["claude-opus-4-6", "claude-opus-4-7", "claude-opus-4-8"])
def test_newer_opus_4_models_are_not_priced_as_opus_4(model: str) -> None:
    prices = PriceTable(load_table("prices", None)).prices_for(model)
    assert prices is not None and prices["input"] == 5.0 and prices["output"] == 25.0
