"""``--prompteval-affected REF``: the cases a change since REF can affect.

A case is affected when its entry in its case file differs from the entry with the same id at
REF (compared as parsed YAML, so moving or reformatting it changes nothing), or when a prompt
version the run uses has a file that differs from REF: then every case is. The selection keeps
every version and sample of an affected case, so comparisons stay paired.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_prompteval.core.cases import load_case_file
from pytest_prompteval.core.errors import PromptevalError
from pytest_prompteval.core.gitversions import Repository, repository
from pytest_prompteval.core.paths import read_bounded
from pytest_prompteval.core.prompts import PromptVersion

CASE_SUFFIXES = (".yaml", ".yml")


@dataclass(frozen=True)
class Affected:
    ref: str
    selected: frozenset[tuple[Path, str]]  # (case file, case id)
    total: int
    changed_prompts: tuple[str, ...]

    def keeps(self, path: Path, case_id: str) -> bool:
        return (_named(path), case_id) in self.selected

    def describe(self) -> str:
        why = (
            f"prompt changed: {', '.join(self.changed_prompts)}"
            if self.changed_prompts
            else "changed case entries"
        )
        skipped = self.total - len(self.selected)
        return (
            f"prompteval affected since {self.ref}: {len(self.selected)} of {self.total} cases "
            f"selected ({why}), {skipped} skipped"
        )


def changed_entries(now: Mapping[str, Any], before: Mapping[str, Any] | None) -> set[str]:
    """Ids whose entry in ``now`` (id -> parsed entry) differs from ``before`` (None: the file
    did not exist, or did not parse, at the ref)."""
    if before is None:
        return set(now)
    return {case_id for case_id, entry in now.items() if before.get(case_id) != entry}


def affected_since(
    root: Path, ref: str, case_dirs: Sequence[Path], versions: Iterable[PromptVersion]
) -> Affected:
    repo = repository(root)
    changed_prompts = tuple(
        v.version
        for v in versions
        if v.path.is_file() and repo.read(v.path, ref) != read_bounded(v.path)
    )
    selected: set[tuple[Path, str]] = set()
    total = 0
    for path in _case_files(case_dirs):
        try:
            now = _entries(path)
        except PromptevalError:
            continue  # collection reports it
        total += len(now)
        ids = set(now) if changed_prompts else changed_entries(now, _entries_at(repo, path, ref))
        selected |= {(path, case_id) for case_id in ids}
    return Affected(ref, frozenset(selected), total, changed_prompts)


def _case_files(case_dirs: Sequence[Path]) -> list[Path]:
    return sorted(
        {
            _named(p)
            for d in case_dirs
            if d.is_dir()
            for p in d.rglob("*")
            if p.suffix in CASE_SUFFIXES and p.is_file()
        }
    )


def _named(path: Path) -> Path:
    """A case file as the checkout names it: read at the ref under that name, never under
    the name of the file a symlink points at."""
    return Path(os.path.normpath(os.path.abspath(path)))


def _entries(path: Path) -> dict[str, Any]:
    return {case.id: dict(case.raw) for case in load_case_file(path).cases}


def _entries_at(repo: Repository, path: Path, ref: str) -> dict[str, Any] | None:
    content = repo.read(path, ref)
    if content is None:
        return None
    with tempfile.TemporaryDirectory(prefix="prompteval-git-") as tmp:
        copy = Path(tmp) / path.name
        copy.write_bytes(content)
        try:
            return _entries(copy)
        except PromptevalError:
            return None
