"""``POST /executions/{id}/steps/{step}/answer``: answer a waiting approval (docs/approvals.md).

Why a router of its own, made per app: its auth differs from the rest. An approver's
token opens this route only and names who answers (``security.answerer``); the workflow's
update validator decides whether that name may answer (the task's ``approvers``) and
whether the answer fits the form (422 either way, with the reason).
"""

# No ``from __future__ import annotations``: FastAPI reads the route's annotations at
# definition, and ``identify`` is this factory's argument, not a module global.
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path

from noetl_temporal.client.answers import answer as answer_step

from ..deps import ClientDep, ExecutionId
from ..errors import responses
from ..models import AnswerRequest, AnswerResponse

__all__ = ["router_for"]


def router_for(identify: Callable[..., Awaitable[str]]) -> APIRouter:
    """The route, with ``identify`` (a dependency returning who answers) as its auth."""
    router = APIRouter(tags=["control"])

    @router.post("/executions/{execution_id}/steps/{step}/answer", response_model=AnswerResponse,
                 responses=responses(401, 404, 409, 413, 422, 503),
                 summary="Answer a step waiting for a person (`kind: approve`); the answer becomes its result")
    async def answer(body: AnswerRequest, execution_id: ExecutionId, client: ClientDep,
                     step: Annotated[str, Path(max_length=255, description="the waiting step's name")],
                     by: Annotated[str, Depends(identify)]) -> Any:
        result = await answer_step(client, execution_id, step, body.values, by=by, iteration=body.iteration,
                                   reason=body.reason)
        return AnswerResponse(**result)

    return router
