"""Retry a step now, or change its retry policy: the client side (docs/approvals.md,
"Retrying a step now, changing its retry policy").

A task's policy retries are Temporal's own activity retries (``activities.py``), so
Temporal carries both controls out, through the server's activity APIs (server 1.27 and
later): retry now is ``PauseActivity`` then ``UnpauseActivity`` (an unpaused activity is
scheduled at once, its attempt count and heartbeat kept); a policy change is
``UpdateActivityOptions`` on the activity's retry policy, written in the form the
activity reads as an operator's policy (:data:`OPERATOR_BACKOFF`). The workflow's
``retry_step`` update decides whether the control applies (its validator, given what
Temporal holds) and records it (``step.retry.now`` / ``step.retry.policy``) before the call.
The CLI (``retry-now``, ``set-retry``) and the API both call :func:`retry_now` / :func:`set_retry`.
A fast-path task's retries are the workflow's own loop, which the update itself steers
(``fast_retries.py``): its answer says ``fast_path`` and there is nothing left to call.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from google.protobuf.duration_pb2 import Duration
from google.protobuf.field_mask_pb2 import FieldMask
from temporalio.api.activity.v1 import ActivityOptions
from temporalio.api.common.v1 import RetryPolicy, WorkflowExecution
from temporalio.api.enums.v1 import PendingActivityState
from temporalio.api.workflowservice.v1 import (
    DescribeWorkflowExecutionRequest,
    PauseActivityRequest,
    UnpauseActivityRequest,
    UpdateActivityOptionsRequest,
)
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from ..errors import ConfigError
from ..workflow.approval_runs import RETRY_STEP_UPDATE
from .answers import _update
from .control import _running

__all__ = ["retry_now", "set_retry", "OPERATOR_BACKOFF"]

#: the backoff coefficient that marks an activity's retry policy as set by an operator:
#: the workflow never writes 1.0, and with it ``maximum_attempts`` and ``initial_interval``
#: are the attempts and the delay the activity applies instead of the task policy's
OPERATOR_BACKOFF = 1.0

_STATES = {PendingActivityState.PENDING_ACTIVITY_STATE_SCHEDULED: "scheduled",
           PendingActivityState.PENDING_ACTIVITY_STATE_STARTED: "running",
           PendingActivityState.PENDING_ACTIVITY_STATE_CANCEL_REQUESTED: "being cancelled",
           PendingActivityState.PENDING_ACTIVITY_STATE_PAUSED: "paused",
           PendingActivityState.PENDING_ACTIVITY_STATE_PAUSE_REQUESTED: "being paused"}


async def retry_now(client: Client, execution_id: str, step: str, *, reason: str | None = None,
                    by: str | None = None, iteration: int | None = None) -> dict[str, Any]:
    """Skip the backoff of ``step``'s task, which waits to retry: its next attempt starts now."""
    action = f"retry step {step!r} of"
    await _running(client, execution_id, action)
    pending = await _pending(client, execution_id)
    request = {"step": step, "action": "now", "reason": reason, "by": by, "iteration": iteration,
               "activities": {k: v["seen"] for k, v in pending.items()}}
    result = await _update(client, execution_id, RETRY_STEP_UPDATE, request, action, step)
    if result.get("fast_path"):   # the workflow's own retry loop: the update itself ended the wait
        return result
    execution, activity_id = WorkflowExecution(workflow_id=execution_id), result["task_run_id"]
    who = f"noetl-temporal {by or ''}".strip()
    async with _operation(step):
        await client.workflow_service.pause_activity(PauseActivityRequest(
            namespace=client.namespace, execution=execution, id=activity_id, identity=who, reason=reason or "retry now"))
        await client.workflow_service.unpause_activity(UnpauseActivityRequest(
            namespace=client.namespace, execution=execution, id=activity_id, identity=who))
    return {**result, "attempt": pending[activity_id]["seen"]["attempt"]}


async def set_retry(client: Client, execution_id: str, step: str, *, attempts: int | None = None,
                    delay: float | None = None, reason: str | None = None, by: str | None = None,
                    iteration: int | None = None) -> dict[str, Any]:
    """Change the retry policy of ``step``'s running task: at most ``attempts`` attempts in all,
    ``delay`` seconds between them. Unset, each keeps what Temporal holds now (its attempt cap,
    the current backoff). A wait under way is rescheduled by the new delay."""
    action = f"change the retry policy of step {step!r} of"
    await _running(client, execution_id, action)
    pending = await _pending(client, execution_id)
    request = {"step": step, "action": "policy", "reason": reason, "by": by, "iteration": iteration,
               "attempts": attempts, "delay": delay, "activities": {k: v["seen"] for k, v in pending.items()}}
    result = await _update(client, execution_id, RETRY_STEP_UPDATE, request, action, step)
    if result.get("fast_path"):   # the workflow's own retry loop took the policy (fast_retries.py)
        return result
    activity_id = result["task_run_id"]
    current = pending[activity_id]
    attempts = attempts if attempts is not None else current["maximum_attempts"]
    delay = delay if delay is not None else current["delay"]
    interval = Duration()
    interval.FromMilliseconds(max(int(round(delay * 1000)), 1))
    policy = RetryPolicy(initial_interval=interval, maximum_interval=interval, backoff_coefficient=OPERATOR_BACKOFF,
                         maximum_attempts=attempts)
    async with _operation(step):
        await client.workflow_service.update_activity_options(UpdateActivityOptionsRequest(
            namespace=client.namespace, execution=WorkflowExecution(workflow_id=execution_id), id=activity_id,
            identity=f"noetl-temporal {by or ''}".strip(), activity_options=ActivityOptions(retry_policy=policy),
            update_mask=FieldMask(paths=["retry_policy.initial_interval", "retry_policy.maximum_interval",
                                         "retry_policy.backoff_coefficient", "retry_policy.maximum_attempts"])))
    return {**result, "attempts": attempts, "delay": delay}


@contextlib.asynccontextmanager
async def _operation(step: str) -> AsyncIterator[None]:
    """An activity operation the server refuses: a clear message, not a gRPC trace."""
    try:
        yield
    except RPCError as exc:
        if exc.status == RPCStatusCode.UNIMPLEMENTED:
            raise ConfigError(f"the Temporal server does not support activity operations, so the control of step "
                              f"{step!r} was recorded but not carried out",
                              fix="upgrade the Temporal server to 1.28 or later (docs/approvals.md), or skip the "
                                  "step (noetl-temporal skip)") from None
        if exc.status == RPCStatusCode.NOT_FOUND:
            raise ConfigError(f"step {step!r}'s task ended while the control was being carried out: nothing to do",
                              fix="see `noetl-temporal status ID`") from None
        raise


async def _pending(client: Client, execution_id: str) -> dict[str, dict[str, Any]]:
    """The execution's pending activities: what the validator is shown (``seen``) and the
    retry policy in force (a policy change keeps what it does not set)."""
    desc = await client.workflow_service.describe_workflow_execution(DescribeWorkflowExecutionRequest(
        namespace=client.namespace, execution=WorkflowExecution(workflow_id=execution_id)))
    out: dict[str, dict[str, Any]] = {}
    for p in desc.pending_activities:
        state = _STATES.get(p.state, "pending")
        policy = p.activity_options.retry_policy
        operator = policy.backoff_coefficient == OPERATOR_BACKOFF
        delay = (policy.initial_interval.ToTimedelta() if operator else p.current_retry_interval.ToTimedelta())
        retrying = p.attempt > 1 and p.state == PendingActivityState.PENDING_ACTIVITY_STATE_SCHEDULED
        out[p.activity_id] = {
            "seen": {"retrying": retrying, "attempt": p.attempt,
                     "state": "waiting to retry" if retrying else state},
            "maximum_attempts": p.maximum_attempts or policy.maximum_attempts,
            "delay": delay.total_seconds()}
    return out
