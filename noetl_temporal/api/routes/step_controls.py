"""``POST /executions/{id}/steps/{step}/skip|pause|resume|retry-now|retry-policy``: per-step controls
(docs/approvals.md), and ``GET /executions/{id}/steps/controls``: which of them apply now, step by
step (what the execution page offers, refreshed as its event stream shows steps move).

Thin: the behaviour is the workflow's ``skip_step`` update (``engine/skips.py``), the
call ``client/answers.py``'s, shared with ``noetl-temporal skip``. Who skips is ``api``
(the API token's name, as for answers).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path

from noetl_temporal.client import control
from noetl_temporal.client.answers import hold_step
from noetl_temporal.client.answers import skip as skip_step
from noetl_temporal.client.step_offers import offered_controls
from noetl_temporal.client.step_retries import retry_now as retry_step_now
from noetl_temporal.client.step_retries import set_retry

from ..deps import ClientDep, ExecutionId
from ..errors import responses
from ..models import (
    RetryNowRequest,
    RetryPolicyRequest,
    RetryResponse,
    SkipRequest,
    SkipResponse,
    StepControlOffer,
    StepControls,
    StepHoldRequest,
    StepHoldResponse,
)
from ..security import API_ANSWERER

router = APIRouter(tags=["control"])


@router.get("/executions/{execution_id}/steps/controls", response_model=StepControls,
            response_model_exclude_unset=True, responses=responses(404, 503),
            summary="The per-step controls that apply now: each running or paused step's, as its update "
                    "validators would decide (the execution page's)")
async def step_controls(execution_id: ExecutionId, client: ClientDep) -> Any:
    info = await control.describe(client, execution_id)   # 404 for unknown ids
    if info.closed:   # a finished execution takes no control
        return StepControls(execution_id=execution_id, state=info.state, answered=True, steps=[])
    offers = await offered_controls(client, execution_id)
    return StepControls(execution_id=execution_id, state=info.state, answered=offers is not None,
                        steps=[StepControlOffer(**offer) for offer in offers or []])


@router.post("/executions/{execution_id}/steps/{step}/skip", response_model=SkipResponse,
             responses=responses(404, 409, 413, 422, 503),
             summary="Skip a running step: its task is cancelled, it ends SKIPPED with `result`, its arcs firing as for a success (step.skipped)")
async def skip(body: SkipRequest, execution_id: ExecutionId, client: ClientDep,
               step: Annotated[str, Path(max_length=255, description="the running step's name")]) -> Any:
    result = await skip_step(client, execution_id, step, reason=body.reason, result=body.result, by=API_ANSWERER,
                             iteration=body.iteration)
    return SkipResponse(**result)


@router.post("/executions/{execution_id}/steps/{step}/pause", response_model=StepHoldResponse,
             responses=responses(404, 409, 413, 422, 503),
             summary="Pause one step: no new run of it starts, the rest of the execution goes on (step.paused)")
async def pause_step(execution_id: ExecutionId, client: ClientDep,
                     step: Annotated[str, Path(max_length=255, description="the step's name")],
                     body: StepHoldRequest | None = None) -> Any:
    reason = body.reason if body else None
    return StepHoldResponse(execution_id=execution_id, **await _held(client, execution_id, step, True, reason))


@router.post("/executions/{execution_id}/steps/{step}/resume", response_model=StepHoldResponse,
             responses=responses(404, 409, 413, 422, 503),
             summary="Resume a paused step: its waiting runs start (step.resumed)")
async def resume_step(execution_id: ExecutionId, client: ClientDep,
                      step: Annotated[str, Path(max_length=255, description="the step's name")],
                      body: StepHoldRequest | None = None) -> Any:
    reason = body.reason if body else None
    return StepHoldResponse(execution_id=execution_id, **await _held(client, execution_id, step, False, reason))


async def _held(client: Any, execution_id: str, step: str, hold: bool, reason: str | None) -> dict[str, Any]:
    result = await hold_step(client, execution_id, step, hold=hold, reason=reason, by=API_ANSWERER)
    return {k: result[k] for k in ("step", "paused", "paused_steps")}


@router.post("/executions/{execution_id}/steps/{step}/retry-now", response_model=RetryResponse,
             responses=responses(404, 409, 413, 422, 503),
             summary="A step waiting to retry starts its next attempt now (step.retry.now)")
async def retry_now(execution_id: ExecutionId, client: ClientDep,
                    step: Annotated[str, Path(max_length=255, description="the retrying step's name")],
                    body: RetryNowRequest | None = None) -> Any:
    body = body or RetryNowRequest()
    result = await retry_step_now(client, execution_id, step, reason=body.reason, by=API_ANSWERER,
                                  iteration=body.iteration)
    return RetryResponse(**{k: v for k, v in result.items() if k in RetryResponse.model_fields})


@router.post("/executions/{execution_id}/steps/{step}/retry-policy", response_model=RetryResponse,
             responses=responses(404, 409, 413, 422, 503),
             summary="Change the retry policy (attempts, delay) of a running step's task (step.retry.policy)")
async def retry_policy(body: RetryPolicyRequest, execution_id: ExecutionId, client: ClientDep,
                       step: Annotated[str, Path(max_length=255, description="the running step's name")]) -> Any:
    result = await set_retry(client, execution_id, step, attempts=body.attempts, delay=body.delay,
                             reason=body.reason, by=API_ANSWERER, iteration=body.iteration)
    return RetryResponse(**{k: v for k, v in result.items() if k in RetryResponse.model_fields})
