"""The folders repository cases name: snapshots whose tests run in the sandbox only.

pytest on the host must never collect them: collecting would import the snapshot's
``conftest.py`` in the host process (with the API key in its environment) and run its own
tests there. The case files are scanned as text for ``repo:`` and ``git:`` values, before
any directory is walked and without loading the cases (a run without ``--prompt`` leaves
them out too); a value naming an existing folder beside the case file marks that folder.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

#: ``repo: ../repos/x``, ``- repo: "x"``, ``git: x`` and ``{git: x, ref: y}``.
_NAMED = re.compile(r"""(?:^|[\s{,])(?:repo|git)\s*:\s*["']?([^"'{}\[\]\s,#][^"'{}\[\]\s,]*)""")
#: A case file larger than this is not scanned (it is refused when loaded anyway).
MAX_SCANNED = 64 << 20


def snapshot_folders(case_dirs: Iterable[Path]) -> frozenset[Path]:
    """Every folder a case file under ``case_dirs`` names as a repository."""
    found: set[Path] = set()
    for directory in case_dirs:
        if not directory.is_dir():
            continue
        for path in sorted(directory.rglob("*.y*ml")):
            try:
                if not path.is_file() or path.stat().st_size > MAX_SCANNED:
                    continue
                text = path.read_text(errors="replace")
            except OSError:
                continue
            for match in _NAMED.finditer(text):
                name = match.group(1)
                if os.path.isabs(name):
                    continue
                folder = Path(os.path.abspath(path.parent / name))
                if folder.is_dir():
                    found.add(folder)
    return frozenset(found)
