"""What every sandbox server does before it isolates itself: take hold of pytest (a pidfd,
``watch_parent``) and decide what of the host its root shows (``view``).

Its own module, light to import: a repository task's server (``workspace_server``) starts
twice per item and needs these two functions of the code samples' server, not the rest.
"""

from __future__ import annotations

import os
import site
import sys
import sysconfig

from pytest_prompteval.sandbox.isolation import SYSTEM, WRITABLE, View, within

#: Folders of installed packages: what a sample may import beyond the standard library.
SITE_DIRS = ("site-packages", "dist-packages")


def _installed(entry: str, interpreter: list[str], hidden: list[str]) -> bool:
    """Whether an import-path entry is the interpreter's or installed packages, not a
    project's folder (pytest puts the rootdir there): one in a hidden folder only as a
    site-packages of an environment there (``.venv``)."""
    real = os.path.realpath(entry)
    if os.path.basename(real) in SITE_DIRS:
        return not any(within(h, real) for h in hidden)
    return not any(within(real, h) or within(h, real) for h in hidden) and any(
        within(real, top) for top in interpreter
    )


def view(hidden: list[str]) -> tuple[View, list[str]]:
    """What a sample sees, and the import path it keeps: the system, the interpreter and
    its packages; ``hidden`` (the project's folders, from the client) and every other
    entry of the import path covered where something shown holds them."""
    paths = sysconfig.get_paths()
    interpreter = [
        os.path.realpath(p)
        for p in (
            sys.prefix,
            sys.base_prefix,
            sys.exec_prefix,
            sys.base_exec_prefix,
            paths["stdlib"],
            paths["platstdlib"],
            *site.getsitepackages(),
        )
    ]
    hidden = [os.path.realpath(h) for h in hidden]
    kept = [p for p in sys.path if p and os.path.exists(p) and _installed(p, interpreter, hidden)]
    # the interpreter's own folder stays (pytest's script puts it first on the import
    # path): a repository task's shell finds ``python`` there
    programs = os.path.dirname(sys.executable)
    dropped = [p for p in sys.path if p and os.path.isdir(p) and p not in (*kept, programs)]
    shown = [p for p in (*SYSTEM, *interpreter, *kept) if os.path.exists(p)]
    return View(
        shown=tuple(shown),
        hidden=tuple(hidden + dropped),
        links=(*SYSTEM, *WRITABLE, *shown, sys.executable),
    ), kept


def watch_parent() -> int | None:
    """A pidfd on pytest, which every wait of the server watches, so that neither the
    server nor a sample outlives the pytest that asked for them (killed or not)."""
    parent = os.getppid()
    try:
        handle = os.pidfd_open(parent)
    except (AttributeError, OSError):  # before Linux 5.3: stdin's end still ends it idle
        return None
    if os.getppid() != parent:  # pytest ended before the pidfd was taken
        os._exit(1)
    return handle
