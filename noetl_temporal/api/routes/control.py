"""Execution control: cancel, pause, resume and ctx patches (approval gates).

Why thin: the behaviour lives in ``noetl_temporal.client.control`` (the CLI uses the
same functions); here are only the HTTP shapes and status codes.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Request, Response

from noetl_temporal.client import control
from noetl_temporal.client.redact import redact

from ..deps import ClientDep, ExecutionId, SettingsDep
from ..errors import responses
from ..json_numbers import ParsedBodyRoute
from ..models import (
    CancelRequest,
    CancelResponse,
    ControlResponse,
    CtxPatch,
    CtxResponse,
    PauseRequest,
    RedriveRequest,
    RedriveResponse,
)

router = APIRouter(tags=["control"], route_class=ParsedBodyRoute)  # the body parsed once


@router.post("/executions/{execution_id}/cancel", response_model=CancelResponse, status_code=202,
             responses={200: {"model": CancelResponse, "description": "the execution is CANCELLED"},
                        **responses(404, 409, 413, 422, 503)},
             summary="Cancel: in-flight tasks and sub-playbooks are cancelled, execution.cancelled, CANCELLED")
async def cancel(response: Response, execution_id: ExecutionId, client: ClientDep, settings: SettingsDep,
                 body: Annotated[CancelRequest | None, Body()] = None) -> CancelResponse:
    body = body or CancelRequest()
    result = await control.cancel(client, execution_id, reason=body.reason, cascade=body.cascade,
                                  wait_s=settings.cancel_wait_s)
    if result["state"] == "CANCELLED":
        response.status_code = 200
    return CancelResponse(**result)


@router.post("/executions/{execution_id}/pause", response_model=ControlResponse, status_code=202,
             responses=responses(404, 409, 413, 422, 503),
             summary="Pause: admit no new steps; running tasks finish (playbook.paused)")
async def pause(execution_id: ExecutionId, client: ClientDep,
                body: Annotated[PauseRequest | None, Body()] = None) -> ControlResponse:
    return ControlResponse(**await control.pause(client, execution_id, reason=(body or PauseRequest()).reason))


@router.post("/executions/{execution_id}/resume", response_model=ControlResponse, status_code=202,
             responses=responses(404, 409, 503), summary="Resume a paused execution")
async def resume(execution_id: ExecutionId,
                 client: ClientDep) -> ControlResponse:
    return ControlResponse(**await control.resume(client, execution_id))


@router.post("/executions/{execution_id}/ctx", response_model=CtxResponse,
             responses=responses(404, 409, 413, 422, 503),
             summary="Patch ctx (a Temporal update with a validator); pending admission is re-evaluated")
async def patch_ctx(body: CtxPatch, execution_id: ExecutionId,
                    client: ClientDep) -> CtxResponse:
    ctx = await control.patch_ctx(client, execution_id, body.patch)
    hidden: list[str] = []
    return CtxResponse(execution_id=execution_id, ctx=redact(ctx or {}, path="ctx", hidden=hidden), redacted=hidden)


@router.post("/executions/{execution_id}/redrive", response_model=RedriveResponse, status_code=201,
             responses=responses(404, 409, 413, 422, 503),
             summary="Redrive an ended execution: a new one reuses the results of the steps it completed "
                     "and reruns the rest (docs/operations.md)")
async def redrive(execution_id: ExecutionId, request: Request, response: Response, client: ClientDep,
                  settings: SettingsDep, body: Annotated[RedriveRequest | None, Body()] = None) -> RedriveResponse:
    from noetl_temporal.client.redrive_start import redrive as start_redrive

    from ..playbooks import load_for_start

    body = body or RedriveRequest()
    playbook = None
    if body.playbook is not None:
        playbook = (await load_for_start(request.app.state.playbooks, body.playbook, "<request>")).playbook
    started = await start_redrive(client, execution_id, from_step=body.from_step, playbook=playbook,
                                  latest=body.latest, playbook_source="inline" if playbook else None,
                                  event_store=settings.event_store,
                                  search_attributes=await request.app.state.link.path_attribute(),
                                  api_url=str(request.base_url))
    response.headers["Location"] = f"/executions/{started['execution_id']}"
    return RedriveResponse(**started)
