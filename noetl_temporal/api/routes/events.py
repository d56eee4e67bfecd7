"""Canonical events: paged reads (``/events``) and a live server-sent-event stream (``/events/stream``).

Why SSE: a browser or ``curl -N`` follows a run with nothing but HTTP; each event's
``seq`` is its SSE ``id``, so a client that reconnects with ``Last-Event-ID`` resumes
exactly after the last event it saw. The stream ends after the terminal event.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, Query
from fastapi.responses import StreamingResponse
from temporalio.client import Client

from noetl_temporal.client.observe import follow_events, read_events, read_status

from ..admission import admitted
from ..deps import ClientDep, ExecutionId, SettingsDep
from ..errors import responses
from ..models import EventPage, EventTypeName

router = APIRouter(tags=["events"])

Types = Annotated[list[EventTypeName] | None, Query(
    alias="type", description="event types to keep: canonical (step.done), a prefix (task.*) or a legacy "
                              "name (step.exit); repeat the parameter for several")]


def _types(values: list[str] | None) -> list[str] | None:
    return list(values) if values else None


@router.get("/executions/{execution_id}/events", response_model=EventPage, responses=responses(404, 422, 503),
            summary="Canonical events in seq order, filtered and paged", dependencies=[Depends(admitted)])
async def events(
    execution_id: ExecutionId,
    client: ClientDep,
    settings: SettingsDep,
    types: Types = None,
    entity: Annotated[str | None, Query(max_length=500, description="only events about this entity (a step name...)")] = None,
    after_seq: Annotated[int, Query(ge=0, le=2**31 - 1, description="return events with seq greater than this")] = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> EventPage:
    wanted = _types(types)
    store = settings.event_store
    await read_status(client, execution_id, store)  # 404 for unknown ids, even when no event matches
    batch = await read_events(client, execution_id, store=store, after_seq=after_seq, limit=limit,
                              types=wanted, entity=entity)
    # model_validate: the store's dicts become Event models (validated, as the constructor would)
    return EventPage.model_validate({"execution_id": execution_id, "events": batch,
                                     "next_after_seq": batch[-1]["seq"] if len(batch) == limit else None})


def _sse(event: dict[str, Any]) -> str:
    data = json.dumps(event, default=str, separators=(",", ":"))
    return f"id: {event.get('seq')}\nevent: {event.get('event_type')}\ndata: {data}\n\n"


async def _stream(client: Client, store: Any, execution_id: str, after_seq: int, types: list[str] | None,
                  entity: str | None, keepalive_s: float) -> AsyncIterator[str]:
    queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue(maxsize=256)

    async def pump() -> None:
        try:
            async for event in follow_events(client, execution_id, store=store, after_seq=after_seq,
                                             types=types, entity=entity):
                await queue.put(("event", event))
            await queue.put(("end", None))
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # tell the client, then end the stream
            await queue.put(("error", f"{type(exc).__name__}: {exc}"))

    task = asyncio.ensure_future(pump())
    try:
        yield "retry: 2000\n\n"
        while True:
            try:
                kind, item = await asyncio.wait_for(queue.get(), timeout=keepalive_s)
            except TimeoutError:
                yield ": keep-alive\n\n"
                continue
            if kind == "event":
                yield _sse(item)
            elif kind == "end":
                yield "event: end\ndata: {}\n\n"
                return
            else:
                yield f"event: error\ndata: {json.dumps({'detail': item})}\n\n"
                return
    finally:
        task.cancel()
        with contextlib.suppress(BaseException):
            await task


@router.get("/executions/{execution_id}/events/stream", response_class=StreamingResponse,
            responses={200: {"content": {"text/event-stream": {"schema": {"type": "string"}}},
                             "description": "SSE: `id` = seq, `event` = event_type, `data` = the envelope; "
                                            "a final `end` event after the terminal event"},
                       **responses(404, 422, 503)},
            summary="Follow events live (server-sent events) until the execution ends")
async def stream(
    execution_id: ExecutionId,
    client: ClientDep,
    settings: SettingsDep,
    types: Types = None,
    entity: Annotated[str | None, Query(max_length=500, description="only events about this entity")] = None,
    after_seq: Annotated[int, Query(ge=0, le=2**31 - 1)] = 0,
    last_event_id: Annotated[str | None, Header(alias="Last-Event-ID", max_length=32,
                                       description="resume after this seq (sent by reconnecting clients)")] = None,
) -> StreamingResponse:
    wanted = _types(types)
    await read_status(client, execution_id, settings.event_store)  # a 404 before the stream starts
    if last_event_id and last_event_id.strip().isdigit():
        after_seq = max(after_seq, min(int(last_event_id.strip()), 2**31 - 1))
    return StreamingResponse(_stream(client, settings.event_store, execution_id, after_seq, wanted, entity,
                                     settings.stream_keepalive_s),
                             media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
