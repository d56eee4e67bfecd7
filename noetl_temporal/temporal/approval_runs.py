"""A ``kind: approve`` task's wait in the workflow (docs/approvals.md).

The engine holds what waits (``engine/approvals.py``); this is the shell's half: the
wait itself, bounded by the task's ``timeout`` as a durable timer (``wait_condition``'s
timeout is a Temporal timer, so a worker restart neither loses nor restarts it), and the
``answer`` update's argument read into typed values.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from ..engine.messages import RunTask

__all__ = ["AnswerRequest", "wait_for_answer", "UPDATE_NAME"]

#: the workflow update a person's answer arrives by
UPDATE_NAME = "answer"


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


async def wait_for_answer(cmd: RunTask, answered: Callable[[], bool]) -> bool:
    """Wait until ``answered()``; False when the task's ``timeout`` passed first."""
    timeout = cmd.config.get("timeout")
    seconds = float(timeout) if isinstance(timeout, int | float) and not isinstance(timeout, bool) else None
    try:
        await workflow.wait_condition(answered, timeout=timedelta(seconds=seconds) if seconds else None,
                                      timeout_summary=f"approval {cmd.step}" if seconds else None)
    except TimeoutError:
        return answered()
    return True
