"""The sandbox seam: code runs in the sandboxes a ``SandboxProvider`` makes, as many at once as
it runs and no faster than it may make them."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import cast

import pytest

from pytest_prompteval.sandbox.client import Limits, SandboxUnavailable
from pytest_prompteval.sandbox.pool import SandboxPool
from pytest_prompteval.sandbox.provider import (
    CodeSandbox,
    Early,
    NamespaceSandboxes,
    Pacing,
    RepoSandbox,
)
from pytest_prompteval.scoring.code.spec import CodeSpec, CodeTest

RETURNS_ONE = CodeSpec(entry_point="f", tests=(CodeTest("args", []),)).job(
    "def f():\n    return 1\n"
)


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)


def test_pacing_spaces_each_making_by_the_rate_and_none_waits_without_one() -> None:
    clock = FakeClock()
    pacing = Pacing(4.0, clock, clock.sleep)
    for _ in range(3):  # three at once: the second waits a quarter second, the third a half
        pacing.wait()
    assert clock.slept == [0.25, 0.5]
    clock.now += 10  # long after: the next is made at once
    pacing.wait()
    assert clock.slept == [0.25, 0.5]
    unpaced = Pacing(None, clock, clock.sleep)
    for _ in range(3):
        unpaced.wait()
    assert clock.slept == [0.25, 0.5]


class CountedSandboxes(NamespaceSandboxes):
    """Another provider: this machine's sandboxes, each one it makes counted, made at most
    two a second."""

    def __init__(self, concurrency: int) -> None:
        super().__init__(concurrency=concurrency)
        self.creation_rate = 2.0
        self.made: list[list[str]] = []

    def code_sandbox(self, hidden: Sequence[str | os.PathLike[str]] = ()) -> CodeSandbox:
        self.made.append([os.fspath(h) for h in hidden])
        return super().code_sandbox(hidden)


def test_the_pool_runs_on_the_providers_sandboxes_as_many_as_it_runs_at_once() -> None:
    sandboxes = CountedSandboxes(concurrency=3)
    clock = FakeClock()
    pool = SandboxPool(sandboxes, ["/project"], pacing=Pacing(2.0, clock, clock.sleep))
    try:
        assert pool.workers == 3
        report = pool.run(RETURNS_ONE, Limits())
        assert report.exit_code == 0 and report.tests[0]["output"] == 1
    finally:
        pool.close()
    assert sandboxes.made == [["/project"]] * 3
    assert sorted(clock.slept) == [0.5, 1.0]  # the three made half a second apart


def test_the_pool_paces_by_the_providers_own_rate() -> None:
    pool = SandboxPool(CountedSandboxes(concurrency=1))
    assert pool._pacing.gap == 0.5
    assert SandboxPool(NamespaceSandboxes(concurrency=1))._pacing.gap == 0.0


class Made:
    """A sandbox that only knows whether it was closed."""

    closed = False

    def close(self) -> None:
        self.closed = True


def test_an_early_sandbox_is_closed_when_never_taken_and_its_making_error_is_the_takers() -> None:
    made = Made()
    early = Early(lambda: cast(RepoSandbox, made))
    early.discard()  # the agent's part failed: the verdict's sandbox is not left running
    assert made.closed
    taken = Made()
    early = Early(lambda: cast(RepoSandbox, taken))
    assert early.take() is cast(RepoSandbox, taken)
    early.discard()  # taken: the verdict closes it, not this
    assert not taken.closed

    def refused() -> RepoSandbox:
        raise SandboxUnavailable("no namespaces here")

    early = Early(refused)
    with pytest.raises(SandboxUnavailable, match="no namespaces here"):
        early.take()
    early.discard()
