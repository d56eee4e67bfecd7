"""Reading an execution's status and events: live from the workflow, else from the store.

Status follows docs/status.md strictly: only the playbook lifecycle layer decides it.

* Live (the workflow is open and a worker answers): the engine's own execution state.
* Open, no worker answers: what Temporal keeps without one (``client/liveness.py``: the
  pending activities, whether a worker polls) plus the stored lifecycle. A workerless
  execution is never queried (the query would wait for its whole deadline), and one that
  got past its start is RUNNING, never PENDING again: status does not go backwards.
  ``workers_polling`` says how many workers poll its task queue (0: it makes no progress).
* Closed: Temporal's close status plus the persisted terminal lifecycle event
  (``playbook.finished`` / ``execution.cancelled``). Step, task, activity or batch events
  are never consulted. ``completion_inferred`` is true only when a terminal state had to be
  taken from Temporal's close status because no terminal lifecycle event exists (a
  terminated or timed-out workflow, an engine failure).

The answer is exactly the seed's minimal model; never variables.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

from temporalio.client import (
    Client,
    WorkflowExecutionDescription,
    WorkflowExecutionStatus,
    WorkflowQueryFailedError,
)
from temporalio.service import RPCError, RPCStatusCode

from ..engine.event_types import LAST_EVENT_TYPES
from ..engine.status_layers import ExecutionStatus
from ..errors import NotFound
from ..store.event_store import EventStore
from ..store.legacy import expand_types
from .close_status import OPEN_STATUSES, TERMINAL_STATES, WITH_OUTPUT, execution_state
from .control import run_output
from .liveness import Liveness, got_past_start, read_liveness

__all__ = ["read_status", "read_status_view", "read_status_described", "read_events", "follow_events", "STATUS_FIELDS", "state_from_close",
           "QUERY_PAGE", "STATUS_QUERY_TIMEOUT", "EVENTS_QUERY_TIMEOUT"]

# Events asked of the workflow per ``events`` query.
QUERY_PAGE = 1000

# Seed 000's minimal model, and one operational field: the workers polling an open
# execution's task queue (null when closed or unknown). An open execution with approvals
# waiting for a person adds ``waiting``, one with paused steps ``paused_steps``, one with
# fast-path tasks waiting to retry ``retrying`` (docs/approvals.md), only then.
STATUS_FIELDS = ("execution_id", "state", "current_step", "started_at", "ended_at", "terminal_event",
                 "completion_inferred", "workers_polling")

#: a page of events from a live worker, bounded: a lost worker never answers, and a query
#: that fails falls back to the event store (the server's own deadline is about 30 s)
EVENTS_QUERY_TIMEOUT = timedelta(seconds=5)

#: a live worker answers a status query in milliseconds; one that does not within this is
#: treated as absent (the answer then comes from Temporal's description): status stays fast
STATUS_QUERY_TIMEOUT = timedelta(seconds=1.5)


def _status(execution_id: str, state: str, *, current_step: str | None = None, started_at: str | None = None,
            ended_at: str | None = None, terminal_event: str | None = None,
            completion_inferred: bool = False, workers_polling: int | None = None) -> dict[str, Any]:
    return {"execution_id": execution_id, "state": state, "current_step": current_step,
            "started_at": started_at, "ended_at": ended_at, "terminal_event": terminal_event,
            "completion_inferred": completion_inferred, "workers_polling": workers_polling}


def _iso(value: Any) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value is not None else None


def state_from_close(status: WorkflowExecutionStatus | None,
                     terminal: dict[str, Any] | None) -> tuple[str, bool]:
    """(state, completion_inferred) for a closed workflow and its terminal lifecycle event
    (:func:`~noetl_temporal.client.close_status.execution_state`; docs/status.md)."""
    return execution_state(status, _recorded_state(terminal))


def _recorded_state(terminal: dict[str, Any] | None) -> str | None:
    """The state a terminal lifecycle event records."""
    if terminal is None:
        return None
    if terminal["event_type"] == "execution.cancelled":
        return "CANCELLED"
    meta = ((terminal.get("payload") or {}).get("meta") or {})
    return str(meta.get("status") or ("COMPLETED" if terminal.get("status") == "success" else "FAILED"))


def _not_found(exc: RPCError) -> bool:
    return exc.status == RPCStatusCode.NOT_FOUND


async def read_status(client: Client | None, execution_id: str, store: EventStore | None = None) -> dict[str, Any]:
    """The status of one execution (the CLI's ``status`` and the API's ``/status`` and detail)."""
    status, _ = await read_status_view(client, execution_id, store)
    return status


async def read_status_view(client: Client | None, execution_id: str,
                           store: EventStore | None = None) -> tuple[dict[str, Any], Liveness | None]:
    """The status, and for an open execution what Temporal knows of it without a worker
    (its pending tasks, for a caller that explains why nothing moves)."""
    status, liveness, _ = await read_status_described(client, execution_id, store)
    return status, liveness


async def read_status_described(
        client: Client | None, execution_id: str, store: EventStore | None = None,
) -> tuple[dict[str, Any], Liveness | None, WorkflowExecutionDescription | None]:
    """:func:`read_status_view`, and Temporal's description it read (None: Temporal does not
    know the execution), for a caller that needs more of it (the API's detail describes once)."""
    lifecycle = await asyncio.to_thread(store.lifecycle, execution_id) if store else None
    description = None
    if client is not None:
        try:
            description = await client.get_workflow_handle(execution_id).describe()
        except RPCError as exc:
            if not _not_found(exc):
                raise
    if description is None:
        if lifecycle is None:
            raise NotFound(f"no execution {execution_id!r}",
                           fix="check the id (noetl-temporal run prints it) and the Temporal address")
        return _from_lifecycle(execution_id, lifecycle), None, None
    assert client is not None   # (a description came from it)
    if description.status in OPEN_STATUSES:
        liveness = await read_liveness(client, description)
        return await _open_status(client, execution_id, description, liveness, lifecycle), liveness, description
    terminal = lifecycle["terminal"] if lifecycle else None
    if terminal is None and description.status in WITH_OUTPUT:
        terminal = await _terminal_from_result(client, execution_id, description.run_id)
    state, inferred = state_from_close(description.status, terminal)
    return _status(execution_id, state,
                   current_step=lifecycle["current_step"] if lifecycle else None,
                   started_at=(lifecycle or {}).get("started_at") or _iso(description.start_time),
                   ended_at=terminal["timestamp"] if terminal else _iso(description.close_time),
                   terminal_event=terminal["event_type"] if terminal else None,
                   completion_inferred=inferred), None, description


async def _open_status(client: Client, execution_id: str, description: WorkflowExecutionDescription,
                       liveness: Liveness, lifecycle: dict[str, Any] | None) -> dict[str, Any]:
    """The workflow's own answer when a worker gives it in time, else Temporal's evidence."""
    polling = liveness.workers_polling
    if polling:  # never a query nobody can answer: it would wait out its whole deadline
        try:
            live = await client.get_workflow_handle(execution_id).query("status", rpc_timeout=STATUS_QUERY_TIMEOUT)
        except (RPCError, WorkflowQueryFailedError):
            live = None  # no worker answered in time: what Temporal and the store know
        if live is not None:
            status = _status(execution_id, live["state"], current_step=live.get("current_step"),
                             started_at=live.get("started_at"), ended_at=live.get("ended_at"),
                             terminal_event=live.get("terminal_event"), workers_polling=polling)
            if live.get("waiting"):   # approve tasks waiting for a person (docs/approvals.md)
                status["waiting"] = live["waiting"]
            if live.get("paused_steps"):   # steps an operator paused (docs/approvals.md)
                status["paused_steps"] = live["paused_steps"]
            if live.get("retrying"):   # fast-path tasks waiting out a backoff (docs/approvals.md)
                status["retrying"] = live["retrying"]
            return status
    if lifecycle is not None and lifecycle.get("terminal") is not None:
        return {**_from_lifecycle(execution_id, lifecycle), "workers_polling": polling}
    started = bool(lifecycle and lifecycle.get("started")) or await got_past_start(client, description)
    return _status(execution_id, "RUNNING" if started else "PENDING",
                   current_step=liveness.current_step or (lifecycle or {}).get("current_step"),
                   started_at=(lifecycle or {}).get("started_at") or _iso(description.start_time),
                   workers_polling=polling)


async def _terminal_from_result(client: Client, execution_id: str, run_id: str | None) -> dict[str, Any] | None:
    """The workflow's result records its terminal lifecycle event (readable without a worker;
    a closed run's output is read once and kept)."""
    output = await run_output(client, execution_id, run_id)
    if output is None or not output.terminal_event:
        return None
    return {"event_type": output.terminal_event, "timestamp": output.ended_at,
            "status": "success" if output.state == ExecutionStatus.COMPLETED else "error",
            "payload": {"meta": {"status": output.state.value}}}


def _from_lifecycle(execution_id: str, lifecycle: dict[str, Any]) -> dict[str, Any]:
    terminal = lifecycle.get("terminal")
    if terminal is not None:
        return _status(execution_id, str(_recorded_state(terminal)), current_step=lifecycle.get("current_step"),
                       started_at=lifecycle.get("started_at"), ended_at=terminal.get("timestamp"),
                       terminal_event=terminal["event_type"])
    state = "RUNNING" if lifecycle.get("started") else "PENDING"
    return _status(execution_id, state, current_step=lifecycle.get("current_step"),
                   started_at=lifecycle.get("started_at"))


async def read_events(client: Client | None, execution_id: str, *, store: EventStore | None = None,
                      after_seq: int = 0, limit: int = 100, types: list[str] | None = None,
                      entity: str | None = None, live: bool | None = None) -> list[dict[str, Any]]:
    """Events with ``seq > after_seq``, filtered, at most ``limit``, in ``seq`` order.

    A closed workflow is read from the store (a query would make a worker replay its whole
    history). An open one: the store for what the workflow has forgotten, then the workflow
    for the tail. ``live`` says whether the workflow is open when the caller knows (it saves
    a ``describe``); a failed query (no worker, a worker that could not rebuild the workflow)
    falls back to the store.
    """
    expand_types(types)  # validate names early: a typo is a clear error, not an empty list
    if live is None:
        live = await _live_open(client, execution_id)
    if live is not True and store is not None:  # closed, unknown to Temporal, or no Temporal at all
        stored = await asyncio.to_thread(store.read, execution_id, after_seq=after_seq, limit=limit,
                                         types=types, entity=entity)
        if stored or await asyncio.to_thread(store.last_seq, execution_id) is not None:
            return stored
    if client is None:
        raise NotFound(f"no execution {execution_id!r} in the event store",
                       fix="pass --address to ask Temporal, or --event-store to read another store")
    try:
        if store is not None:
            # The store holds a gap-free prefix of the log (flushed in order), including
            # events of earlier runs of a continued-as-new execution, which the live
            # workflow no longer keeps in memory. Read that prefix, then ask the workflow.
            last_seq = await asyncio.to_thread(store.last_seq, execution_id)
            if last_seq is not None and last_seq > after_seq:
                head = await asyncio.to_thread(store.read, execution_id, after_seq=after_seq, limit=limit,
                                               types=types, entity=entity)
                if len(head) >= limit:
                    return head
                tail = await _query_events(client, execution_id, last_seq, limit - len(head),
                                           types, entity, store)
                return head + tail
        return await _query_events(client, execution_id, after_seq, limit, types, entity, store)
    except (RPCError, WorkflowQueryFailedError) as exc:
        if isinstance(exc, RPCError) and _not_found(exc):
            raise NotFound(f"no execution {execution_id!r}") from None
        if store is not None:  # no worker could answer the query: what the store has
            return await asyncio.to_thread(store.read, execution_id, after_seq=after_seq, limit=limit,
                                           types=types, entity=entity)
        raise


async def _live_open(client: Client | None, execution_id: str) -> bool | None:
    """True if the workflow is open, False if closed or unknown to Temporal, None without client."""
    if client is None:
        return None
    try:
        desc = await client.get_workflow_handle(execution_id).describe()
    except RPCError as exc:
        if _not_found(exc):
            return False
        raise
    return desc.status in OPEN_STATUSES


async def _query_events(client: Client, execution_id: str, after_seq: int, limit: int,
                        types: list[str] | None, entity: str | None,
                        store: EventStore | None = None) -> list[dict[str, Any]]:
    expanded = expand_types(types)
    wanted, status = expanded if expanded else (None, {})
    handle = client.get_workflow_handle(execution_id)
    out: list[dict[str, Any]] = []
    cursor = after_seq
    while len(out) < limit:
        batch = await handle.query("events", args=[cursor, QUERY_PAGE], rpc_timeout=EVENTS_QUERY_TIMEOUT)
        if not batch:
            break
        full = len(batch) == QUERY_PAGE
        if batch[0]["seq"] > cursor + 1 and store is not None:
            # Persisted and forgotten by the workflow (it keeps a bounded tail in memory)
            # since the store was read: the gap is in the store now.
            gap = await asyncio.to_thread(store.read, execution_id, after_seq=cursor,
                                          limit=batch[0]["seq"] - cursor - 1)
            batch = [e for e in gap if e["seq"] < batch[0]["seq"]] + batch
        for event in batch:
            if wanted is not None and event["event_type"] not in wanted:
                continue
            if entity is not None and event.get("entity_id") != entity:
                continue
            if status.get(event["event_type"]) not in (None, event.get("status")):
                continue
            out.append(event)
            if len(out) >= limit:
                break
        cursor = batch[-1]["seq"]
        if not full:  # the workflow has nothing after this yet
            break
    return out


async def follow_events(client: Client | None, execution_id: str, *, store: EventStore | None = None,
                        after_seq: int = 0, types: list[str] | None = None, entity: str | None = None,
                        poll_s: float = 0.2) -> AsyncIterator[dict[str, Any]]:
    """Yield events as they happen; ends after the terminal lifecycle event."""
    expanded = expand_types(types)  # once, not per event
    cursor = after_seq
    while True:
        try:
            batch = await read_events(client, execution_id, store=store, after_seq=cursor, limit=500)
        except WorkflowQueryFailedError:  # a worker could not answer this time: ask again
            batch = []
        for event in batch:
            cursor = event["seq"]
            if _matches(event, expanded, entity):
                yield event
            if event["event_type"] in LAST_EVENT_TYPES:
                return
        if not batch:
            status = await read_status(client, execution_id, store)
            if status["state"] in TERMINAL_STATES and status["terminal_event"] is None:
                return
            await asyncio.sleep(poll_s)


def _matches(event: dict[str, Any], expanded: tuple[set[str], dict[str, str]] | None, entity: str | None) -> bool:
    if expanded is not None:
        wanted, status = expanded
        if event["event_type"] not in wanted or status.get(event["event_type"]) not in (None, event.get("status")):
            return False
    return entity is None or event.get("entity_id") == entity
