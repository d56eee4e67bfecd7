"""The task activities: a thin Temporal adapter over :func:`noetl_temporal.attempt.run_attempt`.

The attempt itself is Temporal-free (prepare -> run -> scrub -> store -> the policy's
decision; walked in docs/layout.md, "One python task, step by step"). What is Temporal's
stays here: the attempt number, heartbeats (every attempt's record is heartbeated before a
retry, so the last attempt returns them all, and an attempt lost with its worker is recorded
by the next as ``worker_lost``), and turning the decision into a result or a retryable
``ApplicationError`` with the rule's ``next_retry_delay`` (an operator's ``set-retry``
rewrites the ``RetryPolicy`` on the server: docs/approvals.md). On the fast path
(``spec.local``) the workflow drives the attempts instead. A
:class:`~noetl_temporal.engine.envelopes.TaskResult` crosses the boundary as its JSON;
only ``PolicyRetry`` and ``NoetlInternalError`` cross it as errors.
See docs/semantics.md#retries-are-temporal-retries, docs/semantics.md#the-fast-path-speclocal,
docs/keychain.md#how-it-works, docs/tools.md#large-results-resultrefs and docs/events.md.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from temporalio import activity
from temporalio.converter import DataConverter
from temporalio.exceptions import ApplicationError, ApplicationErrorCategory

from .. import keychain
from ..attempt import Fit, run_attempt, under_test
from ..conversion.converter import has_claim_check, oversized
from ..engine.envelopes import Attempt, ErrorInfo, Outcome, TaskResult
from ..engine.idempotency import idempotency_key
from ..engine.messages import RunTask
from ..engine.policy_evaluation import NextAttempt
from ..errors import ToolError
from ..tools import ToolCall
from ..tools.base import error_outcome
from .tracing import label_task_span
from .types import RUN_TASK_ACTIVITY, RUN_TASK_LOCAL_ACTIVITY

log = logging.getLogger(__name__)

__all__ = ["run_task", "run_task_local", "ACTIVITIES", "POLICY_RETRY", "INTERNAL_ERROR"]

POLICY_RETRY = "PolicyRetry"
INTERNAL_ERROR = "NoetlInternalError"


class _Heartbeats:
    """Heartbeat while the tool runs, so a cancel reaches it and a lost worker is noticed.

    A timer rather than a task: most tools finish before the first beat is due, and a
    timer costs the event loop less to start and cancel. Its callbacks run in the
    activity's context (``call_later`` copies it), which ``activity.heartbeat`` needs."""

    def __init__(self, history: list[dict[str, Any]]) -> None:
        timeout = activity.info().heartbeat_timeout
        self.every = max(0.5, min(timeout.total_seconds() / 3, 10.0)) if timeout else 10.0
        self.history = history
        self.loop = asyncio.get_running_loop()
        self.timer = self.loop.call_later(self.every, self._beat)

    def _beat(self) -> None:
        activity.heartbeat(self.history)
        self.timer = self.loop.call_later(self.every, self._beat)

    def stop(self) -> None:
        self.timer.cancel()


def _previous_attempts() -> list[dict[str, Any]]:
    """The records of this task's earlier attempts: the ones a policy retried (heartbeated
    with the retry), and one for each attempt that ended without a record (:func:`_lost`)."""
    info = activity.info()
    recorded: list[dict[str, Any]] = []
    if info.heartbeat_details and isinstance(info.heartbeat_details[0], list):
        recorded = list(info.heartbeat_details[0])
    return _with_lost(recorded, info.attempt)


#: why an attempt left no record: Temporal retried it after its worker stopped answering
LOST_KIND = "worker_lost"


def _with_lost(recorded: list[dict[str, Any]], attempt: int) -> list[dict[str, Any]]:
    """``recorded`` with a failed record for every earlier attempt missing from it.

    An attempt records itself when it ends (or, retried by a policy, in its heartbeat); one
    whose worker died (killed, its machine lost) or that Temporal timed out (heartbeat or
    start-to-close) left nothing, and Temporal started this one in its place. Without these
    records the event log would show one attempt where two ran."""
    numbers = {r.get("attempt") for r in recorded}
    lost = [_lost(n) for n in range(1, attempt) if n not in numbers]
    if not lost:
        return recorded
    return sorted([*recorded, *lost], key=lambda r: int(r.get("attempt") or 0))


def _lost(attempt: int) -> dict[str, Any]:
    error = ErrorInfo(kind=LOST_KIND, retryable=True,
                      message=f"attempt {attempt} ended without a result: its worker was lost, or Temporal "
                              "timed it out (heartbeat or start-to-close timeout); Temporal ran the task again",
                      fix="see the worker's log for why it stopped; a task that outlives its timeout needs a "
                          "larger spec.timeout")
    return Attempt(attempt=attempt, status="error", error=error, action="retry").to_dict()


@activity.defn(name=RUN_TASK_ACTIVITY)
async def run_task(cmd: RunTask) -> dict[str, Any]:
    """One task invocation; returns its :class:`TaskResult` as JSON."""
    return (await _run_task(cmd, None)).to_dict()


@activity.defn(name=RUN_TASK_LOCAL_ACTIVITY)
async def run_task_local(cmd: RunTask, local: dict[str, Any]) -> dict[str, Any]:
    """The fast path's activity (run as a local activity by the workflow)."""
    return (await _run_task(cmd, local)).to_dict()


async def _run_task(cmd: RunTask, local: dict[str, Any] | None) -> TaskResult:
    info = activity.info()
    label_task_span(cmd.execution_id, cmd.step, cmd.task, cmd.kind)
    # A local activity (the fast path) cannot heartbeat: the workflow carries its policy
    # attempts instead (``local``: the attempt number and the earlier records).
    attempt, history = _local_attempt(info, local) if info.is_local else (info.attempt, _previous_attempts())
    started = datetime.now(UTC)
    clock = time.monotonic()
    call = ToolCall(execution_id=cmd.execution_id, step=cmd.step, task=cmd.task, attempt=attempt,
                    timeout=cmd.timeout, task_run_id=cmd.task_run_id, result_spec=cmd.result_spec,
                    store_result=not cmd.rules,  # a policy's guards read the result's value
                    idempotency_key=idempotency_key(cmd.execution_id, cmd.task_run_id, cmd.secret_context),
                    heartbeat=None if info.is_local else lambda *d: activity.heartbeat(history, *d))
    beats = None if info.is_local else _Heartbeats(history)
    try:
        outcome, decision = await run_attempt(cmd, call, _fit(cmd, call))
    except Exception as exc:  # a bug on our side: never retried, always reported with its type
        # No exception chaining: Temporal would record the cause's text, which may quote a secret.
        message = keychain.Scrubber(call.secrets).text(f"internal error running task '{cmd.task}' of step '{cmd.step}': "
                                f"{type(exc).__name__}: {exc}")
        log.error("%s", message)
        raise ApplicationError(message, type=INTERNAL_ERROR, non_retryable=True) from None
    finally:
        if beats is not None:
            beats.stop()
    record = Attempt(attempt=attempt, status=outcome.status, started_at=started.isoformat().replace("+00:00", "Z"),
                     duration_ms=int((time.monotonic() - clock) * 1000), error=outcome.error,
                     action=decision.action, rule_index=decision.rule_index)
    following = _operator_policy(info, decision.following, attempt)
    if following.retry:
        delay = following.delay
        history.append(dataclasses.replace(record, next_delay_s=delay).to_dict())   # heartbeat JSON
        if not info.is_local:
            activity.heartbeat(history)
        raise ApplicationError(
            f"policy retry {attempt}/{following.allowed} of task '{cmd.task}': "
            f"{(outcome.error.message if outcome.error is not None else None) or outcome.status}",
            history, type=POLICY_RETRY,
            # a test run's clock (docs/testing-playbooks.md): the backoff is recorded, not waited
            next_retry_delay=timedelta(seconds=0.001 if under_test() else delay),
            # an expected retry, not a worker problem: no stack trace in the worker log
            category=ApplicationErrorCategory.BENIGN)
    attempts = (*(Attempt.from_dict(earlier) for earlier in history), record)
    return TaskResult(outcome=outcome, attempts=attempts, rule_index=decision.rule_index,
                      action=decision.action, exhausted=following.exhausted)


#: the retry policy backoff coefficient that marks an operator's policy (``step_retries.OPERATOR_BACKOFF``)
_OPERATOR_BACKOFF = 1.0


def _operator_policy(info: activity.Info, following: NextAttempt, attempt: int) -> NextAttempt:
    """The task policy's retry, or, where an operator changed the policy of this running
    task (``noetl-temporal set-retry``: Temporal's retry policy with backoff coefficient 1),
    the operator's attempts (``maximum_attempts``) and delay (``initial_interval``).
    Only a retry the task policy asked for (or ran out of) is changed: the policy still
    decides which outcomes are retried."""
    policy = info.retry_policy
    if (info.is_local or policy is None or policy.backoff_coefficient != _OPERATOR_BACKOFF
            or not (following.retry or following.exhausted)):
        return following
    allowed = policy.maximum_attempts or following.allowed
    if attempt < allowed:
        return NextAttempt(retry=True, delay=policy.initial_interval.total_seconds(), allowed=allowed)
    return NextAttempt(allowed=allowed, exhausted=True)


def _fit(cmd: RunTask, call: ToolCall) -> Fit | None:
    """The check that an outcome fits in history, where it is needed (else None).

    Only a worker whose converter lacks the claim check can meet an outcome too large to
    enter history (an embedding that connected with its own converter): Temporal would
    refuse the result (TMPRL1103) and the task would be retried until its attempts run out."""
    try:
        converter = activity.client().data_converter
    except RuntimeError:  # no client (an activity run outside a worker, in a test)
        return None
    if has_claim_check(converter):  # the usual worker: nothing to measure
        return None

    async def fitting(outcome: Outcome) -> Outcome:
        return await _fitting_history(outcome, converter, cmd, call)
    return fitting


async def _fitting_history(outcome: Outcome, converter: DataConverter, cmd: RunTask, call: ToolCall) -> Outcome:
    """The outcome, or a located error outcome when it is too large to enter history: the
    playbook's error, not retried, which the task's policy can route on."""
    size = await oversized(converter, outcome.to_dict())
    if size is None:
        return outcome
    err = ToolError(f"the result of task '{cmd.task}' of step '{cmd.step}' is {size} bytes encoded, over "
                    "Temporal's 2 MB payload limit, and this worker's data converter has no claim check",
                    kind="result_too_large", retryable=False,
                    fix="connect the worker's client with data_converter=noetl_temporal.data_converter(your "
                        "converter or codec), or keep the result out of history with "
                        "spec.result.inline_max_bytes (docs/tools.md)")
    return error_outcome(err, call)


def _local_attempt(info: activity.Info, local: dict[str, Any] | None) -> tuple[int, list[dict[str, Any]]]:
    """A fast-path attempt's number and the records before it. Temporal's own retries of
    a local activity (a timeout, a lost worker) repeat the same policy attempt."""
    local = local or {}
    return int(local.get("attempt") or 1), list(local.get("history") or [])


# Typed: mypy would join the two signatures to `function`, which a Worker does not accept.
ACTIVITIES: list[Callable[..., Any]] = [run_task, run_task_local]
