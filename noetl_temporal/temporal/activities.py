"""The activity boundary: one tool task invocation = one Temporal activity.

``do: retry`` is carried out by Temporal: the activity evaluates the task policy on its
own outcome and, when the matching rule says retry and attempts remain, raises a
retryable ``ApplicationError`` with ``next_retry_delay`` from the rule's backoff. The
activity's ``RetryPolicy`` caps the attempts, so the Temporal UI shows the attempt count
and the last failure of a retrying task.

Every attempt is recorded (status, timing, error, action) and the record list is
heartbeated before a retry is raised; heartbeat details survive retries, so the final
attempt returns the whole history and the workflow emits ``task.attempt.*`` events from it.

Errors crossing this boundary are typed:
``PolicyRetry`` (retryable: a policy asked for another attempt) and
``NoetlInternalError`` (non-retryable: a bug in noetl-temporal, not in the playbook).
Tool failures never cross it as errors: they are outcomes the policy routes on.
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError, ApplicationErrorCategory

from ..engine.context import outcome_view
from ..engine.messages import RunTask
from ..engine.policy import evaluate_policy, retry_delay
from ..tools import ToolCall, run_tool
from .types import RUN_TASK_ACTIVITY

__all__ = ["run_task", "ACTIVITIES", "POLICY_RETRY", "INTERNAL_ERROR"]

POLICY_RETRY = "PolicyRetry"
INTERNAL_ERROR = "NoetlInternalError"


async def _heartbeat_loop(history: list[dict[str, Any]]) -> None:
    """Heartbeat while the tool runs, so a cancel reaches it and a lost worker is noticed."""
    timeout = activity.info().heartbeat_timeout
    every = max(0.5, min(timeout.total_seconds() / 3, 10.0)) if timeout else 10.0
    while True:
        await asyncio.sleep(every)
        activity.heartbeat(history)


def _previous_attempts() -> list[dict[str, Any]]:
    details = activity.info().heartbeat_details
    if details:
        first = details[0]
        if isinstance(first, list):
            return list(first)
    return []


@activity.defn(name=RUN_TASK_ACTIVITY)
async def run_task(cmd: RunTask) -> dict[str, Any]:
    info = activity.info()
    attempt = info.attempt
    history = _previous_attempts()
    started = datetime.now(UTC)
    clock = time.monotonic()
    beats = asyncio.ensure_future(_heartbeat_loop(history))
    try:
        outcome = await run_tool(cmd.kind, cmd.config, ToolCall(
            execution_id=cmd.execution_id, step=cmd.step, task=cmd.task, attempt=attempt,
            timeout=cmd.timeout, heartbeat=lambda *d: activity.heartbeat(history, *d)))
        outcome.setdefault("meta", {})["attempt"] = attempt
        context = dict(cmd.policy_context)
        view = outcome_view(outcome)
        context.update({"output": view, "outcome": view, "_attempt": attempt, "_task": cmd.task})
        decision = evaluate_policy(cmd.rules, outcome.get("status", "error"), context)
    except Exception as exc:  # a bug on our side: never retried, always reported with its type
        raise ApplicationError(f"internal error running task '{cmd.task}' of step '{cmd.step}': "
                               f"{type(exc).__name__}: {exc}", type=INTERNAL_ERROR,
                               non_retryable=True) from exc
    finally:
        beats.cancel()
    record = {
        "attempt": attempt,
        "status": outcome.get("status"),
        "started_at": started.isoformat().replace("+00:00", "Z"),
        "duration_ms": int((time.monotonic() - clock) * 1000),
        "error": outcome.get("error"),
        "action": decision.action,
        "rule_index": decision.rule_index,
    }
    exhausted = False
    if decision.action == "retry" and decision.rule_index is not None:
        then = cmd.rules[decision.rule_index].get("then") or {}
        allowed = int(then.get("attempts") or 3)
        if attempt < allowed:
            delay = _delay(then, attempt, outcome)
            record["next_delay_s"] = delay
            history.append(record)
            activity.heartbeat(history)
            error = outcome.get("error") or {}
            raise ApplicationError(
                f"policy retry {attempt}/{allowed} of task '{cmd.task}': "
                f"{error.get('message') or outcome.get('status')}",
                history, type=POLICY_RETRY, next_retry_delay=timedelta(seconds=delay),
                # an expected retry, not a worker problem: no stack trace in the worker log
                category=ApplicationErrorCategory.BENIGN)
        exhausted = True
    history.append(record)
    return {"outcome": outcome, "attempts": history, "rule_index": decision.rule_index,
            "action": decision.action, "exhausted": exhausted}


def _delay(then: dict[str, Any], attempt: int, outcome: dict[str, Any]) -> float:
    """The rule's backoff, but never shorter than a server's ``Retry-After``."""
    delay = retry_delay(then, attempt)
    retry_after = (outcome.get("error") or {}).get("retry_after")
    if isinstance(retry_after, int | float) and retry_after > delay:
        cap = then.get("max_delay")
        delay = float(retry_after) if cap is None else min(float(retry_after), float(cap))
    return delay


ACTIVITIES = [run_task]
