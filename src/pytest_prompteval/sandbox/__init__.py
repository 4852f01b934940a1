"""Running generated code and repositories' commands in sandboxes a ``SandboxProvider``
makes (``provider.py``); this machine's: a warm fork server in its own process, one fork
per sample, and a server over each repository copy.

See ``server.py`` for what is isolated and how, and docs/guides/code.md ("The sandbox")
for what it does not guarantee.
"""

from pytest_prompteval.sandbox.client import SampleReport, Sandbox

__all__ = ["SampleReport", "Sandbox"]
