"""Every standard-library module the parent interpreter can import, a sample can import too,
as root (the sample runs as ``nobody``, here with Python under the root-only ``/root``) and
as an unprivileged user; and a module a sample could not read fails the start loudly."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from pytest_prompteval.sandbox.harness import SIDE_EFFECTS
from pytest_prompteval.sandbox.isolation import Isolation
from pytest_prompteval.sandbox.server import self_check

IMPORT_ALL = """
import importlib, sys
def f(names):
    failed = []
    for name in names:
        try:
            importlib.import_module(name)
        except BaseException as exc:
            failed.append(f"{name}: {type(exc).__name__}: {exc}")
    return failed
"""

LIST_IMPORTABLE = f"""
import contextlib, importlib, io, json, sys
found = []
for name in sorted(sys.stdlib_module_names - set({sorted(SIDE_EFFECTS)!r})):
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            importlib.import_module(name)
    except BaseException:
        continue
    found.append(name)
print(json.dumps(found))
"""


def importable(python: str, env: dict[str, str], user: int | None) -> list[str]:
    """The standard-library modules ``python`` can import, run as ``user``."""
    done = subprocess.run(
        [python, "-c", LIST_IMPORTABLE],
        env=env,
        user=user,
        group=user,
        extra_groups=[] if user is not None else None,
        capture_output=True,
        text=True,
        check=True,
    )
    names: list[str] = json.loads(done.stdout)
    return names


def sample_imports(names: list[str]) -> list[str]:
    """In a sandbox: the modules a sample failed to import, with why."""
    from pytest_prompteval.sandbox.client import Limits, Sandbox
    from pytest_prompteval.scoring.code.spec import CodeSpec, CodeTest

    spec = CodeSpec(entry_point="f", tests=(CodeTest("args", [names], expected=[]),))
    box = Sandbox()
    try:
        run = box.run(spec.job(IMPORT_ALL), Limits(timeout=20.0, memory_mb=2048, processes=4))
    finally:
        box.close()
    event = run.tests.get(0, {})
    if "output" not in event:
        return [f"no result: {run}"]
    failed: list[str] = event["output"]
    return failed


def test_a_sample_imports_the_whole_standard_library_as_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("the root mode needs root")
    names = importable(sys.executable, dict(os.environ), None)
    assert len(names) > 150
    assert sample_imports(names) == []


def test_a_sample_imports_the_whole_standard_library_unprivileged() -> None:
    from .test_sandbox_hostile import interpreter_for, run_script  # not when run as a script

    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    python, user = interpreter_for(env, unprivileged=True)
    names = importable(python, env, user)
    assert run_script([python, __file__, json.dumps(names)], env, user) == []


def test_a_module_a_sample_cannot_read_fails_the_start_naming_it_and_the_fix() -> None:
    with tempfile.TemporaryDirectory() as directory:
        module = Path(directory) / "hidden.py"
        module.write_text("")
        module.chmod(0)
        mode = "root" if os.geteuid() == 0 else "none"
        problem = self_check({"hidden": str(module)}, Isolation(mode=mode))
    assert problem is not None
    assert "standard-library module hidden" in problem
    assert "chmod -R o+rX" in problem


if __name__ == "__main__":
    from pytest_prompteval.sandbox.client import SandboxUnavailable

    try:
        print(json.dumps(sample_imports(json.loads(sys.argv[1]))))
    except SandboxUnavailable as exc:
        print(exc)
        sys.exit(3)
