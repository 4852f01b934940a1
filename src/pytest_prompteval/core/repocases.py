"""Repository cases (``kind: repo``): a repository snapshot, an issue, and the tests that
decide whether the agent fixed it (SWE-bench's ``FAIL_TO_PASS`` and ``PASS_TO_PASS``).

```yaml
- id: slug_double_space
  kind: repo
  repo: repos/slugify            # a folder of the project, or {git: PATH, ref: REF}
  input: {issue: "..."}
  fail_to_pass: [tests/test_slug.py::test_double_space]
  pass_to_pass: [tests/test_slug.py::test_basic]
  reference_patch: patches/slug.diff   # optional: the known fix
  test_patch: patches/slug_tests.diff  # optional: applied before the verdict, never shown
  timeout: 60                          # seconds per command (default 60, at most 300)
  test_command: "python -m pytest -q"  # optional; default pytest on the listed ids
  memory_mb: 4096                      # the sandbox's memory, all its processes (2048)
  agent_may_change: [conftest.py]      # optional: test infrastructure the fix may change
  environment: {requirements: [pytest, text-unidecode]}  # optional (core/envspec.py)
```

Files are named relative to the case file and must stay inside the project (core/paths).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from pytest_prompteval.core.cases import Case
from pytest_prompteval.core.envspec import EnvironmentSpec, parse_environment
from pytest_prompteval.core.errors import PromptevalError
from pytest_prompteval.core.patches import PatchError, patch_paths
from pytest_prompteval.core.paths import read_inside, resolve_inside
from pytest_prompteval.core.schema import check_keys
from pytest_prompteval.core.yamlload import line_of

DEFAULT_TIMEOUT = 60.0
MAX_TIMEOUT = 300.0
#: A sandbox's memory a case may ask for, in MiB.
MEMORY_MB = (64, 1 << 16)
REPO_KEYS = frozenset({"git", "ref"})


@dataclass(frozen=True)
class RepoCase:
    """A parsed repository case: ``folder`` or ``git``+``ref`` name the snapshot."""

    id: str
    folder: Path | None
    git: Path | None
    ref: str
    fail_to_pass: tuple[str, ...]
    pass_to_pass: tuple[str, ...]
    reference_patch: str | None
    test_patch: str | None
    timeout: float
    test_command: str | None
    #: whether the lists were given (check-cases derives the missing ones)
    listed: bool
    #: the sandbox's memory, shared by its processes (None: the sandbox's default)
    memory_mb: int | None = None
    #: the repository paths ``test_patch`` names (restored from the snapshot before it)
    test_files: tuple[str, ...] = ()
    #: test infrastructure (conftest.py, an ini file...) the agent's change may keep
    agent_may_change: tuple[str, ...] = ()
    #: what the tests run with; None: pytest of the plugin's interpreter, nothing else
    environment: EnvironmentSpec | None = None

    @property
    def install(self) -> str | None:
        """The environment's install step, run in each sandbox on the copy."""
        return self.environment.install if self.environment is not None else None


def is_repo_case(case: Case) -> bool:
    return case.raw.get("kind") == "repo" or "repo" in case.raw


def _fail(case: Case, key: str, message: str) -> PromptevalError:
    return PromptevalError(f"case {case.id!r}: {key}: {message}", case.path, line_of(case.raw, key))


def _tests(case: Case, key: str) -> tuple[str, ...]:
    value = case.raw.get(key, [])
    if not isinstance(value, list) or not all(isinstance(t, str) and t for t in value):
        raise _fail(case, key, "expected a list of test ids (tests/test_x.py::test_name)")
    return tuple(value)


def _file(case: Case, key: str) -> str | None:
    name = case.raw.get(key)
    if name is None:
        return None
    root = case.root or case.path.parent
    try:
        return read_inside(root, name, case.path.parent)
    except PromptevalError as exc:
        raise _fail(case, key, exc.message) from None


def _relative(case: Case, key: str) -> tuple[str, ...]:
    """A list of paths inside the repository, as ``a/b.py``."""
    value = case.raw.get(key, [])
    hint = "expected a list of paths inside the repository (conftest.py, tests/conftest.py)"
    if not isinstance(value, list) or not all(isinstance(p, str) and p for p in value):
        raise _fail(case, key, hint)
    paths = []
    for path in value:
        parts = PurePosixPath(path).parts
        if path.startswith("/") or any(p in ("..", ".git") for p in parts):
            raise _fail(case, key, f"{path!r}: {hint}")
        paths.append("/".join(parts))
    return tuple(paths)


def _folder(case: Case, key: str, name: Any) -> Path:
    root = case.root or case.path.parent
    try:
        folder = resolve_inside(root, name, case.path.parent)
    except PromptevalError as exc:
        raise _fail(case, key, exc.message) from None
    if not folder.is_dir():
        raise _fail(case, key, f"{name!r} is not a folder")
    return folder


def _repo(case: Case) -> tuple[Path | None, Path | None, str]:
    """``repo``: a folder of the project, or a clone's folder and its ref."""
    repo = case.raw.get("repo")
    if isinstance(repo, str):
        return _folder(case, "repo", repo), None, "HEAD"
    if not isinstance(repo, Mapping):
        raise _fail(case, "repo", "expected a folder of the project or {git: PATH, ref: REF}")
    check_keys(repo, REPO_KEYS, case.path, f"case {case.id!r}: repo: ")
    if not isinstance(repo.get("git"), str):
        raise _fail(case, "repo", "{git: PATH, ref: REF} needs git: the clone's folder")
    git = _folder(case, "repo", repo["git"])
    ref = repo.get("ref", "HEAD")
    if not isinstance(ref, str) or not ref or ref.startswith("-"):
        raise _fail(case, "repo", f"ref {ref!r}: expected a branch, tag or commit")
    return None, git, ref


def _limits(case: Case) -> tuple[float, int | None]:
    """The case's ``timeout`` per command and the sandbox's ``memory_mb``."""
    timeout = case.raw.get("timeout", DEFAULT_TIMEOUT)
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, int | float)
        or not 0 < timeout <= MAX_TIMEOUT
    ):
        raise _fail(
            case, "timeout", f"seconds per command, more than 0 and at most {MAX_TIMEOUT:g}"
        )
    memory = case.raw.get("memory_mb")
    low, high = MEMORY_MB
    if memory is not None and (
        isinstance(memory, bool) or not isinstance(memory, int) or not low <= memory <= high
    ):
        raise _fail(case, "memory_mb", f"MiB for the sandbox, a whole number from {low} to {high}")
    return float(timeout), memory


def parse_repo_case(case: Case) -> RepoCase:
    """The case's repository fields, checked; a mistake names the file and line."""
    raw = case.raw
    folder, git, ref = _repo(case)
    timeout, memory = _limits(case)
    command = raw.get("test_command")
    if command is not None and (not isinstance(command, str) or not command.strip()):
        raise _fail(case, "test_command", "expected a shell command")
    environment = None
    if "environment" in raw:
        root = case.root or case.path.parent
        line = line_of(raw, "environment")
        owner = f"case {case.id!r}"
        environment = parse_environment(raw["environment"], owner, case.path, line, root)
        command = command or environment.test_command
    fail_to_pass, pass_to_pass = _tests(case, "fail_to_pass"), _tests(case, "pass_to_pass")
    test_patch = _file(case, "test_patch")
    try:
        test_files = patch_paths(test_patch) if test_patch else ()
    except PatchError as exc:
        raise _fail(case, "test_patch", str(exc)) from None
    return RepoCase(
        id=case.id,
        folder=folder,
        git=git,
        ref=ref,
        fail_to_pass=fail_to_pass,
        pass_to_pass=pass_to_pass,
        reference_patch=_file(case, "reference_patch"),
        test_patch=test_patch,
        timeout=timeout,
        test_command=command,
        listed="fail_to_pass" in raw,
        memory_mb=memory,
        test_files=test_files,
        agent_may_change=_relative(case, "agent_may_change"),
        environment=environment,
    )
