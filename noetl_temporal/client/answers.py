"""Answering a waiting approval: the client side of the ``answer`` update (docs/approvals.md).

The CLI (``noetl-temporal approve``) and the API (``POST /executions/{id}/steps/{step}/answer``)
both call :func:`answer`, so they refuse the same way: :class:`~.control.ExecutionFinished`
when the execution ended, :class:`~.control.Rejected` with the validator's reason (the step
is not waiting, a field is missing or of the wrong type, the answerer is not an approver).
"""

from __future__ import annotations

from typing import Any

from temporalio.client import Client, WorkflowUpdateFailedError, WorkflowUpdateRPCTimeoutOrCancelledError
from temporalio.service import RPCError, RPCStatusCode

from ..errors import ConfigError
from ..workflow.approval_runs import PAUSE_STEP_UPDATE, RESUME_STEP_UPDATE, SKIP_UPDATE, UPDATE_NAME
from .control import RPC_TIMEOUT, ExecutionFinished, Rejected, _closed_meanwhile, _running, describe

__all__ = ["answer", "skip", "hold_step"]


async def answer(client: Client, execution_id: str, step: str, values: dict[str, Any], *, by: str | None = None,
                 iteration: int | None = None, reason: str | None = None) -> dict[str, Any]:
    """Answer the approval ``step`` waits for; returns what was recorded."""
    request = {"step": step, "values": values, "by": by, "iteration": iteration, "reason": reason}
    return await _update(client, execution_id, UPDATE_NAME, request, f"answer step {step!r} of", step)


async def skip(client: Client, execution_id: str, step: str, *, reason: str, result: Any = None,
               by: str | None = None, iteration: int | None = None) -> dict[str, Any]:
    """Skip a running step (engine/skips.py): it ends SKIPPED with ``result``, its arcs firing as for a success."""
    request = {"step": step, "reason": reason, "result": result, "by": by, "iteration": iteration}
    return await _update(client, execution_id, SKIP_UPDATE, request, f"skip step {step!r} of", step)


async def hold_step(client: Client, execution_id: str, step: str, *, hold: bool, reason: str | None = None,
                    by: str | None = None) -> dict[str, Any]:
    """Pause one step (``hold``: no new run of it starts) or resume it."""
    request = {"step": step, "reason": reason, "by": by}
    update, action = (PAUSE_STEP_UPDATE, "pause") if hold else (RESUME_STEP_UPDATE, "resume")
    return await _update(client, execution_id, update, request, f"{action} step {step!r} of", step)


async def _update(client: Client, execution_id: str, update: str, request: dict[str, Any], action: str,
                  step: str) -> dict[str, Any]:
    handle = await _running(client, execution_id, action)
    try:
        result: dict[str, Any] = await handle.execute_update(update, request, rpc_timeout=RPC_TIMEOUT)
        return {"execution_id": execution_id, **result}
    except WorkflowUpdateFailedError as exc:
        cause = exc.cause
        message = getattr(cause, "message", None) or str(cause or exc)
        if "not running" in message:
            info = await describe(client, execution_id)
            if info.closed:
                raise ExecutionFinished(execution_id, info.state, action) from None
        raise Rejected(message) from None
    except WorkflowUpdateRPCTimeoutOrCancelledError:
        raise _no_worker(execution_id, step) from None
    except RPCError as exc:
        if exc.status in (RPCStatusCode.DEADLINE_EXCEEDED, RPCStatusCode.CANCELLED):
            raise _no_worker(execution_id, step) from None
        raise (await _closed_meanwhile(client, execution_id, action, exc)) from None


def _no_worker(execution_id: str, step: str) -> ConfigError:
    # The validator runs on a worker and none ran it in time. Temporal keeps the admitted
    # update (in the server's memory, not its history) and hands it to the next worker,
    # whose validator then accepts or refuses it: the answer is pending, not lost or refused.
    return ConfigError(f"no worker took the request for step {step!r} of {execution_id} within "
                       f"{RPC_TIMEOUT.total_seconds():.0f} s: Temporal holds it for the next worker, which "
                       "accepts or refuses it then",
                       fix="start a worker for the execution's task queue (`noetl-temporal status` says whether "
                           "one polls); `noetl-temporal events ID` shows when it is taken")
