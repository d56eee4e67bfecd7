"""Answering a waiting approval: the client side of the ``answer`` update (docs/approvals.md).

The CLI (``noetl-temporal approve``) and the API (``POST /executions/{id}/steps/{step}/answer``)
both call :func:`answer`, so they refuse the same way: :class:`~.control.ExecutionFinished`
when the execution ended, :class:`~.control.Rejected` with the validator's reason (the step
is not waiting, a field is missing or of the wrong type, the answerer is not an approver).
"""

from __future__ import annotations

from typing import Any

from temporalio.client import Client, WorkflowUpdateFailedError
from temporalio.service import RPCError

from .approval_runs import UPDATE_NAME
from .control import RPC_TIMEOUT, ExecutionFinished, Rejected, _closed_meanwhile, _running, describe

__all__ = ["answer"]


async def answer(client: Client, execution_id: str, step: str, values: dict[str, Any], *, by: str | None = None,
                 iteration: int | None = None, reason: str | None = None) -> dict[str, Any]:
    """Answer the approval ``step`` waits for; returns what was recorded."""
    action = f"answer step {step!r} of"
    handle = await _running(client, execution_id, action)
    request = {"step": step, "values": values, "by": by, "iteration": iteration, "reason": reason}
    try:
        result: dict[str, Any] = await handle.execute_update(UPDATE_NAME, request, rpc_timeout=RPC_TIMEOUT)
        return {"execution_id": execution_id, **result}
    except WorkflowUpdateFailedError as exc:
        cause = exc.cause
        message = getattr(cause, "message", None) or str(cause or exc)
        if "not running" in message:
            info = await describe(client, execution_id)
            if info.closed:
                raise ExecutionFinished(execution_id, info.state, action) from None
        raise Rejected(message) from None
    except RPCError as exc:
        raise (await _closed_meanwhile(client, execution_id, action, exc)) from None
