"""Start, list and inspect executions: ``/executions``, ``/{id}``, ``/{id}/status``, ``/{id}/variables``.

Why status and variables are separate routes: the status contract (docs/status.md) says a
status answer carries lifecycle state only, never execution variables; the variables
view exists for debugging, and hides secrets.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request, Response
from fastapi.concurrency import run_in_threadpool

from noetl_temporal.client import control
from noetl_temporal.client.connect import start_execution
from noetl_temporal.client.observe import read_status, read_status_described
from noetl_temporal.client.redact import redact
from noetl_temporal.engine.context import deep_merge
from noetl_temporal.engine.payload_size import PAYLOAD_FIX, payload_refusal
from noetl_temporal.errors import NotFound
from noetl_temporal.store.catalog import MAX_PATH_CHARS, PATH_PATTERN, Catalog, catalog_path_of

from ..deps import ClientDep, ExecutionId, LinkDep, SettingsDep
from ..errors import BadRequest, responses
from ..json_numbers import ParsedBodyRoute
from ..limits import TooLarge, check_expanded
from ..models import (
    SCHEDULE_NAME_PATTERN,
    ExecutionDetail,
    ExecutionList,
    ExecutionSummary,
    Links,
    PlaybookRef,
    StartExecution,
    StartInline,
    StartResponse,
    State,
    Status,
    TemporalRef,
    Variables,
    as_state,
)
from ..paging import decode_token, encode_token
from ..playbooks import load_for_start
from ..settings import Settings, TemporalLink

router = APIRouter(tags=["executions"], route_class=ParsedBodyRoute)  # the body parsed once


def _links(execution_id: str) -> Links:
    base = f"/executions/{execution_id}"
    return Links(status=f"{base}/status", events=f"{base}/events", stream=f"{base}/events/stream",
                 view=f"{base}/view")


@router.post("/executions", status_code=202, response_model=StartResponse,
             responses=responses(404, 413, 422, 503),
             summary="Start an execution (inline YAML or a catalog reference); returns at once")
async def start(body: StartExecution, request: Request, response: Response) -> StartResponse:
    # The app's objects straight from app.state, not as dependencies (as the other routes
    # take them): FastAPI solves each dependency on every request, a measurable part of a
    # start's CPU on the API's one event loop. They take only the request, so the OpenAPI
    # document and the errors are the same either way.
    state = request.app.state
    settings: Settings = state.settings
    link: TemporalLink = state.link
    version: int | None = None
    if isinstance(body, StartInline):
        text, source, label = body.playbook, "inline", "<request>"
    else:
        catalog: Catalog = state.catalog
        entry = await run_in_threadpool(catalog.get_entry, body.path, body.version)
        text, version, label = entry["content"], entry["version"], entry["path"]
        source = f"catalog:{entry['path']}@{version}"
    loaded = await load_for_start(state.playbooks, text, label)  # PlaybookInvalid -> 422
    # before Temporal or a store sees it: what the body expanded to (aliases) -> 413; the
    # playbook was measured when it was loaded (the cache counts up to this limit or more)
    check_expanded(settings.max_body_bytes, measured={"playbook": loaded.expanded}, payload=body.payload)
    refused = payload_refusal(body.payload, "the request's payload")
    if refused is not None:   # the workflow could not decode it in one activation -> 413
        raise TooLarge(f"{refused}: {PAYLOAD_FIX}")
    client = await link.client()
    handle = await start_execution(client, loaded.playbook, payload=body.payload, task_queue=settings.queue,
                                   source=source, search_attributes=await link.path_attribute(),
                                   execution_timeout_s=settings.execution_timeout_s,
                                   heartbeat_timeout_s=settings.heartbeat_timeout_s,
                                   version=version, api_url=str(request.base_url),  # linked from the Temporal UI
                                   definition=loaded.definition, digest=loaded.digest,
                                   payload_checked=True)   # refused above, with the API's words
    response.headers["Location"] = f"/executions/{handle.id}"
    return StartResponse(execution_id=handle.id, state="PENDING",
                         playbook_path=catalog_path_of(loaded.playbook.metadata), catalog_version=version,
                         links=_links(handle.id))


#: an RFC 3339 date-time (a bare number is not a time here, although pydantic would take it)
Timestamp = Annotated[str | None, Query(
    pattern=r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?([Zz]|[+-]\d{2}:\d{2})?$",
    json_schema_extra={"format": "date-time"},
    description="RFC 3339 date-time, e.g. 2025-01-31T12:00:00Z (no offset means UTC)")]


def _utc(value: str | None, name: str) -> datetime | None:
    if value is None:
        return None
    try:
        when = datetime.fromisoformat(value.replace("z", "Z"))
        return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)
    except (OverflowError, ValueError):
        raise BadRequest(f"{name} is not a valid date-time: {value!r}") from None


@router.get("/executions", response_model=ExecutionList, responses=responses(422, 503),
            summary="List executions, newest first (filter by state, playbook path, version or hash, schedule, start time)")
async def list_executions(
    settings: SettingsDep,
    link: LinkDep,
    state: Annotated[State | None, Query(description="only executions in this state")] = None,
    playbook_path: Annotated[str | None, Query(pattern=PATH_PATTERN, max_length=MAX_PATH_CHARS, description="catalog path / metadata path")] = None,
    playbook_version: Annotated[str | None, Query(pattern=r"^[A-Za-z0-9][A-Za-z0-9._+:-]{0,99}$", description="metadata.version, else the catalog version, the execution started with (letters, digits, . _ + : -)")] = None,
    schedule: Annotated[str | None, Query(pattern=SCHEDULE_NAME_PATTERN, description="only the runs this schedule started")] = None,
    playbook_sha256: Annotated[str | None, Query(pattern=r"^[0-9a-f]{64}$", description="SHA-256 of the definition the execution runs (`playbook.sha256` of its detail)")] = None,
    started_after: Timestamp = None,
    started_before: Timestamp = None,
    page_size: Annotated[int, Query(ge=1, le=100)] = 20,
    page_token: Annotated[str | None, Query(max_length=8192, description="next_page_token of the previous page")] = None,
) -> ExecutionList:
    after, before = _utc(started_after, "started_after"), _utc(started_before, "started_before")
    client = await link.client()
    with_path = await link.path_attribute()
    try:
        query = control.visibility_query(state=state, playbook_path=playbook_path, started_after=after,
                                         started_before=before, with_path_attribute=with_path,
                                         playbook_version=playbook_version, playbook_hash=playbook_sha256,
                                         schedule=schedule)
    except ValueError as exc:
        raise BadRequest(str(exc)) from None
    raw = decode_token(page_token, query=f"{query}|{page_size}", secret=settings.page_secret)
    items, next_raw = await control.list_executions(
        client, state=state, playbook_path=playbook_path, started_after=after, started_before=before,
        page_size=page_size, page_token=raw, with_path_attribute=with_path, playbook_version=playbook_version,
        playbook_hash=playbook_sha256, schedule=schedule)
    return ExecutionList(items=[ExecutionSummary(**i) for i in items],
                         next_page_token=encode_token(next_raw, query=f"{query}|{page_size}",
                                                      secret=settings.page_secret))


def _playbook_ref(inp: Any) -> PlaybookRef:
    return PlaybookRef(**control.pinned_playbook(inp))


@router.get("/executions/{execution_id}", response_model=ExecutionDetail, responses=responses(404, 503),
            summary="Execution detail: summary, steps, timing (no variables)")
async def detail(execution_id: ExecutionId,
                 client: ClientDep, settings: SettingsDep) -> ExecutionDetail:
    # The status first: it answers fast without a worker, and says whether one polls, so the
    # detail query is not sent to nobody (it would wait out its deadline). Temporal's
    # description is read once, for both (docs/performance.md, "The API under a burst").
    status, _, description = await read_status_described(client, execution_id, settings.event_store)
    if description is None:   # only the event store knows it: no detail to read
        raise NotFound(f"no execution {execution_id!r}", fix="GET /executions (or the Temporal UI) lists executions")
    info, data = await control.read_detail(client, execution_id, ask_workflow=status["workers_polling"] != 0,
                                           description=description)
    if not info.closed and not data:   # no worker answered: Temporal's and the store's evidence
        data = {key: status[key] for key in ("state", "current_step", "started_at")}
    inp = await control.read_input(client, execution_id, info.run_id)
    state = as_state(control.shown_state(info, data))
    result = data.get("result")
    return ExecutionDetail(
        execution_id=execution_id, state=state, paused=bool(data.get("paused")),
        current_step=data.get("current_step"), started_at=data.get("started_at") or info.started_at,
        ended_at=data.get("ended_at") or info.ended_at, terminal_event=data.get("terminal_event"),
        summary=result if isinstance(result, dict) else None, steps=data.get("steps") or {},
        event_count=data.get("event_count"), playbook=_playbook_ref(inp),
        temporal=TemporalRef(workflow_id=execution_id, run_id=info.run_id, status=info.temporal_status,
                             task_queue=info.task_queue),
        workers_polling=status["workers_polling"])


@router.get("/executions/{execution_id}/status", response_model=Status, responses=responses(404, 503),
            response_model_exclude_unset=True,   # `waiting` only while approvals wait
            summary="The minimal status model (docs/status.md): lifecycle state only, never variables")
async def status(execution_id: ExecutionId, client: ClientDep, settings: SettingsDep) -> Status:
    return Status(**await read_status(client, execution_id, settings.event_store))


@router.get("/executions/{execution_id}/variables", response_model=Variables, responses=responses(404, 503),
            summary="Debug view of workload and ctx, secrets redacted")
async def variables(execution_id: ExecutionId,
                    client: ClientDep) -> Variables:
    info, data = await control.read_detail(client, execution_id)
    inp = await control.read_input(client, execution_id, info.run_id)
    workload = deep_merge((inp.playbook or {}).get("workload") or {}, inp.payload or {})
    hidden: list[str] = []
    return Variables(execution_id=execution_id, workload=redact(workload, path="workload", hidden=hidden),
                     ctx=redact(data.get("ctx") or {}, path="ctx", hidden=hidden), redacted=hidden)
