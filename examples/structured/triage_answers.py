"""A python: provider serving the hand-written triage answers of this example suite.

Used only to (re)write the committed recordings, from this folder:
    pytest --prompt=v2 --compare v1 --prompteval-provider=python:triage_answers:respond \
        --prompteval-record=all \
        --prompteval-record-note="hand-written sample, not a response from Claude"
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from pytest_prompteval import Request, Response


@cache
def _answers() -> dict[str, dict[str, Any]]:
    path = Path(__file__).with_name("triage_answers.yaml")
    answers: dict[str, dict[str, Any]] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return answers


def respond(request: Request, *, case: Any, prompt: Any, sample: int) -> Response:
    answer = _answers()[case.id][prompt.version]
    # an answer given as a string is sent as it is (prose around a ```json block, say)
    text = answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)
    prompt_chars = len(request.system or "") + sum(len(m.text) for m in request.messages)
    return Response(
        text=text,
        model=request.model,
        stop_reason="end_turn",
        input_tokens=prompt_chars // 4,
        output_tokens=len(text) // 4,
    )
