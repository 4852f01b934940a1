"""A stand-in for Claude: it made this project's first recordings, so that `pytest` runs
offline at once. It plays the fixing agent by a script written below, one per prompt
version and case: each step either calls a tool (the text editor, bash) or ends the turn;
the plugin runs the tools on a copy of the repository in its sandbox, as it does for
Claude. Every recording it made says so in its note. Replace them with Claude's answers:

    ANTHROPIC_API_KEY=sk-... pytest --prompteval-record=all

It is a `python:` provider (any function of yours can be one, your app's own code path):

    pytest --prompteval-provider=python:fake_model:answer --prompteval-record=all
"""

from __future__ import annotations

from typing import Any

EDIT = "str_replace_based_edit_tool"
Step = tuple[str, dict[str, Any]] | str  # a tool call (name, input), or the final answer
SCRIPTS: dict[str, dict[str, list[Step]]] = {
    "v1": {
        "greet_empty_name": [
            (EDIT, {"command": "view", "path": "/repo/greet.py"}),
            "The code looks right to me; nothing to change.",
        ],
    },
    "v2": {
        "greet_empty_name": [
            (EDIT, {"command": "view", "path": "/repo/greet.py"}),
            (EDIT, {"command": "str_replace", "path": "/repo/greet.py",
                    "old_str": '"Hello, " + name + "!"',
                    "new_str": '"Hello, " + (name or "stranger") + "!"'}),
            ("bash", {"command": "cd /repo && python -m pytest -q -p no:cacheprovider"}),
            "Fixed greet.py: an empty name now greets a stranger.",
        ],
    },
}  # fmt: skip


def answer(request: Any, *, case: Any, prompt: Any, sample: int) -> Any:
    """The script's next step: the steps taken so far are the assistant turns sent back."""
    taken = sum(message.role == "assistant" for message in request.messages)
    step = SCRIPTS[prompt.version][case.id][taken]
    if isinstance(step, str):
        return {"text": step, "stop_reason": "end_turn"}
    name, arguments = step
    call = {"type": "tool_use", "id": f"toolu_{taken}", "name": name, "input": arguments}
    return {"text": "", "stop_reason": "tool_use", "content": [call]}
