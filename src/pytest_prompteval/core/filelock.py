"""An exclusive lock on an open file, shared by the run's processes (budget, rate limits).

POSIX ``flock`` where the platform has it, Windows' ``msvcrt.locking`` where it has that;
importing this module never fails, so the plugin loads everywhere and only a feature that
needs the lock says what is missing, when it is used.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import IO, Any

from pytest_prompteval.core.errors import PromptevalError


def _module(name: str) -> ModuleType | None:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


_fcntl = _module("fcntl")
_msvcrt = None if _fcntl is not None else _module("msvcrt")


def lock_exclusive(handle: IO[Any], feature: str) -> None:
    """Block until this process holds the lock; it is released when ``handle`` closes."""
    if _fcntl is not None:
        _fcntl.flock(handle, _fcntl.LOCK_EX)
    elif _msvcrt is not None:
        handle.seek(0)
        _msvcrt.locking(handle.fileno(), _msvcrt.LK_LOCK, 1)
    else:
        raise PromptevalError(
            f"{feature} needs file locks (fcntl or msvcrt), which this platform lacks"
        )
