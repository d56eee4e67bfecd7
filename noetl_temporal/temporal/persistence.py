"""Persist an execution's events as it runs: a local activity writes each new batch.

Local activities run inside the worker that runs the workflow, with a marker in
history instead of a scheduled task, so persisting costs a few milliseconds and no
task-queue round trip. Writes are idempotent, so a retried or replayed flush is harmless.
"""

from __future__ import annotations

import asyncio
from typing import Any

from temporalio import activity

from ..store.events import EventStore

__all__ = ["EventSink", "PERSIST_EVENTS_ACTIVITY"]

PERSIST_EVENTS_ACTIVITY = "noetl.persist_events"


class EventSink:
    def __init__(self, store: EventStore) -> None:
        self.store = store

    @activity.defn(name=PERSIST_EVENTS_ACTIVITY)
    async def persist_events(self, events: list[dict[str, Any]]) -> int:
        return await asyncio.to_thread(self.store.write, events)
