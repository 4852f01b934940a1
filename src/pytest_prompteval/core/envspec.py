"""A repository case's ``environment``: the interpreter and packages its tests run with.

```yaml
environment:
  python: python3.11            # an interpreter on PATH; default: the one running pytest
  requirements: [pytest==8.3.3, text-unidecode==1.3]   # or requirements_file: (case-relative)
  pythonpath: [src]             # folders of /repo put first on sys.path (src layouts)
  install: "pip install --no-build-isolation --no-deps -e ."   # run in the sandbox
  test_command: "python -m pytest -p no:cacheprovider"        # the listed ids are appended
```

Only what decides the built environment (interpreter, requirements, pythonpath) is part of
its key; ``install`` and ``test_command`` run in each item's sandbox. A requirement is a
name with optional extras, version specifiers and markers: no path, URL or pip option,
which would let a case file build or fetch code on the host.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, NoReturn

from pytest_prompteval.core.errors import PromptevalError
from pytest_prompteval.core.paths import read_inside
from pytest_prompteval.core.schema import check_keys
from pytest_prompteval.core.yamlload import line_of

ENVIRONMENT_KEYS = frozenset(
    {"python", "requirements", "requirements_file", "pythonpath", "install", "test_command"}
)
#: PEP 508 without direct references: name, extras, specifiers, markers.
#: Each run of spaces is taken by one ``\s*`` before a token that must follow (two side by
#: side made a case file's ``"a==1"`` and 800 spaces take seconds: cubic backtracking).
_SPECIFIER = r"(?:===|==|!=|~=|<=|>=|<|>)\s*[A-Za-z0-9.*+!_-]+"
_REQUIREMENT = re.compile(
    r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?\s*(?:\[[A-Za-z0-9._,\s-]*\]\s*)?"
    rf"(?:\(\s*)?(?:{_SPECIFIER}(?:\s*,\s*{_SPECIFIER})*\s*)?(?:\)\s*)?"
    r"(?:;[^@]*)?"
)
#: An interpreter's name on PATH (never a path: a case file must not name a program of the
#: pull request's own to run on the host).
_PYTHON = re.compile(r"[A-Za-z][A-Za-z0-9._+-]*")


@dataclass(frozen=True)
class EnvironmentSpec:
    """What a case's environment is built from; ``path``/``line`` name where it is declared."""

    python: str | None
    requirements: tuple[str, ...]
    pythonpath: tuple[str, ...]
    install: str | None
    test_command: str | None
    #: whose it is (``case 'x'``), its file and the line of ``environment``: what a
    #: failed build names
    owner: str
    path: Path
    line: int | None

    def key_fields(self) -> dict[str, Any]:
        """What the built environment depends on (with the interpreter's version)."""
        return {
            "python": self.python,
            "requirements": list(self.requirements),
            "pythonpath": list(self.pythonpath),
        }


def _requirements(lines: list[Any], fail: Callable[[str], NoReturn]) -> tuple[str, ...]:
    found = []
    for entry in lines:
        text = entry.strip() if isinstance(entry, str) else entry
        if not isinstance(text, str) or not _REQUIREMENT.fullmatch(text):
            fail(
                f"requirement {entry!r:.80}: expected a package name with optional version "
                "specifiers (text-unidecode==1.3); no path, URL or pip option"
            )
        found.append(text)
    return tuple(found)


def _file_requirements(text: str) -> list[str]:
    lines = (line.split(" #", 1)[0].strip() for line in text.splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def parse_environment(
    raw: Any, owner: str, path: Path, line: int | None, root: Path
) -> EnvironmentSpec:
    """The ``environment`` mapping of ``owner`` (``case 'x'``) at ``path``, checked; a
    mistake names the file and the line of the field. Files are named relative to
    ``path`` and must stay inside ``root``."""

    def fail(message: str, key: str | None = None) -> NoReturn:
        at = line_of(raw, key) if key is not None else line
        raise PromptevalError(f"{owner}: environment: {message}", path, at or line)

    if not isinstance(raw, Mapping):
        fail("expected a mapping (python, requirements, pythonpath, install, test_command)")
    check_keys(raw, ENVIRONMENT_KEYS, path, f"{owner}: environment: ")
    python = raw.get("python")
    if python is not None and (not isinstance(python, str) or not _PYTHON.fullmatch(python)):
        fail(
            f"python {python!r:.80}: expected an interpreter's name on PATH (python3.11)", "python"
        )
    requirements = _environment_requirements(raw, path, root, fail)
    folders = raw.get("pythonpath", [])
    if not isinstance(folders, list) or not all(
        isinstance(f, str) and f and _relative(f) for f in folders
    ):
        fail("pythonpath: expected a list of folders of the repository (src)", "pythonpath")
    texts = {}
    for key in ("install", "test_command"):
        value = raw.get(key)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            fail(f"{key}: expected a shell command", key)
        texts[key] = value
    return EnvironmentSpec(
        python=python,
        requirements=requirements,
        pythonpath=tuple(str(PurePosixPath(f)) for f in folders),
        install=texts["install"],
        test_command=texts["test_command"],
        owner=owner,
        path=path,
        line=line,
    )


def _environment_requirements(
    raw: Mapping[str, Any], path: Path, root: Path, fail: Callable[[str, str], NoReturn]
) -> tuple[str, ...]:
    """The packages ``requirements`` lists, or ``requirements_file`` names (one of them)."""
    if "requirements" in raw and "requirements_file" in raw:
        fail("give requirements or requirements_file, not both", "requirements_file")
    if "requirements" in raw:
        listed = raw["requirements"]
        if not isinstance(listed, list):
            fail("requirements: expected a list of packages", "requirements")

        def fail_listed(message: str) -> NoReturn:
            fail(message, "requirements")

        return _requirements(listed, fail_listed)
    if "requirements_file" in raw:
        name = raw["requirements_file"]
        try:
            text = read_inside(root, name, path.parent)
        except PromptevalError as exc:
            fail(f"requirements_file: {exc.message}", "requirements_file")

        def fail_file(message: str) -> NoReturn:
            fail(f"requirements_file {name}: {message}", "requirements_file")

        return _requirements(_file_requirements(text), fail_file)
    return ()


def _relative(name: str) -> bool:
    parts = PurePosixPath(name).parts
    return not name.startswith("/") and ".." not in parts and "\0" not in name and bool(parts)
