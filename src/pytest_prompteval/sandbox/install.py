"""A repository environment's ``install`` step (``python setup.py build_ext --inplace``,
``pip install -e .``), run in a sandbox on the item's copy against the environment.

The environment is read-only there: ``pip install`` goes to the sandbox's own site folder
(``/tmp``, read by the environment's python), and what a build leaves in ``/repo`` is named
here, from the copy's files before and after, so that the verdict leaves it out of the
agent's diff. The install runs again in the verdict's sandbox, after the test patch: the
agent's changes to the built code count.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from pytest_prompteval.sandbox.provider import RepoSandbox

#: How many lines of a failed install's output its error quotes.
QUOTED = 6


@dataclass(frozen=True)
class Installed:
    """An install's exit status (None: timed out), its output, and the files of the copy
    it made or changed (relative paths)."""

    status: int | None
    output: str
    products: frozenset[str]

    @property
    def failed(self) -> bool:
        return self.status != 0

    def why(self) -> str:
        said = " | ".join(line.strip() for line in self.output.strip().splitlines()[-QUOTED:])
        return f"the environment's install step failed (exit status {self.status}): {said}"


def _files(top: Path) -> dict[str, tuple[int, int, int]]:
    """Each file below ``top`` (not ``.git``'s), with its size, time and mode."""
    found = {}
    for folder, dirs, names in os.walk(top):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in names:
            path = os.path.join(folder, name)
            try:
                info = os.lstat(path)
            except OSError:
                continue
            found[os.path.relpath(path, top)] = (info.st_size, info.st_mtime_ns, info.st_mode)
    return found


def install(workspace: RepoSandbox, command: str, timeout: float) -> Installed:
    """``command`` in ``/repo`` of ``workspace``'s sandbox; the files it left there."""
    before = _files(workspace.copy)
    done = workspace.run(f"cd /repo && {command}", timeout)
    after = _files(workspace.copy)
    products = frozenset(name for name, seen in after.items() if before.get(name) != seen)
    return Installed(done.get("status"), str(done.get("output", "")), products)
