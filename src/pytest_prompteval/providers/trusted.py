"""``--prompteval-trusted-recordings REF``: recordings as a trusted ref committed them.

In replay mode every answer comes from a recording, and a pull request can edit recordings:
a forged answer would pass its own gate. With a trusted ref (the base branch), a recording
the ref has is read from git's objects at the ref, whatever the checkout holds; one the ref
does not have is *unverified*: with a key it is asked for again and compared, without one
it is replayed and named as such (or, in gates mode, fails its item).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from pytest_prompteval.core.errors import PromptevalError, display
from pytest_prompteval.core.gitversions import GitRefError, Repository
from pytest_prompteval.core.paths import MAX_RECORDING_BYTES, read_bounded

#: git's modes of a regular file; a link or a submodule at the ref is no recording
_REGULAR = ("100644", "100755")


class UnverifiedRecording(PromptevalError):
    """A recording the trusted ref does not have, in a run that may not replay it."""

    kind = "unverified_recording"


@dataclass(frozen=True)
class Changes:
    """The recordings this checkout holds that differ from the trusted ref's."""

    ref: str
    added: tuple[str, ...]  # not at the ref: unverified
    changed: tuple[str, ...]  # at the ref with other content: the ref's is used

    def lines(self) -> list[str]:
        if not (self.added or self.changed):
            return [f"recordings: every one used is as committed at {self.ref}"]
        shown: list[str] = []
        if self.added:
            shown.append(f"unverified recordings (not at {self.ref}): {_listed(self.added)}")
        if self.changed:
            shown.append(
                f"recordings changed since {self.ref}, read as at {self.ref}: "
                + _listed(self.changed)
            )
        return shown


#: file names a line lists at most; a branch that records a whole suite adds thousands
LISTED = 20


def _listed(names: tuple[str, ...]) -> str:
    more = len(names) - LISTED
    return f"{len(names)}: " + ", ".join(names[:LISTED]) + (f", +{more} more" if more > 0 else "")


def blob_id(content: bytes) -> str:
    """The id git gives ``content`` as a blob."""
    return hashlib.sha1(b"blob %d\0" % len(content) + content, usedforsecurity=False).hexdigest()


class TrustedRecordings:
    """The recordings folder as committed at ``ref``: listed once, read on demand."""

    def __init__(self, repo: Repository, folder: Path, ref: str):
        self.repo = repo
        self.folder = folder
        self.ref = ref
        commit = repo.commit(ref)
        done = repo.git("ls-tree", "-z", f"{commit}:{repo.relative(folder)}")
        self._blobs: dict[str, str] = {}  # file name -> blob id at the ref
        for entry in done.stdout.decode(errors="replace").split("\0"):
            meta, _, name = entry.partition("\t")
            mode, _, rest = meta.partition(" ")
            kind, _, blob = rest.partition(" ")
            if mode in _REGULAR and kind == "blob" and name.endswith(".json"):
                self._blobs[name] = blob

    def at_ref(self, path: Path) -> bool:
        return path.name in self._blobs

    def content(self, path: Path) -> bytes:
        """The bytes of a recording the ref has, as the ref has them: the checkout's file
        when it is the same blob (no git call), else git's object."""
        blob = self._blobs[path.name]
        mine = _unchanged(path, blob)
        if mine is not None:
            return mine
        try:
            content = self.repo.blob(blob, MAX_RECORDING_BYTES, "it")
        except GitRefError as exc:  # too large: its size was asked first
            reason = f": {exc.message}"
        else:
            if content is not None:
                return content
            reason = ""
        raise PromptevalError(
            f"cannot read this recording as committed at {self.ref}{reason}", path
        )

    def changes(self) -> Changes:
        """What the checkout's recordings folder holds beyond, or other than, the ref's."""
        added, changed = [], []
        for path in sorted(self.folder.glob("*.json")) if self.folder.is_dir() else ():
            if path.name.startswith("."):
                continue
            blob = self._blobs.get(path.name)
            if blob is None:
                added.append(display(path))
            elif _unchanged(path, blob) is None:
                changed.append(display(path))
        return Changes(self.ref, tuple(added), tuple(changed))


def _unchanged(path: Path, blob: str) -> bytes | None:
    """The checkout's file when it is the blob ``blob``; None when it is not (or is no
    readable regular file)."""
    try:
        mine = read_bounded(path, MAX_RECORDING_BYTES, path.parent)
    except PromptevalError:
        return None
    return mine if blob_id(mine) == blob else None
