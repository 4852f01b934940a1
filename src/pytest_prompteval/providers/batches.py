"""Message Batches through the SDK: one batch of calls sent, polled with progress lines,
cancelled on Ctrl-C, and each answer kept as a recording like any other; a request the
batch did not answer is kept in ``store.batch_failures`` with the reason."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from pytest_prompteval.providers.anthropic import response_from_message
from pytest_prompteval.providers.base import Call, SdkProvider
from pytest_prompteval.providers.store import Store

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
    provider: SdkProvider,
    calls: Sequence[Call],
    progress: Progress,
    poll: float = 5.0,
    max_poll: float = 60.0,
) -> str | None:
    """Send ``calls`` as one batch; record what comes back. Returns the batch id, or None
    when there was nothing to send."""
    by_key = {request.key(context.sample): (request, context) for request, context in calls}
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
        if entry.custom_id not in by_key:
            continue
        request, context = by_key[entry.custom_id]
        if entry.result.type == "succeeded":
            store.record(
                request, context, response_from_message(entry.result.message, 0.0, None, batch=True)
            )
        else:
            store.batch_failures[entry.custom_id] = _describe(entry.result)
    return str(batch.id)
