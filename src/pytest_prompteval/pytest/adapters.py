"""Every internal of another package the plugin relies on, each in one small function.

Each adapter names the versions it was written for. When the internal is missing or its
shape changed, the adapter falls back to something that keeps the run correct (fewer calls
sent ahead, no suite properties) and says so once, in one line.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

# The type ``Item.repr_failure`` returns (pytest 8-9 keep it in ``_pytest._code``): named
# here so that the one private import of a type stays with the other internals.
from _pytest._code.code import TerminalRepr as TerminalRepr

_warned: set[str] = set()


class AdapterWarning(UserWarning):
    """An internal of another package changed; the plugin fell back."""


def _fallback(what: str, consequence: str) -> None:
    if what not in _warned:
        _warned.add(what)
        warnings.warn(AdapterWarning(f"prompteval: {what} not found; {consequence}"), stacklevel=3)


def unknown_ini_keys(config: pytest.Config) -> set[str]:
    """The ini keys the configuration file sets that no plugin registered.

    Written for pytest 8-9, whose ``Config._get_unknown_ini_keys`` pytest uses itself for
    its "unknown config option" warning; empty (no check) when it is missing."""
    found = getattr(config, "_get_unknown_ini_keys", None)
    if found is None:
        _fallback("pytest's Config._get_unknown_ini_keys", "misspelt ini keys are not reported")
        return set()
    return set(found())


def xdist_upcoming(config: pytest.Config, window: int) -> Callable[[], list[int]] | None:
    """Under xdist, a function giving the indices of the items queued next for this worker.

    Written for pytest-xdist 3.x, whose ``WorkerInteractor`` keeps them in ``torun``, a
    queue with a ``lock()`` context. None when this process is not an xdist worker; an
    empty list (no calls sent ahead) when the internal changed.
    """
    if not hasattr(config, "workerinput"):
        return None
    worker = next(
        (p for p in config.pluginmanager.get_plugins() if type(p).__name__ == "WorkerInteractor"),
        None,
    )
    torun = getattr(worker, "torun", None)
    if torun is None or not hasattr(torun, "lock"):
        _fallback("pytest-xdist's worker queue (3.x)", "calls are not sent ahead under -n")
        return lambda: []

    def upcoming() -> list[int]:
        with torun.lock() as queue:
            return [i for i in list(queue)[:window] if isinstance(i, int)]

    return upcoming


def junit_global_property(config: pytest.Config) -> Callable[[str, str], None] | None:
    """``add_global_property`` of pytest's JUnit XML writer (pytest 8-9: ``xml_key`` in
    ``_pytest.junitxml``), or None when no JUnit XML is written."""
    if not getattr(config.option, "xmlpath", None):
        return None
    try:
        from _pytest.junitxml import xml_key
    except ImportError:
        _fallback("pytest's junitxml.xml_key (pytest 8-9)", "suite properties not written")
        return None
    xml = config.stash.get(xml_key, None)
    return None if xml is None else xml.add_global_property


#: Options of the pytest a ``prompteval`` command runs in its own process: no cache, and no
#: assertion rewriting, which would warn that our plugin, imported already, cannot be
#: rewritten (an error under a project's ``filterwarnings = error``).
COMMAND_ONLY = ("-p", "no:cacheprovider", "--assert=plain")


def load_pytest_config(args: Sequence[str]) -> pytest.Config:
    """The project's pytest configuration, found from the working directory (or the
    ``--rootdir`` in ``args``) exactly as ``pytest`` finds it: ini files, addopts, plugins.

    Written for pytest 8-9's ``_pytest.config._prepareconfig``; the caller must call
    ``release_pytest_config``.
    """
    from _pytest.config import _prepareconfig

    return _prepareconfig([*args, *COMMAND_ONLY])


def release_pytest_config(config: pytest.Config) -> None:
    config._ensure_unconfigure()


def rootdir_moved_by(config: pytest.Config, value_options: Sequence[str]) -> str | None:
    """pytest finds the rootdir before plugins add their options, so in
    ``--prompteval-baseline /elsewhere/run.json`` the value counts as a path argument and can
    move the rootdir. Returns the option given that way whose value lies outside the
    rootdir pytest would find without it, else None.

    Written for pytest 9's ``_pytest.config.findpaths.determine_setup``.
    """
    args = list(config.invocation_params.args)
    suspects = [
        (args[i], args[i + 1])
        for i in range(len(args) - 1)
        if args[i] in value_options and not args[i + 1].startswith("-")
    ]
    if not suspects:
        return None
    try:
        from _pytest.config.findpaths import determine_setup
    except ImportError:
        _fallback("pytest's findpaths.determine_setup (pytest 8-9)", "rootdir not checked")
        return None
    dropped = {i + 1 for i in range(len(args) - 1) if args[i] in value_options}
    rest = [a for i, a in enumerate(args) if i not in dropped and not a.startswith("-")]
    try:
        rootpath, *_ = determine_setup(
            inifile=config.option.inifilename,
            override_ini=config.option.override_ini,
            args=rest,
            rootdir_cmd_arg=config.option.rootdir or None,
            invocation_dir=config.invocation_params.dir,
        )
    except Exception:  # an internal of another version: no check rather than a crash
        _fallback("pytest's findpaths.determine_setup (pytest 8-9)", "rootdir not checked")
        return None
    if Path(rootpath) == config.rootpath:
        return None
    return next(f"{option} {value}" for option, value in suspects)


def marker_expression(text: str) -> Callable[[Sequence[str]], bool]:
    """A ``-m``-style expression as a test over a case's markers, with pytest's own grammar
    (pytest 8-9: ``_pytest.mark.expression.Expression``). Raises ValueError when malformed."""
    from _pytest.mark.expression import Expression

    try:
        expression = Expression.compile(text)
    except SyntaxError as exc:
        raise ValueError(f"{exc.msg} at column {exc.offset}") from None

    def matches(markers: Sequence[str]) -> bool:
        names = set(markers)

        def has(name: str, /, **_: str | int | bool | None) -> bool:
            return name in names

        return expression.evaluate(has)

    return matches
