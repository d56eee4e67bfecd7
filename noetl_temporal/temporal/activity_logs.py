"""One line, not a traceback, when a worker logs a cancelled activity.

When a playbook is cancelled (or stops on ``fail_fast``, or a step times out), its running
tasks are cancelled. If the workflow closes before the activity's cancel is confirmed, the
SDK sees a plain ``CancelledError`` and logs "Completing activity as failed" at WARNING with
the whole stack (some forty lines per task, in ``dev`` and ``worker`` output), although
nothing went wrong. :func:`quiet_cancelled_activities` rewrites such a record to one line
naming the task, its execution and why it was cancelled; every other record is untouched.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from temporalio import activity
from temporalio.exceptions import CancelledError

__all__ = ["quiet_cancelled_activities", "CancelledActivityFilter"]

_FAILED = "Completing activity as failed"
_WHY = (("cancel_requested", "the execution asked for it"), ("not_found", "its execution has ended"),
        ("timed_out", "it timed out"), ("worker_shutdown", "the worker is stopping"),
        ("paused", "it was paused"), ("reset", "its execution was reset"))


def _why() -> str:
    """Why the current activity was cancelled (its cancellation details, when the SDK has them)."""
    try:
        details = activity.cancellation_details()
    except RuntimeError:   # not logged from inside an activity's context
        details = None
    reasons = [text for field, text in _WHY if details is not None and getattr(details, field, False)]
    return ", ".join(reasons) or "cancelled while it ran"


class CancelledActivityFilter(logging.Filter):
    """Turns the SDK's "Completing activity as failed" record of a cancelled activity into one line."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, (asyncio.CancelledError, CancelledError)) and str(record.msg).startswith(_FAILED):
            info: dict[str, Any] = getattr(record, "temporal_activity", None) or {}
            record.msg = "task %s of execution %s cancelled: %s"
            record.args = (info.get("activity_id", "?"), info.get("workflow_id", "?"), _why())
            record.exc_info, record.exc_text = None, None
        return True


_FILTER = CancelledActivityFilter()


def quiet_cancelled_activities() -> None:
    """Install the filter on the SDK's activity logger (idempotent)."""
    logger = logging.getLogger("temporalio.activity")
    if _FILTER not in logger.filters:
        logger.addFilter(_FILTER)
