"""A user's own Temporal code called from a playbook (``kind: activity``, ``kind: workflow``):
the activity or child workflow started by type name on the user's task queue, and how it
ended turned into the task's outcome.

The call is made by the playbook workflow itself, not from inside one of our activities:
the user's activity is a Temporal activity of this execution (visible, retried, cancelled
by Temporal), the user's workflow a child workflow. The task's retry rules map onto
Temporal's ``RetryPolicy`` (:func:`retry_policy`); the policy's other rules see the final
outcome (the engine decides: no activity of ours evaluated them).

Workflow code (called from ``PlaybookWorkflow``): it takes time and waits only through
``temporalio.workflow``.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, CancelledError, ChildWorkflowError
from temporalio.exceptions import TimeoutError as TemporalTimeoutError
from temporalio.workflow import ActivityCancellationType, ChildWorkflowCancellationType, ParentClosePolicy

with workflow.unsafe.imports_passed_through():
    from ..engine.context import deep_merge
    from ..engine.envelopes import ErrorInfo, Outcome
    from ..engine.messages import RunTask
    from .naming import child_execution_id

__all__ = ["activity_outcome", "workflow_outcome", "settings", "call_args", "retry_policy", "error_of"]

#: one attempt's limit when neither the task nor ``start_to_close_timeout`` sets one
DEFAULT_START_TO_CLOSE_S = 300.0

_PARENT_CLOSE = {"terminate": ParentClosePolicy.TERMINATE, "abandon": ParentClosePolicy.ABANDON,
                 "request_cancel": ParentClosePolicy.REQUEST_CANCEL}


def call_args(config: dict[str, Any]) -> list[Any]:
    """``args``: a list is the positional arguments, a mapping the one argument, none no argument."""
    args = config.get("args")
    if args is None:
        return []
    return list(args) if isinstance(args, list | tuple) else [args]


def retry_policy(cmd: RunTask) -> RetryPolicy:
    """The task's retry rules as Temporal's: the most attempts any ``do: retry`` rule allows
    (1, no retry, without one), its ``delay``/``backoff``/``max_delay`` as the intervals.
    Temporal retries every retryable failure: a rule's ``when`` is read once, on the final
    outcome, never per attempt (docs/tools.md). Non-retryable ``ApplicationError``s stop at once."""
    then = _retry_then(cmd.rules)
    delay = float(then.get("delay") or 1.0) if then else 1.0
    backoff = (then or {}).get("backoff") or "none"
    cap = (then or {}).get("max_delay")
    return RetryPolicy(initial_interval=timedelta(seconds=max(delay, 0.001)),
                       backoff_coefficient=2.0 if backoff == "exponential" else 1.0,
                       maximum_interval=timedelta(seconds=float(cap)) if cap else None,
                       maximum_attempts=max(1, cmd.max_attempts))


def _retry_then(rules: list[dict[str, Any]]) -> dict[str, Any] | None:
    best: dict[str, Any] | None = None
    for rule in rules:
        then = rule.get("then") or {}
        if then.get("do") == "retry" and (best is None or int(then.get("attempts") or 0) > int(best.get("attempts") or 0)):
            best = then
    return best


def settings(cmd: RunTask) -> dict[str, Any]:
    """The task's settings over its ``spec.activity:`` / ``spec.workflow:`` defaults (from the
    executor, step, loop and task layers: a step may give every call its ``task_queue``)."""
    knobs = cmd.spec.get(cmd.kind)
    return deep_merge(knobs, cmd.config) if isinstance(knobs, dict) else cmd.config


def _seconds(value: Any) -> timedelta | None:
    return timedelta(seconds=float(value)) if isinstance(value, int | float) and value > 0 else None


async def activity_outcome(cmd: RunTask, settled: bool = False) -> Outcome:
    """``kind: activity``: the user's activity by type name; its return value is the result.

    ``settled`` (the execution's ``settled-user-activity`` behaviour): a cancelled call ends
    once the user's worker acknowledged the cancel, as our own tasks do (``task_runs.py``), so
    the run never closes with the activity pending. Only an activity that heartbeats sees the
    cancel; one that does not runs until it returns or its timeout (docs/tools.md)."""
    config = settings(cmd)
    try:
        result = await workflow.execute_activity(
            str(config["name"]), args=call_args(config), task_queue=str(config["task_queue"]),
            activity_id=cmd.task_run_id,
            start_to_close_timeout=_seconds(config.get("start_to_close_timeout"))
            or timedelta(seconds=cmd.timeout or DEFAULT_START_TO_CLOSE_S),
            heartbeat_timeout=_seconds(config.get("heartbeat_timeout")),
            retry_policy=retry_policy(cmd),
            cancellation_type=ActivityCancellationType.WAIT_CANCELLATION_COMPLETED if settled
            else ActivityCancellationType.TRY_CANCEL,
            summary=f"{cmd.step} / {cmd.task} (activity {config['name']})")
    except ActivityError as err:
        return Outcome.failed(error_of(err.cause, "activity", config["name"]))
    return Outcome.ok(result, activity_type=config["name"])


async def workflow_outcome(cmd: RunTask, execution_id: str) -> Outcome:
    """``kind: workflow``: the user's workflow as a child by type name; its return value is the result."""
    config = settings(cmd)
    name = str(config["name"])
    child_id = str(config.get("id") or child_execution_id(execution_id, cmd.task_run_id, name))
    try:
        result = await workflow.execute_child_workflow(
            name, args=call_args(config), id=child_id, task_queue=str(config["task_queue"]),
            execution_timeout=_seconds(config.get("execution_timeout")) or _seconds(cmd.timeout),
            retry_policy=retry_policy(cmd) if cmd.max_attempts > 1 else None,
            parent_close_policy=_PARENT_CLOSE[str(config.get("parent_close_policy") or "terminate")],
            cancellation_type=ChildWorkflowCancellationType.WAIT_CANCELLATION_COMPLETED,
            static_summary=f"{cmd.step} / {cmd.task} (workflow {name})")
    except ChildWorkflowError as err:
        return Outcome.failed(error_of(err.cause, "workflow", name), child_workflow_id=child_id)
    return Outcome.ok(result, child_workflow_id=child_id)


def error_of(cause: BaseException | None, what: str, name: Any) -> ErrorInfo:
    """What a policy rule sees of the user's failure: ``kind`` and ``type`` the
    ``ApplicationError``'s type (``kind`` is what rules route on), its ``message`` and
    ``non_retryable``; a timeout is ``timeout``, a cancellation ``cancelled``."""
    if isinstance(cause, CancelledError):
        return ErrorInfo(kind="cancelled", message=f"{what} {name!r} was cancelled")
    if isinstance(cause, TemporalTimeoutError):
        return ErrorInfo(kind="timeout", message=f"{what} {name!r} timed out ({cause.type.name if cause.type else 'timeout'})",
                         retryable=True)
    message = str(getattr(cause, "message", None) or cause or f"{what} {name!r} failed")
    if isinstance(cause, ApplicationError):
        kind = cause.type or what
        return ErrorInfo(kind=kind, message=message, retryable=not cause.non_retryable, code=cause.type,
                         details={"details": list(cause.details)} if cause.details else None,
                         extra={"type": kind, "non_retryable": cause.non_retryable})
    return ErrorInfo(kind=what, message=message, extra={"type": type(cause).__name__ if cause else what,
                                                        "non_retryable": False})
