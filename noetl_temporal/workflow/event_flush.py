"""A playbook workflow's events on their way to the event store: batched writes from the
workflow, by a local activity, in order, as they appear.

Events are persisted in batches: when EVENT_BATCH are waiting, when the run closes, or on
the first activation FLUSH_INTERVAL (workflow time) after the last write or the start
(executions started before behaviours.DEFERRED_FIRST_FLUSH wrote their first batch at
once). Persisting after every step cost a local activity per step, and a workflow task
waits for its local activities before it sends its commands, so every step paid the
store's write latency. Live readers query the workflow, so only readers of the store
(no worker answering) see the lag.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from ..conversion.local_only import LocalOnlyList
    from ..engine import behaviours
    from ..engine.event_log import EventLog
    from .patches import PATCH_BATCHED_EVENT_FLUSH
    from .persistence import PERSIST_EVENTS_ACTIVITY, persist_summary

__all__ = ["EventFlusher", "EVENTS_KEPT_IN_MEMORY", "EVENT_BATCH", "MAX_EVENT_BACKLOG", "FLUSH_INTERVAL"]

# Persisted events the workflow still keeps in memory for the ``events`` query; older ones
# are read from the event store. Bounds workflow memory on long executions.
EVENTS_KEPT_IN_MEMORY = 2_000
EVENT_BATCH = 500
# Events waiting for the store past which inline work waits for a write, and the most one
# write takes (behaviours.BOUNDED_EVENT_BACKLOG; before it, one write took EVENT_BATCH).
MAX_EVENT_BACKLOG = 2_500
FLUSH_INTERVAL = timedelta(seconds=2)


class EventFlusher:
    """The workflow's writer to the event store: what is stored (``flushed_seq``), whether
    the store is still used (``persist``: off after repeated failures, or when the worker
    lacks the activity) and the coroutine that writes.

    ``started_with`` says whether the execution's input lists a shell behaviour (the
    workflow's own check, so what the input says is read in one place)."""

    def __init__(self, started_with: Callable[[str], bool]) -> None:
        self._started_with = started_with
        self.flushed_seq = 0      # events up to this seq are in the event store
        self.persist = True
        self.closing = False      # the run is about to close: persist what is left now
        self.next_flush_at = datetime.min.replace(tzinfo=UTC)   # workflow time of the next write

    def start(self, persist: bool, log_of: Callable[[], EventLog],
              unregistered: Callable[[ValueError], None]) -> asyncio.Future[None] | None:
        """Begin writing (when the execution persists its events); the writer, to drain at the close.
        ``log_of`` gives the engine's log once the run has set it up."""
        self.persist = persist
        if self._started_with(behaviours.DEFERRED_FIRST_FLUSH):
            self.next_flush_at = workflow.now() + FLUSH_INTERVAL
        return asyncio.ensure_future(self._write(log_of, unregistered)) if persist else None

    async def _write(self, log_of: Callable[[], EventLog], unregistered: Callable[[ValueError], None]) -> None:
        """Hand new events to the event store, in order, in batches, as they appear."""
        failures = 0
        log = log_of()
        while True:
            await workflow.wait_condition(lambda: self.flushed_seq < log.seq)
            if self._batched():
                await self._gather(log)
            batch = log.since(self.flushed_seq, MAX_EVENT_BACKLOG if self.bounded_backlog() else EVENT_BATCH)
            try:
                await workflow.execute_local_activity(  # (its argument is not in history)
                    PERSIST_EVENTS_ACTIVITY, LocalOnlyList(batch), start_to_close_timeout=timedelta(seconds=30),
                    summary=persist_summary(batch),
                    retry_policy=RetryPolicy(maximum_attempts=3, initial_interval=timedelta(milliseconds=200)))
            except ValueError as err:  # the worker does not register the activity
                unregistered(err)
                return
            except ActivityError as err:
                failures += 1
                workflow.logger.warning("event store write failed (%s); retrying", err.cause or err)
                if failures >= 5:
                    workflow.logger.error("event store unavailable: events stay readable live only")
                    self.persist = False
                    return
                await workflow.sleep(timedelta(seconds=min(2 ** failures, 30)))
                continue
            failures = 0
            self.flushed_seq = batch[-1]["seq"]
            self.next_flush_at = workflow.now() + FLUSH_INTERVAL
            log.forget(self.flushed_seq - EVENTS_KEPT_IN_MEMORY)

    def bounded_backlog(self) -> bool:
        return self.persist and self._started_with(behaviours.BOUNDED_EVENT_BACKLOG)

    def _batched(self) -> bool:
        """Events go to the store in batches: said by the input of executions started since
        ``behaviours.BATCHED_EVENT_FLUSH`` (no history event), else by the patch marker that
        executions recorded before it carry."""
        return self._started_with(behaviours.BATCHED_EVENT_FLUSH) or workflow.patched(PATCH_BATCHED_EVENT_FLUSH)

    async def _gather(self, log: EventLog) -> None:
        """Wait for a full batch, the close of the run, or an activation FLUSH_INTERVAL after
        the last write or the start (before ``behaviours.DEFERRED_FIRST_FLUSH``, the first
        batch went at once, in the first workflow task).

        Checked on activations, with no timer: a timer would add history events to every run.
        """
        await workflow.wait_condition(
            lambda: self.closing or log.seq - self.flushed_seq >= EVENT_BATCH
            or workflow.now() >= self.next_flush_at)

    async def caught_up(self, log: EventLog) -> None:
        """Until the backlog is below ``MAX_EVENT_BACKLOG`` (or the store is given up, which
        the writer does after repeated failures: that also ends this wait)."""
        await workflow.wait_condition(lambda: not self.persist or log.seq - self.flushed_seq < MAX_EVENT_BACKLOG)

    async def drain(self, writer: asyncio.Future[None] | None, log: EventLog) -> None:
        """Before closing: every event is in the store."""
        self.closing = True
        if writer is None or not self.persist:
            return
        # Bounded without a timer: the writer gives up (``persist = False``) after
        # repeated store failures, which also ends this wait.
        await workflow.wait_condition(lambda: self.flushed_seq >= log.seq or not self.persist)
        writer.cancel()
