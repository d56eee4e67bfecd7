"""A tool task run from the playbook workflow: the ``noetl.run_task`` activity, or on the
fast path (``spec.local: true``) the local activity with its policy-retry loop, and what a
failed or cancelled activity reports back instead of an outcome the activity decided on.

Workflow code (called from ``PlaybookWorkflow``): it takes time and waits only through
``temporalio.workflow``.
"""

from __future__ import annotations

import asyncio
import dataclasses
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, CancelledError, FailureError
from temporalio.exceptions import TimeoutError as TemporalTimeoutError
from temporalio.workflow import ActivityCancellationType

with workflow.unsafe.imports_passed_through():
    from ..conversion.local_only import local_run_task
    from ..engine import behaviours
    from ..engine.envelopes import Attempt, ErrorInfo, Outcome, TaskResult
    from ..engine.idempotency import ORIGIN
    from ..engine.messages import RunTask
    from .activities import INTERNAL_ERROR, POLICY_RETRY
    from .types import RUN_TASK_ACTIVITY, RUN_TASK_LOCAL_ACTIVITY, RunInput

from . import test_clock
from .fast_retries import FastRetry

__all__ = ["run_task", "failed_activity", "failure", "cancelled"]


async def run_task(cmd: RunTask, inp: RunInput, fast: FastRetry | None = None) -> TaskResult:
    """Run one tool task; a failed or cancelled activity becomes an undecided result. A
    ``ValueError`` (the worker does not register the fast path's activity) goes to the caller.
    ``fast``: the operator's view of a fast-path task's retry loop (``fast_retries.py``)."""
    timeout = cmd.timeout or 300.0
    cmd = _with_key_origin(cmd, inp)
    try:
        if cmd.spec.get("local") is True:
            return await _run_local(cmd, inp, timeout, fast)
        raw: dict[str, Any] = await workflow.execute_activity(
            RUN_TASK_ACTIVITY, cmd,
            activity_id=cmd.task_run_id,
            start_to_close_timeout=timedelta(seconds=timeout + 30),
            heartbeat_timeout=timedelta(seconds=max(inp.heartbeat_timeout_s, 1.0)),
            retry_policy=RetryPolicy(
                initial_interval=timedelta(seconds=1),
                maximum_attempts=cmd.max_attempts + inp.infra_attempts - 1,
                non_retryable_error_types=[INTERNAL_ERROR],
            ),
            summary=f"{cmd.step} / {cmd.task} ({cmd.kind})",
            cancellation_type=_cancellation(inp),
        )
        return TaskResult.from_dict(raw)   # the wire: the activity's JSON, read once
    except FailureError as err:  # a local activity's failure may arrive unwrapped
        return failed_activity(err)
    except asyncio.CancelledError:
        return cancelled("task cancelled")


def _with_key_origin(cmd: RunTask, inp: RunInput) -> RunTask:
    """A redrive's task gets the execution its idempotency keys come from (the plan's
    ``key_origin``, ``engine/idempotency.py``): a rerun step keeps the key its failed run had.
    Only a redrive's plan has one, so every other command (and every recorded history) is as
    before."""
    origin = (inp.redrive or {}).get("key_origin")
    if not isinstance(origin, str) or not origin:
        return cmd
    return dataclasses.replace(cmd, secret_context={**cmd.secret_context, ORIGIN: origin})


def _cancellation(inp: RunInput) -> ActivityCancellationType:
    """Wait for a cancelled activity's acknowledgement where the execution was started with
    ``settled-close``, so the run never closes with it pending; histories from before replay
    with the immediate resolution they recorded."""
    if behaviours.SETTLED_CLOSE in (inp.behaviours or ()):
        return ActivityCancellationType.WAIT_CANCELLATION_COMPLETED
    return ActivityCancellationType.TRY_CANCEL


async def _run_local(cmd: RunTask, inp: RunInput, timeout: float, fast: FastRetry | None) -> TaskResult:
    """The fast path (``spec.local: true``): the task as a local activity, run by this
    worker without a round trip through the server's activity queue.

    A local activity cannot heartbeat, so policy retries are driven from here: each
    attempt is one local activity told its attempt number and the earlier records; a
    ``PolicyRetry`` ends it (not retried by Temporal) and the next attempt starts after
    the rule's delay on a durable timer. Temporal retries only infrastructure failures
    (a timeout, a lost worker), up to ``infra_attempts``, repeating the same attempt.
    A worker crash re-runs the attempt in flight: its result is recorded only when the
    workflow task completes. With ``fast`` (behaviour ``fast-retry-controls``), an operator's
    retry-now ends the wait, and their attempts and delay replace the rule's from the next
    decision on (``fast_retries.py``).
    """
    attempt, history = 1, list[dict[str, Any]]()
    while True:
        if fast is not None:
            fast.attempt = attempt
        try:
            raw: dict[str, Any] = await workflow.execute_local_activity(
                RUN_TASK_LOCAL_ACTIVITY, args=[local_run_task(cmd), {"attempt": attempt, "history": history}],
                activity_id=f"{cmd.task_run_id}/{attempt}",
                start_to_close_timeout=timedelta(seconds=timeout + 30),
                retry_policy=RetryPolicy(initial_interval=timedelta(seconds=1), maximum_attempts=inp.infra_attempts,
                                         non_retryable_error_types=[INTERNAL_ERROR, POLICY_RETRY]),
                summary=f"{cmd.step} / {cmd.task} ({cmd.kind}, local)")
            result = TaskResult.from_dict(raw)
            more = fast.goes_on(cmd, result) if fast is not None else None
            if fast is None or more is None:
                return result
            # the rule's attempts ran out, the operator's did not: one more after their delay
            history = [a.to_dict() for a in result.attempts]
            history[-1] = {**history[-1], "next_delay_s": more}
            fast.failed(history[-1])
            attempt, delay = attempt + 1, more
        except (ActivityError, ApplicationError) as err:
            retry = _policy_retry(err)
            if retry is None:
                raise
            history = list(retry.details[0])
            attempt = int(history[-1]["attempt"]) + 1
            delay = float(history[-1].get("next_delay_s") or 0)
            if fast is not None:
                fast.failed(history[-1])
                if fast.stops_before(attempt):   # the operator's attempts are used up
                    return _retries_exhausted(retry)
                delay = fast.wait_length(delay)
                history[-1] = {**history[-1], "next_delay_s": delay}
        summary = f"retry {cmd.step}/{cmd.task}"
        if fast is not None and delay > 0:
            fast.attempt = attempt   # the attempt it waits for, as Temporal numbers an activity's backoff
            await fast.wait(delay, summary=summary)
        elif delay > 0:
            await test_clock.sleep(delay, test_clock=inp.test_clock, summary=summary)


def _chain(err: BaseException | None) -> list[BaseException]:
    out: list[BaseException] = []
    while err is not None and len(out) < 10:
        out.append(err)
        err = getattr(err, "cause", None) or err.__cause__
    return out


def _policy_retry(err: BaseException) -> ApplicationError | None:
    """The ``PolicyRetry`` in a local activity's failure (wrapped or not), with its records."""
    return next((e for e in _chain(err) if isinstance(e, ApplicationError) and e.type == POLICY_RETRY
                 and e.details and isinstance(e.details[0], list)), None)


def failed_activity(err: FailureError) -> TaskResult:
    """What a task whose activity failed (or was cancelled) reports: an undecided error
    outcome, or the last attempt's error when Temporal cut the policy's retries short."""
    cause = err.cause if isinstance(err, ActivityError) else err
    if isinstance(cause, CancelledError):
        return cancelled("task cancelled")
    if isinstance(cause, ApplicationError) and cause.type == POLICY_RETRY:
        return _retries_exhausted(cause)
    # Temporal's own limits (start-to-close, heartbeat) end an attempt with its TimeoutError.
    kind = "timeout" if isinstance(cause, TemporalTimeoutError) else "activity"
    message = str(getattr(cause, "message", None) or cause or err)
    if isinstance(cause, ApplicationError) and cause.type:
        message = f"{cause.type}: {message}"
    return TaskResult.undecided(failure(kind, message))


def failure(kind: str, message: str) -> Outcome:
    """A failure found by the workflow, not by a tool (never retryable: no activity is left to retry)."""
    return Outcome.failed(ErrorInfo(kind=kind, message=message))


def cancelled(message: str) -> TaskResult:
    return TaskResult.undecided(failure("cancelled", message))


def _retries_exhausted(cause: ApplicationError) -> TaskResult:
    """Retries ran out on Temporal's side (RetryPolicy cap) while the policy still asked
    for more: the last attempt's error is the task's error."""
    details = cause.details[0] if cause.details else None
    attempts = tuple(Attempt.from_dict(a) for a in details) if isinstance(details, list) else ()
    last = attempts[-1] if attempts else Attempt()
    error = (last.error if last.error is not None and not last.error.is_empty else
             # written without a ``code`` key, as this error always was
             ErrorInfo(kind="retries_exhausted", message=str(cause.message),
                       keys=("kind", "retryable", "message")))
    return TaskResult(outcome=Outcome.failed(error, attempt=last.attempt), attempts=attempts,
                      rule_index=last.rule_index, action="fail", exhausted=True)
