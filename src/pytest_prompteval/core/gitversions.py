"""Files as committed at a git ref: ``NAME@REF`` prompt versions and what changed since a ref.

Everything is read from git objects (``git rev-parse``, ``git cat-file``, ``git ls-tree``), so
the working tree and the index are never touched. Any git problem (no repository, an unknown
ref, no such file at the ref) is one usage error that names the version and the ref.
"""

from __future__ import annotations

import dataclasses
import subprocess
import tempfile
from collections.abc import Collection
from pathlib import Path

from pytest_prompteval.core.errors import PromptevalError, display
from pytest_prompteval.core.prompts import PROMPT_SUFFIXES, PromptVersion, load_prompt

SEPARATOR = "@"


class GitRefError(PromptevalError):
    """A ref, repository or file that git cannot give: a usage error, before any call."""

    kind = "usage"


def split_version(name: str) -> tuple[str, str | None]:
    """``current@main`` -> ("current", "main"); ``current`` -> ("current", None)."""
    stem, separator, ref = name.partition(SEPARATOR)
    return stem, (ref if separator else None)


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=False)
    except OSError as exc:  # no git executable
        raise GitRefError(f"cannot run git: {exc}") from None


def _existing(path: Path) -> Path:
    path = path.resolve()
    while not path.is_dir():
        path = path.parent
    return path


def repo_root(start: Path) -> Path:
    done = _git(_existing(start), "rev-parse", "--show-toplevel")
    if done.returncode != 0:
        raise GitRefError(f"{display(start)} is not inside a git repository")
    return Path(done.stdout.decode().strip()).resolve()


def resolve_ref(root: Path, ref: str) -> str:
    """The commit a ref names; an unknown one is a GitRefError."""
    done = _git(root, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}")
    if done.returncode != 0 or not ref or ref.startswith("-"):
        raise GitRefError(
            f"unknown git ref {ref!r} in {display(root)} (try a branch, a tag, a commit or HEAD~1; "
            "in CI, fetch it first: git fetch origin main)"
        )
    return done.stdout.decode().strip()


def _relative(root: Path, path: Path) -> str:
    try:
        return path.resolve().relative_to(root).as_posix()
    except ValueError:
        raise GitRefError(
            f"{display(path)} is outside the git repository {display(root)}"
        ) from None


def read_at(path: Path, ref: str) -> bytes | None:
    """``path``'s content as committed at ``ref``; None when the file did not exist there."""
    root = repo_root(path.parent)
    commit = resolve_ref(root, ref)
    done = _git(root, "cat-file", "blob", f"{commit}:{_relative(root, path)}")
    return done.stdout if done.returncode == 0 else None


def files_at(directory: Path, ref: str) -> list[str]:
    """Names of the files in ``directory`` as committed at ``ref``."""
    root = repo_root(directory)
    commit = resolve_ref(root, ref)
    done = _git(root, "ls-tree", "--name-only", f"{commit}:{_relative(root, directory)}")
    return done.stdout.decode().split() if done.returncode == 0 else []


def load_version_at(prompt_dir: Path, name: str, fields: Collection[str] = ()) -> PromptVersion:
    """The prompt version ``STEM@REF``: ``prompts/STEM.yaml`` as committed at REF, labelled
    ``STEM@REF`` and located at ``prompts/STEM.yaml@REF`` in messages."""
    stem, ref = split_version(name)
    if ref is None:
        raise GitRefError(f"prompt version {name!r}: expected NAME{SEPARATOR}REF")
    try:
        for suffix in PROMPT_SUFFIXES:
            path = prompt_dir / f"{stem}{suffix}"
            content = read_at(path, ref)
            if content is not None:
                return _load(content, path, name, ref, fields)
        at_ref = sorted(
            Path(f).stem for f in files_at(prompt_dir, ref) if Path(f).suffix in PROMPT_SUFFIXES
        )
    except GitRefError as exc:
        raise GitRefError(f"prompt version {name!r}: {exc.message}") from None
    raise GitRefError(
        f"prompt version {name!r}: {display(prompt_dir / (stem + '.yaml'))} does not exist at "
        f"{ref}; versions at {ref}: {', '.join(at_ref) or 'none'}"
    )


def _load(
    content: bytes, path: Path, name: str, ref: str, fields: Collection[str]
) -> PromptVersion:
    shown = Path(f"{path}{SEPARATOR}{ref}")
    with tempfile.TemporaryDirectory(prefix="prompteval-git-") as tmp:
        copy = Path(tmp) / path.name
        copy.write_bytes(content)
        try:
            loaded = load_prompt(copy, fields)
        except PromptevalError as exc:
            raise PromptevalError(exc.message, shown, exc.line) from None
    return dataclasses.replace(loaded, version=name, path=shown)
