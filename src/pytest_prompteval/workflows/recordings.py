"""``prompteval recordings``: the recordings per prompt version, which are stale, pruning them.

A recording is current when an item collection makes today (case x version x sample) asks
for its key. A labelled recording no item asks for is kept while an item may still reach it
through its own answer: a judge verdict, or a strategy's further call, whose case, prompt
version, prompt file digest (and model) are the item's; so are inline runs' recordings (the
``prompteval`` fixture in a test module, which collection does not see). Recordings made
before labels are judged by key only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_prompteval.core.cases import Case
from pytest_prompteval.core.prompts import PromptVersion
from pytest_prompteval.core.request import Request
from pytest_prompteval.providers.recording_file import Recording, UnreadableRecording

UNLABELLED = "unlabelled"
UNREADABLE = "unreadable"


@dataclass(frozen=True)
class Current:
    """What the items collected today ask for."""

    keys: frozenset[str]
    #: (case id, version) -> (prompt file digest, model, whether the version has a strategy)
    items: Mapping[tuple[str, str], tuple[str, str, bool]]
    #: version -> prompt file digest
    prompts: Mapping[str, str]


def current(requests: Iterable[tuple[Case, PromptVersion, int, Request]]) -> Current:
    keys, items, prompts = set(), {}, {}
    for case, prompt, sample, request in requests:
        keys.add(request.key(sample))
        strategy = prompt.raw.get("strategy") is not None
        items[case.id, prompt.version] = (prompt.sha256, request.model, strategy)
        prompts[prompt.version] = prompt.sha256
    return Current(frozenset(keys), items, prompts)


@dataclass(frozen=True)
class ListedRecording:
    """A recording as `prompteval recordings` lists it."""

    path: Path
    #: the recording, or why it cannot be read (never pruned: it is not ours to judge)
    recording: Recording | UnreadableRecording
    #: why no current item can use it; "" when one can
    stale: str

    @property
    def group(self) -> str:
        if isinstance(self.recording, UnreadableRecording):
            return UNREADABLE
        label = self.recording.label
        return UNLABELLED if label is None else label.prompt


def stale_reason(recording: Recording, now: Current) -> str:
    if recording.key in now.keys:
        return ""
    label = recording.label
    if label is None:
        return "unlabelled, and no current item asks for it"
    if label.inline:
        return ""
    digest = now.prompts.get(label.prompt)
    if digest is None:
        return f"no prompt version {label.prompt!r} now"
    if label.purpose == "improve":
        return "" if digest == label.prompt_sha256 else "its prompt file changed"
    item = now.items.get((label.case, label.prompt))
    if item is None:
        return f"no case {label.case!r} now"
    digest, model, strategy = item
    if digest != label.prompt_sha256:
        return "its prompt file changed"
    if label.purpose == "judge":
        return ""
    if label.model != model:
        return f"recorded with {label.model}, the item now asks {model}"
    return "" if strategy else "its case or request changed"


def judge(
    found: Sequence[tuple[Path, Recording | UnreadableRecording]], now: Current
) -> list[ListedRecording]:
    return [
        ListedRecording(path, rec, stale_reason(rec, now) if isinstance(rec, Recording) else "")
        for path, rec in found
    ]


def summary(entries: Sequence[ListedRecording]) -> list[list[str]]:
    """One row per version (then unlabelled, unreadable): recordings, cases, verdicts, stale."""
    groups: dict[str, list[ListedRecording]] = {}
    for entry in entries:
        groups.setdefault(entry.group, []).append(entry)
    order = sorted(g for g in groups if g not in (UNLABELLED, UNREADABLE))
    if not entries:
        return []
    rows = [["version", "recordings", "cases", "verdicts", "stale"]]
    for name in [*order, UNLABELLED, UNREADABLE]:
        members = groups.get(name, [])
        if not members:
            continue
        labels = [
            e.recording.label
            for e in members
            if isinstance(e.recording, Recording) and e.recording.label is not None
        ]
        labelled = name not in (UNLABELLED, UNREADABLE)
        rows.append(
            [
                name,
                str(len(members)),
                str(len({lab.case for lab in labels})) if labelled else "-",
                str(sum(lab.purpose == "judge" for lab in labels)) if labelled else "-",
                str(sum(bool(e.stale) for e in members)) if name != UNREADABLE else "-",
            ]
        )
    return rows


def describe(entry: ListedRecording) -> str:
    """One stale (or unreadable) recording, for the listing."""
    recording = entry.recording
    if isinstance(recording, UnreadableRecording):
        return recording.message
    label = recording.label
    what = (
        f"sample {recording.sample}"
        if label is None
        else f"{label.purpose} for case {label.case!r}, sample {recording.sample}, "
        f"recorded {label.recorded_at}"
    )
    return f"{what}: {entry.stale}"


def prune(entries: Sequence[ListedRecording], dry_run: bool) -> int:
    """Remove the stale recordings (none with ``dry_run``); how many there are."""
    stale = [e for e in entries if e.stale]
    if not dry_run:
        for entry in stale:
            entry.path.unlink(missing_ok=True)
    return len(stale)
