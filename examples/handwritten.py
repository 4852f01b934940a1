"""A python: provider serving the hand-written sample answers of the example suite.

Used only to (re)write the committed sample recordings:
    pytest prompt_cases --prompt=current --compare v1_baseline \
        --prompteval-provider=python:examples.handwritten:respond --prompteval-record=all \
        --prompteval-record-note="hand-written sample, not a response from Claude"
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import yaml

from pytest_prompteval import Request, Response


@cache
def _answers() -> dict[str, dict[str, str]]:
    path = Path(__file__).with_name("handwritten_responses.yaml")
    answers: dict[str, dict[str, str]] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return answers


def respond(request: Request, *, case: Any, prompt: Any, sample: int) -> Response:
    text = " " + _answers()[case.id][prompt.version]
    prompt_chars = len(request.system or "") + sum(len(m.text) for m in request.messages)
    return Response(
        text=text,
        model=request.model,
        stop_reason="end_turn",
        input_tokens=prompt_chars // 4,
        output_tokens=len(text) // 4,
    )
