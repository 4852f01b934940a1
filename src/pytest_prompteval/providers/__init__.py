"""Providers send a Request and return a Response; the Store sits in front of every one."""

from pytest_prompteval.providers.base import CallContext, Provider

__all__ = ["CallContext", "Provider"]
