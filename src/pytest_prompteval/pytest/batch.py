"""``--prompteval-batch``: the run's calls as one Message Batch (half price).

Before the first item runs, every request whose recording is missing (or, with
``--prompteval-record all``, every request) goes into one batch, matched back by
``custom_id`` (the recording key). The batch is polled with progress lines, cancelled on
Ctrl-C, and each result is kept as a recording like any other, so the items then replay.
Only the items whose result errored, expired or was cancelled fail, with the reason.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from pytest_prompteval.core.errors import PromptevalError
from pytest_prompteval.core.request import Request
from pytest_prompteval.engine.engine import Engine
from pytest_prompteval.providers.anthropic import AnthropicProvider, response_from_message
from pytest_prompteval.providers.store import Store
from pytest_prompteval.pytest.items import CaseItem

Progress = Callable[[str], None]


def _describe(result: Any) -> str:
    if result.type == "errored":
        error = getattr(result.error, "error", result.error)
        return (
            f"batch request errored: {getattr(error, 'type', 'error')}: "
            f"{getattr(error, 'message', error)}"
        )
    return f"batch request {result.type} (the batch did not answer it)"


def run_batch(
    store: Store,
    provider: AnthropicProvider,
    calls: Sequence[tuple[Request, int]],
    progress: Progress,
    poll: float = 5.0,
    max_poll: float = 60.0,
) -> str | None:
    """Send ``calls`` (request, sample) as one batch; record what comes back. Returns the
    batch id, or None when there was nothing to send."""
    by_key = {request.key(sample): (request, sample) for request, sample in calls}
    if not by_key:
        return None
    client = provider.client()
    batch = client.messages.batches.create(
        requests=[
            {"custom_id": key, "params": request.to_api()} for key, (request, _) in by_key.items()
        ]
    )
    progress(f"prompteval: message batch {batch.id}: {len(by_key)} requests sent")
    try:
        while batch.processing_status != "ended":
            time.sleep(poll)
            poll = min(poll * 2, max_poll)
            batch = client.messages.batches.retrieve(batch.id)
            counts = batch.request_counts
            progress(
                f"prompteval: batch {batch.id} {batch.processing_status}: "
                f"{counts.succeeded} succeeded, {counts.errored} errored, "
                f"{counts.processing} processing"
            )
    except BaseException:
        client.messages.batches.cancel(batch.id)  # Ctrl-C: stop paying for it
        progress(f"prompteval: batch {batch.id} cancelled")
        raise
    for entry in client.messages.batches.results(batch.id):
        request, sample = by_key.get(entry.custom_id, (None, 0))
        if request is None:
            continue
        if entry.result.type == "succeeded":
            store.record(
                request, sample, response_from_message(entry.result.message, 0.0, None, batch=True)
            )
        else:
            store.batch_failures[entry.custom_id] = _describe(entry.result)
    return str(batch.id)


def send_session_batch(session: pytest.Session, engine: Engine, poll: float) -> None:
    """Batch the calls of every item the session will run whose answer is not recorded."""
    provider = engine.store.provider
    if not isinstance(provider, AnthropicProvider):
        raise pytest.UsageError("--prompteval-batch needs the anthropic provider")
    calls = []
    for item in session.items:
        if not isinstance(item, CaseItem):
            continue
        try:
            request = item.prepare()
        except PromptevalError:
            continue  # the item reports it when it runs
        if engine.store.needs_call(request, item.spec.sample):
            calls.append((request, item.spec.sample))
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    run_batch(
        engine.store,
        provider,
        calls,
        reporter.write_line if reporter else print,
        poll=poll,
    )
