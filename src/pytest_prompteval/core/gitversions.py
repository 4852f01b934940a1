"""Files as committed at a git ref: ``NAME@REF`` prompt versions and what changed since a ref.

Everything is read from git objects (``git rev-parse``, ``git cat-file``, ``git ls-tree``), so
the working tree and the index are never touched. Any git problem (no repository, an unknown
ref, no such file at the ref) is one usage error that names the version and the ref.

Git runs pinned to the project's own repository, found once from the rootdir: a folder a pull
request adds can look like a repository (``HEAD``, ``objects/``, ``refs/``, a ``config`` whose
``uploadpack`` is a shell command), and git's discovery from inside it would honour that
config. So no git command runs from a project folder, discovery never accepts an implicit bare
repository, nothing is fetched, no hook or fsmonitor runs, and the environment git sees holds
no API key.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import subprocess
import tempfile
from collections.abc import Collection
from pathlib import Path, PurePosixPath
from typing import IO

from pytest_prompteval.core.errors import PromptevalError, display
from pytest_prompteval.core.paths import MAX_FILE_BYTES
from pytest_prompteval.core.prompts import PROMPT_SUFFIXES, PromptVersion, load_prompt

SEPARATOR = "@"

#: what git keeps of the environment: enough to find itself, the user's global config
#: (``safe.directory`` in CI) and the locale; never a key or token
_KEPT_ENV = ("PATH", "HOME", "XDG_CONFIG_HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR")
_PINNED_CONFIG = (
    "safe.bareRepository=explicit",  # a folder that merely looks like a repository is refused
    "protocol.allow=never",  # no transport at all: a lazy fetch cannot run uploadpack
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "core.untrackedCache=false",
)


class GitRefError(PromptevalError):
    """A ref, repository or file that git cannot give: a usage error, before any call."""

    kind = "usage"


def split_version(name: str) -> tuple[str, str | None]:
    """``current@main`` -> ("current", "main"); ``current`` -> ("current", None)."""
    stem, separator, ref = name.partition(SEPARATOR)
    return stem, (ref if separator else None)


def _environment(**pinned: str) -> dict[str, str]:
    env = {name: os.environ[name] for name in _KEPT_ENV if name in os.environ}
    env.update(
        GIT_NO_LAZY_FETCH="1",
        GIT_NO_REPLACE_OBJECTS="1",
        GIT_TERMINAL_PROMPT="0",
        GIT_OPTIONAL_LOCKS="0",
        **pinned,
    )
    return env


def _command(args: tuple[str, ...]) -> list[str]:
    command = ["git"]
    for setting in _PINNED_CONFIG:
        command += ["-c", setting]
    return [*command, *args]


def _run(
    cwd: Path, env: dict[str, str], args: tuple[str, ...], data: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(
            _command(args),
            cwd=cwd,
            env=env,
            input=data,
            stdin=None if data is not None else subprocess.DEVNULL,
            capture_output=True,
            check=False,
        )
    except OSError as exc:  # no git executable
        raise GitRefError(f"cannot run git: {exc}") from None


@dataclasses.dataclass(frozen=True)
class Repository:
    """The project's git repository: its work tree and its git directory, every command run
    from the top with both given explicitly (no discovery)."""

    top: Path
    git_dir: Path
    #: the rootdir as pytest names it, and where it is in the tree
    rootdir: Path
    rootdir_in_tree: PurePosixPath

    def _environment(self) -> dict[str, str]:
        return _environment(
            GIT_DIR=str(self.git_dir),
            GIT_WORK_TREE=str(self.top),
            GIT_CEILING_DIRECTORIES=str(self.top.parent),
        )

    def git(self, *args: str, data: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
        return _run(self.top, self._environment(), args, data)

    def stream(
        self, *args: str, stdin: IO[bytes] | int = subprocess.DEVNULL, stderr: IO[bytes] | int
    ) -> subprocess.Popen[bytes]:
        """git running, its output to read as it comes (more than memory should hold)."""
        try:
            return subprocess.Popen(
                _command(args),
                cwd=self.top,
                env=self._environment(),
                stdin=stdin,
                stdout=subprocess.PIPE,
                stderr=stderr,
            )
        except OSError as exc:
            raise GitRefError(f"cannot run git: {exc}") from None

    def commit(self, ref: str) -> str:
        """The commit a ref names; an unknown one is a GitRefError."""
        done = None
        if ref and not ref.startswith("-"):
            done = self.git(
                "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"
            )
        if done is None or done.returncode != 0:
            raise GitRefError(
                f"unknown git ref {ref!r} in {display(self.top)} (try a branch, a tag, a commit or "
                "HEAD~1; in CI, fetch it first: git fetch origin main)"
            )
        return done.stdout.decode().strip()

    def relative(self, path: Path) -> str:
        """``path``'s name in the tree, as the checkout names it: never through a symlink
        in the project, which a pull request can point at another committed file."""
        named = Path(os.path.normpath(os.path.abspath(path)))
        for base in (self.rootdir, self.top):
            if named.is_relative_to(base):
                inner = PurePosixPath(named.relative_to(base).as_posix())
                where = self.rootdir_in_tree / inner if base == self.rootdir else inner
                return where.as_posix()
        raise GitRefError(f"{display(path)} is outside the git repository {display(self.top)}")

    def read(self, path: Path, ref: str) -> bytes | None:
        """``path``'s content as committed at ``ref``; None when the file did not exist there.
        Bounded as a file of the checkout is (``MAX_FILE_BYTES``): a larger blob is an error,
        read no further (half a megabyte of objects can be 512 MiB of zeros)."""
        name = f"{self.commit(ref)}:{self.relative(path)}"
        return self.blob(name, MAX_FILE_BYTES, f"{display(path)} at {ref}")

    def blob(self, name: str, limit: int, what: str) -> bytes | None:
        """The blob ``name`` (an id, or ``commit:path``); None when there is none. Its size
        is asked first: one over ``limit`` bytes is a GitRefError naming ``what``, never
        inflated (git would hold it whole in its own memory before we stop reading)."""
        sized = self.git("cat-file", "-s", name)
        if sized.returncode != 0:
            return None
        size = int(sized.stdout)
        if size > limit:
            raise GitRefError(f"{what} is larger than {limit:,} bytes")
        process = self.stream("cat-file", "blob", name, stderr=subprocess.DEVNULL)
        assert process.stdout is not None
        with process.stdout:
            content = process.stdout.read(limit + 1)  # the size asked: no more is read
            if len(content) > limit:
                process.kill()
        return content if process.wait() == 0 and len(content) <= limit else None

    def names(self, directory: Path, ref: str) -> list[str]:
        """Names of the files in ``directory`` as committed at ``ref``."""
        tree = f"{self.commit(ref)}:{self.relative(directory)}"
        done = self.git("ls-tree", "-z", "--name-only", tree)
        return done.stdout.decode(errors="replace").split("\0")[:-1] if done.returncode == 0 else []


@functools.lru_cache(maxsize=8)
def repository(rootdir: Path) -> Repository:
    """The repository holding ``rootdir``, found once. Discovery starts at the rootdir (never a
    case or prompt folder) and refuses implicit bare repositories, so only a real ``.git`` at or
    above the rootdir is taken."""
    named = Path(os.path.normpath(os.path.abspath(rootdir)))
    resolved = rootdir.resolve()
    done = _run(resolved, _environment(), ("rev-parse", "--show-toplevel", "--absolute-git-dir"))
    lines = done.stdout.decode().splitlines()
    if done.returncode != 0 or len(lines) != 2:
        raise GitRefError(f"{display(rootdir)} is not inside a git repository")
    top, git_dir = (Path(line).resolve() for line in lines)
    if not resolved.is_relative_to(top):
        raise GitRefError(f"{display(rootdir)} is not inside a git repository")
    return Repository(top, git_dir, named, PurePosixPath(resolved.relative_to(top).as_posix()))


def load_version_at(
    root: Path, prompt_dir: Path, name: str, fields: Collection[str] = ()
) -> PromptVersion:
    """The prompt version ``STEM@REF``: ``prompts/STEM.yaml`` as committed at REF, labelled
    ``STEM@REF`` and located at ``prompts/STEM.yaml@REF`` in messages."""
    stem, ref = split_version(name)
    if ref is None:
        raise GitRefError(f"prompt version {name!r}: expected NAME{SEPARATOR}REF")
    try:
        repo = repository(root)
        for suffix in PROMPT_SUFFIXES:
            path = prompt_dir / f"{stem}{suffix}"
            content = repo.read(path, ref)
            if content is not None:
                return _load(content, path, name, ref, fields)
        at_ref = sorted(
            Path(f).stem for f in repo.names(prompt_dir, ref) if Path(f).suffix in PROMPT_SUFFIXES
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
