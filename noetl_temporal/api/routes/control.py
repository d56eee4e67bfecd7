"""Execution control: cancel, pause, resume and ctx patches (approval gates).

Why thin: the behaviour lives in ``noetl_temporal.temporal.control`` (the CLI uses the
same functions); here are only the HTTP shapes and status codes.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Response

from noetl_temporal.redact import redact
from noetl_temporal.temporal import control

from ..deps import ClientDep, ExecutionId, SettingsDep
from ..errors import responses
from ..json_numbers import ParsedBodyRoute
from ..models import CancelRequest, CancelResponse, ControlResponse, CtxPatch, CtxResponse, PauseRequest

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
