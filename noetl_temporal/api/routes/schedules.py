"""Playbook schedules: ``/schedules``, ``/{name}`` and its pause, unpause, trigger and backfill.

Why thin: the behaviour lives in ``noetl_temporal.client.schedules`` (the CLI's
``schedule`` command uses the same functions): real Temporal Schedules, whose runs are
started exactly as ``POST /executions`` starts one (docs/schedules.md).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated

from fastapi import APIRouter, Body, Path, Request, Response
from fastapi.concurrency import run_in_threadpool

from noetl_temporal.client import schedules
from noetl_temporal.engine.payload_size import PAYLOAD_FIX, payload_refusal
from noetl_temporal.store.catalog import Catalog

from ..deps import ClientDep, LinkDep, SettingsDep
from ..errors import responses
from ..limits import TooLarge, check_expanded
from ..models import (
    SCHEDULE_NAME_PATTERN,
    BackfillSchedule,
    CreateSchedule,
    ScheduleAccepted,
    ScheduleDetail,
    ScheduleInline,
    ScheduleList,
    ScheduleNote,
    ScheduleSummary,
    TriggerSchedule,
)
from ..playbooks import load_for_start

router = APIRouter(tags=["schedules"])

ScheduleName = Annotated[str, Path(pattern=SCHEDULE_NAME_PATTERN, description="the schedule's name")]


def _duration(value: str | float | None, what: str) -> timedelta | None:
    return schedules.parse_duration(value, what) if value is not None else None


@router.post("/schedules", status_code=201, response_model=ScheduleDetail,
             responses=responses(404, 409, 413, 422, 503),
             summary="Create a schedule (a Temporal Schedule) running a playbook on cron expressions or an interval")
async def create(body: CreateSchedule, request: Request, response: Response, link: LinkDep,
                 settings: SettingsDep) -> ScheduleDetail:
    version: int | None = None
    if isinstance(body, ScheduleInline):
        text, source, label = body.playbook, "inline", "<request>"
    else:
        catalog: Catalog = request.app.state.catalog
        entry = await run_in_threadpool(catalog.get_entry, body.path, body.version)
        text, version, label = entry["content"], entry["version"], entry["path"]
        source = f"catalog:{entry['path']}@{version}"
    loaded = await load_for_start(request.app.state.playbooks, text, label)   # PlaybookInvalid -> 422, located
    check_expanded(settings.max_body_bytes, measured={"playbook": loaded.expanded}, payload=body.payload)
    refused = payload_refusal(body.payload, "the request's payload")
    if refused is not None:
        raise TooLarge(f"{refused}: {PAYLOAD_FIX}")
    if not body.cron and body.every is None:
        raise schedules.ScheduleInvalid(f"schedule {body.name!r} has no times",
                                        fix="give `cron` (a list of expressions) or `every` (a duration)")
    client = await link.client()
    described = await schedules.create_schedule(
        client, body.name, loaded.playbook, cron=body.cron, every=_duration(body.every, "every"),
        payload=body.payload, task_queue=settings.queue, source=source, version=version, overlap=body.overlap,
        catchup_window=_duration(body.catchup_window, "catchup_window"), jitter=_duration(body.jitter, "jitter"),
        paused=body.paused, note=body.note, search_attributes=await link.path_attribute(),
        execution_timeout_s=settings.execution_timeout_s, heartbeat_timeout_s=settings.heartbeat_timeout_s,
        definition=loaded.definition, digest=loaded.digest, time_zone=body.time_zone)
    response.headers["Location"] = f"/schedules/{body.name}"
    return ScheduleDetail(**described)


@router.get("/schedules", response_model=ScheduleList, responses=responses(503),
            summary="List the playbook schedules of the namespace, by name (Temporal visibility: a new one can "
                    "take a moment to appear)")
async def list_all(client: ClientDep) -> ScheduleList:
    return ScheduleList(items=[ScheduleSummary(**item) for item in await schedules.list_schedules(client)])


@router.get("/schedules/{name}", response_model=ScheduleDetail, responses=responses(404, 503),
            summary="A schedule: its pinned playbook (name, version, sha256), times, policies, recent and next runs")
async def describe(name: ScheduleName, client: ClientDep) -> ScheduleDetail:
    return ScheduleDetail(**await schedules.describe_schedule(client, name))


@router.post("/schedules/{name}/pause", response_model=ScheduleDetail, responses=responses(404, 413, 422, 503),
             summary="Pause a schedule: no runs start until it is unpaused")
async def pause(name: ScheduleName, client: ClientDep,
                body: Annotated[ScheduleNote | None, Body()] = None) -> ScheduleDetail:
    return ScheduleDetail(**await schedules.pause_schedule(client, name, (body or ScheduleNote()).note))


@router.post("/schedules/{name}/unpause", response_model=ScheduleDetail, responses=responses(404, 413, 422, 503),
             summary="Unpause a schedule")
async def unpause(name: ScheduleName, client: ClientDep,
                  body: Annotated[ScheduleNote | None, Body()] = None) -> ScheduleDetail:
    return ScheduleDetail(**await schedules.unpause_schedule(client, name, (body or ScheduleNote()).note))


@router.post("/schedules/{name}/trigger", status_code=202, response_model=ScheduleAccepted,
             responses=responses(404, 413, 422, 503), summary="Start one run of the schedule now")
async def trigger(name: ScheduleName, client: ClientDep,
                  body: Annotated[TriggerSchedule | None, Body()] = None) -> ScheduleAccepted:
    await schedules.trigger_schedule(client, name, (body or TriggerSchedule()).overlap)
    return ScheduleAccepted(name=name, runs=f"/schedules/{name}")


@router.post("/schedules/{name}/backfill", status_code=202, response_model=ScheduleAccepted,
             responses=responses(404, 413, 422, 503),
             summary="Start the runs the schedule would have started between start and end")
async def backfill(name: ScheduleName, body: BackfillSchedule, client: ClientDep) -> ScheduleAccepted:
    start, end = schedules.parse_time(body.start, "start"), schedules.parse_time(body.end, "end")
    await schedules.backfill_schedule(client, name, start, end, body.overlap)
    return ScheduleAccepted(name=name, runs=f"/schedules/{name}")


@router.delete("/schedules/{name}", status_code=204, responses=responses(404, 503),
               summary="Delete a schedule (the runs it started go on)")
async def delete(name: ScheduleName, client: ClientDep) -> Response:
    await schedules.delete_schedule(client, name)
    return Response(status_code=204)
