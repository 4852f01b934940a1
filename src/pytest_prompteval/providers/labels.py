"""What a recording was made for: case, prompt version and file digest, model, time.

Recordings stay keyed by the request alone; the label is what lets a reader (and replay,
when a recording is missing) tell which case and prompt file a recording belongs to, and
why a request no longer finds it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, fields
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pytest_prompteval.core.errors import display
from pytest_prompteval.core.request import Request
from pytest_prompteval.providers.base import CallContext

#: the purposes a label may name (``CallContext.purpose`` says what each means)
PURPOSES = ("generation", "judge", "improve", "user")
_DIGEST = re.compile(r"[0-9a-f]{64}|")


@dataclass(frozen=True)
class Label:
    case: str
    #: the case's file name: a YAML case file, or the test module of an inline case
    case_file: str
    prompt: str
    prompt_sha256: str
    model: str
    purpose: str
    recorded_at: str

    def to_json(self) -> dict[str, str]:
        return asdict(self)

    @classmethod
    def from_json(cls, value: Any) -> Label:
        """A recording's ``label``, checked field by field (ValueError says which)."""
        if not isinstance(value, Mapping):
            raise ValueError("'label': expected an object")
        names = [f.name for f in fields(cls)]
        for name in names:
            if not isinstance(value.get(name), str):
                raise ValueError(f"'label.{name}': expected text")
        unknown = sorted(set(value) - set(names))
        if unknown:
            raise ValueError(f"'label.{unknown[0]}': not a label field")
        if not _DIGEST.fullmatch(value["prompt_sha256"]):
            raise ValueError("'label.prompt_sha256': expected a SHA-256 hex digest")
        if value["purpose"] not in PURPOSES:
            raise ValueError(f"'label.purpose': expected one of {', '.join(PURPOSES)}")
        try:
            datetime.fromisoformat(value["recorded_at"])
        except ValueError:
            raise ValueError("'label.recorded_at': expected an ISO 8601 time") from None
        return cls(**{name: value[name] for name in names})

    @property
    def inline(self) -> bool:
        """Made by the ``prompteval`` fixture in a test module, not by a case file's item."""
        return not self.case_file.endswith((".yaml", ".yml"))


def label_for(request: Request, context: CallContext, now: datetime | None = None) -> Label:
    moment = now or datetime.now(timezone.utc)
    return Label(
        case=context.case.id,
        case_file=context.case.path.name,
        prompt=context.prompt.version,
        prompt_sha256=context.prompt.sha256,
        model=request.model,
        purpose=context.purpose,
        recorded_at=moment.isoformat(timespec="seconds"),
    )


def why_missing(labels: Iterable[tuple[Label, int]], request: Request, context: CallContext) -> str:
    """Why no recording answers this request, from the (label, sample) of the recordings
    there are; '' when none of them was made for this case and prompt version."""
    prompt, purpose = context.prompt, context.purpose
    version = [(lab, n) for lab, n in labels if lab.prompt == prompt.version]
    mine = [
        (lab, n) for lab, n in version if lab.case == context.case.id and lab.purpose == purpose
    ]
    if not mine:
        return ""
    current = [(lab, n) for lab, n in mine if lab.prompt_sha256 == prompt.sha256]
    if not current:
        return _prompt_changed(version, prompt.sha256, prompt.path)
    if purpose == "user":
        return "the conversation the simulated user answers changed since it was recorded"
    if purpose != "generation":
        return "the judged answer or the rubric changed since its verdicts were recorded"
    return _answer_missing(current, request, context)


def _prompt_changed(version: list[tuple[Label, int]], sha256: str, path: Path) -> str:
    """The prompt file changed: how many cases have recordings of it as it was only."""
    cases = {lab.case for lab, _ in version if lab.prompt_sha256 != sha256}
    cases -= {lab.case for lab, _ in version if lab.prompt_sha256 == sha256}
    return (
        f"{display(path)} changed since its recordings ({len(cases)} "
        f"case{'s' if len(cases) != 1 else ''})"
    )


def _answer_missing(
    current: list[tuple[Label, int]], request: Request, context: CallContext
) -> str:
    """Why no answer recorded for this prompt as it is fits: the model, the sample, or the
    case's request."""
    models = sorted({lab.model for lab, _ in current})
    if request.model not in models:
        return f"recorded with model {', '.join(models)}; this run asks for {request.model}"
    top = max(n for lab, n in current if lab.model == request.model)
    if context.sample > top:
        return f"samples 0-{top} are recorded; this run asks for sample {context.sample}"
    return (
        f"case {context.case.id!r} or its request changed since its recordings (its input, "
        "a template variable, a hook or a parameter)"
    )
