"""TEMPORARY stand-in for ``noetl_temporal.observe`` (the lead is writing it).

Same signatures; reads only the workflow's own queries plus Temporal's description, so
closed executions other than COMPLETED need a worker to answer. Delete this file once
``noetl_temporal/observe.py`` lands: ``api/observe.py`` then imports the real module.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

from noetl_temporal.temporal import control

TERMINAL_EVENTS = frozenset({"playbook.finished", "playbook.completed", "playbook.failed", "execution.cancelled"})
_BATCH = 1000


async def read_status(client: Any, execution_id: str, store: Any = None) -> dict[str, Any]:
    info = await control.describe(client, execution_id)
    handle = client.get_workflow_handle(execution_id)
    live: dict[str, Any] | None = None
    try:
        live = await handle.query("status", rpc_timeout=timedelta(seconds=3 if info.closed else 10))
    except Exception:
        live = None
    if not info.closed and live:
        state, inferred = live.get("state") or "RUNNING", False
    elif live and live.get("terminal_event"):
        state, inferred = info.state, False
    else:
        state, inferred = info.state, info.closed  # from Temporal's close status only
    live = live or {}
    return {"execution_id": execution_id, "state": state, "current_step": live.get("current_step"),
            "started_at": live.get("started_at") or info.started_at,
            "ended_at": live.get("ended_at") or info.ended_at,
            "terminal_event": live.get("terminal_event"), "completion_inferred": inferred}


def _matches(event: dict[str, Any], types: set[str] | None, entity: str | None) -> bool:
    if types and event.get("event_type") not in types and event.get("event_alias") not in types:
        return False
    return entity is None or event.get("entity_id") == entity


async def read_events(client: Any, execution_id: str, *, store: Any = None, after_seq: int = 0,
                      limit: int = 100, types: list[str] | None = None,
                      entity: str | None = None) -> list[dict[str, Any]]:
    info = await control.describe(client, execution_id)
    handle = client.get_workflow_handle(execution_id)
    wanted = set(types) if types else None
    out: list[dict[str, Any]] = []
    cursor = max(after_seq, 0)
    timeout = timedelta(seconds=3 if info.closed else 10)
    while len(out) < limit:
        try:
            batch = await handle.query("events", args=[cursor, _BATCH], rpc_timeout=timeout)
        except Exception:
            break
        if not batch:
            break
        out.extend(e for e in batch if _matches(e, wanted, entity))
        cursor = batch[-1]["seq"]
        if len(batch) < _BATCH:
            break
    return out[:limit]


async def follow_events(client: Any, execution_id: str, *, store: Any = None, after_seq: int = 0,
                        types: list[str] | None = None, poll_s: float = 0.2) -> AsyncIterator[dict[str, Any]]:
    cursor = after_seq
    wanted = set(types) if types else None
    while True:
        info = await control.describe(client, execution_id)
        batch = await read_events(client, execution_id, after_seq=cursor, limit=_BATCH)
        for event in batch:
            cursor = event["seq"]
            if _matches(event, wanted, None):
                yield event
            if event.get("event_type") in TERMINAL_EVENTS:
                return
        if info.closed and not batch:
            return
        if not batch:
            await asyncio.sleep(poll_s)
