"""Running generated code: a warm fork server in its own process, one fork per sample.

See ``server.py`` for what is isolated and how, and docs/guides/code.md ("The sandbox")
for what it does not guarantee.
"""

from pytest_prompteval.sandbox.client import SampleReport, Sandbox

__all__ = ["SampleReport", "Sandbox"]
