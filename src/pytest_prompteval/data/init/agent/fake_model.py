"""A stand-in for Claude: it made this project's first recordings, so that `pytest` runs
offline at once. It plays the agent by a script written below, one per prompt version and
case: each step either calls a tool or ends the turn; the plugin runs the tool loop around
it as it does around Claude. Every recording it made says so in its note. Replace them
with Claude's answers:

    ANTHROPIC_API_KEY=sk-... pytest --prompteval-record=all

It is a `python:` provider (any function of yours can be one, your app's own code path):

    pytest --prompteval-provider=python:fake_model:answer --prompteval-record=all
"""

from __future__ import annotations

from typing import Any

Step = tuple[str, dict[str, Any]] | str  # a tool call (name, input), or the final answer
SCRIPTS: dict[str, dict[str, list[Step]]] = {
    "v1": {
        "refund_broken_item": [
            ("issue_refund", {"order_id": "A-1001"}),
            "Sorry for the trouble: your refund of 42.00 is on its way.",
        ],
        "order_status": [
            ("lookup_order", {"order_id": "B-2002"}),
            "Order B-2002 has shipped with DHL.",
        ],
    },
    "v2": {
        "refund_broken_item": [
            ("lookup_order", {"order_id": "A-1001"}),
            ("issue_refund", {"order_id": "A-1001"}),
            "Your refund of 42.00 for order A-1001 is on its way.",
        ],
        "order_status": [
            ("lookup_order", {"order_id": "B-2002"}),
            "Order B-2002 has shipped with DHL.",
        ],
    },
}


def answer(request: Any, *, case: Any, prompt: Any, sample: int) -> Any:
    """The script's next step: the steps taken so far are the assistant turns sent back."""
    taken = sum(message.role == "assistant" for message in request.messages)
    step = SCRIPTS[prompt.version][case.id][taken]
    if isinstance(step, str):
        return {"text": step, "stop_reason": "end_turn"}
    name, arguments = step
    call = {"type": "tool_use", "id": f"toolu_{taken}", "name": name, "input": arguments}
    return {"text": "", "stop_reason": "tool_use", "content": [call]}
