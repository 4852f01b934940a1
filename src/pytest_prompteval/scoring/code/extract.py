"""The code in a model's answer: fenced, after a prefill, completing the prompt, or whole."""

from __future__ import annotations

import functools

from pytest_prompteval.core.patterns import pattern
from pytest_prompteval.scoring.code.spec import CodeSpec, defines

# on RE2: with Python's ``re`` an unclosed fence or a run of blank lines took quadratic time
_FENCE = pattern(r"(?s)```[ \t]*([\pL\pN_+-]*)[^\n]*\n(.*?)(?:```|\z)")


def extract_code(text: str, prefill: str, spec: CodeSpec) -> tuple[str, str]:
    """The code in an answer, and which rule found it:

    1. ``fenced``: the first fenced block that defines the entry point, else the first
       python (or untagged) block;
    2. ``prefill``: the prefill ended inside code (it contains ``def`` or an open fence):
       prefill + answer, with a closing fence cut off;
    3. ``completion``: no definition of the entry point: the answer completes the case's
       prompt (HumanEval style), so the code is prompt + answer;
    4. ``whole``: the answer as it stands.
    Code that does not define the entry point but whose case has a prompt (imports and
    helpers) gets the prompt in front.
    """
    return _extract(text, prefill, spec.entry_point, spec.prompt)


# each answer is read twice: when its run is queued ahead, and when its item scores it
@functools.lru_cache(maxsize=256)
def _extract(text: str, prefill: str, entry_point: str, prompt: str) -> tuple[str, str]:
    blocks = [(lang.lower(), body) for lang, body in _FENCE.findall(prefill + text)]
    if blocks:
        python = [b for lang, b in blocks if lang in ("", "python", "py", "python3")]
        defining = [b for b in python if defines(b, entry_point)]
        code, rule = (defining or python or [blocks[0][1]])[0], "fenced"
    elif prefill.strip() and ("def " in prefill or prefill.rstrip().endswith(":")):
        code, rule = prefill + text, "prefill"
    elif not defines(text, entry_point) and prompt:
        code, rule = prompt + text, "completion"
    else:
        code, rule = text, "whole"
    if not defines(code, entry_point) and prompt and rule != "completion":
        code = prompt + code
    return code, rule
