"""Every internal of the ``anthropic`` SDK the plugin relies on, each in one small function.

As ``pytest/adapters.py`` does for pytest's: each adapter names the SDK versions it was
written for, and when the internal is missing or changed shape it falls back to something
that keeps the run correct and says so once, in one line on stderr. Never a Python warning:
these run in the threads that send calls, where pytest's ``filterwarnings = error`` would
make it every item's failure.
"""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.util
import os
import sys
from collections.abc import Mapping
from pathlib import Path


def _fallback(what: str, consequence: str) -> None:
    # xdist workers leave it to the controller, which reads the same SDK
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        print(f"prompteval: warning: {what} not found; {consequence}", file=sys.stderr)


@functools.cache
def deprecated_models(package: str = "anthropic") -> Mapping[str, str]:
    """The models the installed SDK warns about in ``messages.create``, each with its end of
    life. Written for anthropic 0.5x-2.x, which keep them in ``anthropic._data``
    (``DEPRECATED_MODELS``). Read from the module's source when it is not imported yet, as
    importing the SDK takes about a second that a replay never needs; empty when the
    internal is gone (said once), and then the SDK has nothing to warn about either."""
    spec = importlib.util.find_spec(package)
    places = spec.submodule_search_locations if spec is not None else None
    if places:
        source = Path(next(iter(places)), "_data", "deprecated_models.py")
        try:
            tree = ast.parse(source.read_text(encoding="utf-8"))
            for node in tree.body:
                targets: list[ast.expr]
                if isinstance(node, ast.AnnAssign):
                    targets, value = [node.target], node.value
                elif isinstance(node, ast.Assign):
                    targets, value = list(node.targets), node.value
                else:
                    continue
                named = any(
                    isinstance(t, ast.Name) and t.id == "DEPRECATED_MODELS" for t in targets
                )
                found = ast.literal_eval(value) if named and value is not None else None
                if isinstance(found, dict):
                    return {str(k): str(v) for k, v in found.items()}
        except (OSError, SyntaxError, ValueError):
            pass
    try:
        found = getattr(importlib.import_module(f"{package}._data"), "DEPRECATED_MODELS", None)
    except ImportError:
        found = None
    if not isinstance(found, Mapping):
        _fallback(
            f"the {package} SDK's deprecated models ({package}._data, 0.5x-2.x)",
            "deprecated models are not reported",
        )
        return {}
    return dict(found)
