"""Persist an execution's events as it runs: a local activity writes each new batch.

Local activities run inside the worker that runs the workflow, with a marker in
history instead of a scheduled task, so persisting costs a few milliseconds and no
task-queue round trip. Writes are idempotent, so a retried or replayed flush is harmless.
Each write also feeds the event-store latency and loop-iteration metrics (:mod:`.metrics`).
"""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta
from typing import Any

from temporalio import activity

from ..store.event_store import EventStore
from .metrics import record_events_written

__all__ = ["EventSink", "PERSIST_EVENTS_ACTIVITY", "persist_summary"]

PERSIST_EVENTS_ACTIVITY = "noetl.persist_events"


def persist_summary(batch: list[dict[str, Any]]) -> str:
    """The label of a persist marker in the Temporal UI timeline: bookkeeping, not a task."""
    if not batch:
        return "noetl: store events"
    first, last = batch[0].get("seq"), batch[-1].get("seq")
    return f"noetl: store events {first}–{last}" if first != last else f"noetl: store event {first}"


class EventSink:
    def __init__(self, store: EventStore) -> None:
        self.store = store

    @activity.defn(name=PERSIST_EVENTS_ACTIVITY)
    async def persist_events(self, events: list[dict[str, Any]]) -> int:
        started = time.monotonic()
        written = await asyncio.to_thread(self.store.write, events)
        record_events_written(activity.metric_meter(), events, timedelta(seconds=time.monotonic() - started))
        return written
