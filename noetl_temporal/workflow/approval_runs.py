"""A ``kind: approve`` task's wait in the workflow (docs/approvals.md).

The engine holds what waits (``engine/approvals.py``); this is the shell's half: the
wait itself, bounded by the task's ``timeout`` as a durable timer (``wait_condition``'s
timeout is a Temporal timer, so a worker restart neither loses nor restarts it), and the
``answer`` update's argument read into typed values.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from ..engine.messages import RunTask

__all__ = ["AnswerRequest", "SkipRequest", "StepRequest", "PAUSE_STEP_UPDATE", "RESUME_STEP_UPDATE", "RETRY_STEP_UPDATE", "RetryRequest", "wait_for_answer", "remaining", "UPDATE_NAME", "SKIP_UPDATE"]

#: the workflow update a person's answer arrives by
UPDATE_NAME = "answer"
#: the workflow update an operator skips a running step by (engine/skips.py)
SKIP_UPDATE = "skip_step"
#: the workflow updates an operator pauses and resumes one step by (engine/skips.py)
PAUSE_STEP_UPDATE, RESUME_STEP_UPDATE = "pause_step", "resume_step"
#: the workflow update that records a retry-now or a retry policy change (engine/retries.py)
RETRY_STEP_UPDATE = "retry_step"


@dataclass(frozen=True)
class AnswerRequest:
    """The ``answer`` update's argument: ``{"step", "values", "by", "iteration", "reason"}``."""

    step: str
    values: dict[str, Any]
    by: str | None = None
    iteration: int | None = None
    reason: str | None = None

    @classmethod
    def read(cls, data: Any) -> AnswerRequest:
        if not isinstance(data, dict) or not isinstance(data.get("step"), str) or not data["step"]:
            raise ValueError("an answer names the step it answers: {\"step\": ..., \"values\": {...}}")
        values = data.get("values")
        if values is None:
            values = {}
        if not isinstance(values, dict):
            raise ValueError("an answer's `values` is a mapping of field -> value")
        by, iteration, reason = data.get("by"), data.get("iteration"), data.get("reason")
        if by is not None and not isinstance(by, str):
            raise ValueError("`by` (who answers) is a name")
        if iteration is not None and (isinstance(iteration, bool) or not isinstance(iteration, int)):
            raise ValueError("`iteration` is a whole number")
        if reason is not None and not isinstance(reason, str):
            raise ValueError("`reason` is text")
        return cls(step=data["step"], values=values, by=by or None, iteration=iteration, reason=reason)


def remaining(timeout: Any, since: str | None, now: datetime) -> float | None:
    """Seconds left of the task's ``timeout`` (None: no limit), counted from when the engine
    asked (``since``): a wait handed to the next run (continue-as-new) keeps its deadline."""
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        return None
    seconds = float(timeout)
    if since:
        asked = datetime.fromisoformat(since.replace("Z", "+00:00"))
        seconds -= max((now - asked).total_seconds(), 0.0)
    return seconds


@dataclass(frozen=True)
class SkipRequest:
    """The ``skip_step`` update's argument: ``{"step", "reason", "result", "by", "iteration"}``."""

    step: str
    reason: str
    result: Any = None
    by: str | None = None
    iteration: int | None = None

    @classmethod
    def read(cls, data: Any) -> SkipRequest:
        if not isinstance(data, dict) or not isinstance(data.get("step"), str) or not data["step"]:
            raise ValueError("a skip names the step: {\"step\": ..., \"reason\": ...}")
        reason, by, iteration = data.get("reason"), data.get("by"), data.get("iteration")
        if not isinstance(reason, str) or not reason.strip():
            raise ValueError("a skip needs a reason (recorded in step.skipped)")
        if by is not None and not isinstance(by, str):
            raise ValueError("`by` (who skips) is a name")
        if iteration is not None and (isinstance(iteration, bool) or not isinstance(iteration, int)):
            raise ValueError("`iteration` is a whole number")
        return cls(step=data["step"], reason=reason, result=data.get("result"), by=by or None, iteration=iteration)


@dataclass(frozen=True)
class StepRequest:
    """The ``pause_step``/``resume_step`` updates' argument: ``{"step", "reason", "by"}``."""

    step: str
    reason: str | None = None
    by: str | None = None

    @classmethod
    def read(cls, data: Any) -> StepRequest:
        if not isinstance(data, dict) or not isinstance(data.get("step"), str) or not data["step"]:
            raise ValueError("name the step: {\"step\": ...}")
        reason, by = data.get("reason"), data.get("by")
        if reason is not None and not isinstance(reason, str):
            raise ValueError("`reason` is text")
        if by is not None and not isinstance(by, str):
            raise ValueError("`by` is a name")
        return cls(step=data["step"], reason=reason, by=by or None)


@dataclass(frozen=True)
class RetryRequest:
    """The ``retry_step`` update's argument: ``{"step", "action": "now"|"policy", "reason",
    "by", "iteration", "attempts", "delay", "activities"}``; ``activities`` is what the
    client saw Temporal hold (activity id -> ``{"retrying", "attempt", "state"}``)."""

    step: str
    action: str
    reason: str | None = None
    by: str | None = None
    iteration: int | None = None
    attempts: int | None = None
    delay: float | None = None
    activities: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def read(cls, data: Any) -> RetryRequest:
        if not isinstance(data, dict) or not isinstance(data.get("step"), str) or not data["step"]:
            raise ValueError("name the step: {\"step\": ..., \"action\": \"now\"}")
        reason, by, iteration = data.get("reason"), data.get("by"), data.get("iteration")
        if reason is not None and not isinstance(reason, str):
            raise ValueError("`reason` is text")
        if by is not None and not isinstance(by, str):
            raise ValueError("`by` is a name")
        if iteration is not None and (isinstance(iteration, bool) or not isinstance(iteration, int)):
            raise ValueError("`iteration` is a whole number")
        activities = data.get("activities") or {}
        if not isinstance(activities, dict):
            raise ValueError("`activities` is a mapping of activity id -> what Temporal holds")
        return cls(step=data["step"], action=str(data.get("action") or ""), reason=reason, by=by or None,
                   iteration=iteration, attempts=data.get("attempts"), delay=data.get("delay"), activities=activities)


async def wait_for_answer(cmd: RunTask, answered: Callable[[], bool], *, since: str | None = None,
                          now: datetime) -> bool:
    """Wait until ``answered()``; False when the task's ``timeout`` passed first."""
    seconds = remaining(cmd.config.get("timeout"), since, now)
    if seconds is not None and seconds <= 0:
        return answered()
    try:
        await workflow.wait_condition(answered, timeout=timedelta(seconds=seconds) if seconds else None,
                                      timeout_summary=f"approval {cmd.step}" if seconds else None)
    except TimeoutError:
        return answered()
    return True
