from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pytest_prompteval.core.request import Message, Request


def make(**params: object) -> Request:
    return Request.create(
        "claude-haiku-4-5",
        [Message("user", ("Explain.", '{"code": "x"}')), Message("assistant", ("Sure:",))],
        "You are an expert.",
        **params,
    )


def test_key_is_stable_and_depends_on_everything() -> None:
    base = make(max_tokens=100, temperature=0.0)
    assert base.key() == make(temperature=0.0, max_tokens=100).key()
    assert base == make(temperature=0.0, max_tokens=100) and hash(base) == hash(
        make(temperature=0.0, max_tokens=100)
    )
    keys = {
        base.key(),
        base.key(1),
        make(max_tokens=101, temperature=0.0).key(),
        Request.create("claude-opus-4-5", base.messages, base.system, **base.params).key(),
    }
    assert len(keys) == 4


def test_api_round_trip_and_prefill() -> None:
    request = make(max_tokens=5, stop_sequences=["\n\n"])
    api = request.to_api()
    assert api["messages"][0]["content"][1] == {"type": "text", "text": '{"code": "x"}'}
    assert Request.from_api(api) == request
    assert request.prefill == "Sure:"
    assert (
        Request.from_api({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).prefill
        == ""
    )


@given(st.dictionaries(st.text(min_size=1), st.integers() | st.text() | st.none(), max_size=5))
def test_params_survive_the_round_trip(params: dict[str, object]) -> None:
    params.pop("model", None), params.pop("system", None), params.pop("messages", None)
    request = Request.create("m", [Message("user", ("x",))], None, **params)
    assert request.params == params
    assert Request.from_api(request.to_api()) == request
