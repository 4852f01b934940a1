"""Leave out the terminal summary of hypothesis's pytest plugin in a prompt run that never
used hypothesis.

hypothesis is a dependency (property tests of generated code run in the sandbox), so its
plugin is in every run of this environment, and its terminal summary imports the whole
library even when no test used it: 0.1 s of CPU, and about 0.3 s more where bytecode is not
written (pytest then rewrites each of its modules). That is most of what a one-item run of a
repository task spends beyond plain pytest.
"""

from __future__ import annotations

import sys

import pytest

HYPOTHESIS_PLUGIN = "hypothesispytest"


class IdleHypothesis:
    """Unregisters hypothesis's plugin at the end of a session in which it cannot have
    anything to say: the library was never imported in this process (every report it prints
    comes from its own hooks on a hypothesis test, or from the library's observability
    output), and no ``--hypothesis-*`` option asked for a section of its own."""

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        config = session.config
        manager = config.pluginmanager
        if "hypothesis" in sys.modules or manager.has_plugin("dsession"):
            return  # used here, or a controller of xdist workers that may have used it
        plugin = manager.get_plugin(HYPOTHESIS_PLUGIN)
        if plugin is None or _any_option(config):
            return
        manager.unregister(plugin)


def _any_option(config: pytest.Config) -> bool:
    return any(
        value for name, value in vars(config.option).items() if name.startswith("hypothesis")
    )
