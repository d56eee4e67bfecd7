"""One line, not a traceback, when a worker logs a cancelled activity.

When a playbook is cancelled (or stops on ``fail_fast``, or a step times out), its running
tasks are cancelled. If the workflow closes before the activity's cancel is confirmed, the
SDK sees a plain ``CancelledError`` and logs "Completing activity as failed" at WARNING with
the whole stack (some forty lines per task, in ``dev`` and ``worker`` output), although
nothing went wrong. :func:`quiet_cancelled_activities` rewrites such a record to one line
naming the task, its execution and why it was cancelled; every other record is untouched.

Two more lines reach the terminal when a run is interrupted or cancelled (Ctrl-C of ``run``,
a cancel in ``dev``), neither of them a problem:

* the SDK core's "Activity not found on completion ... task_token ..." (forwarded to the
  ``temporalio.core`` logger, :mod:`.runtime`): the task stopped after its execution had
  closed, so there was nobody to tell. It becomes the same one line, named from the task
  token (or dropped when that task's line was logged already);
* asyncio's "Unknown child process pid N, will report returncode 255": a task's process was
  reaped by the transport closing it (``Popen.poll``) before asyncio's watcher thread got
  to it. The process is gone either way; the record is dropped.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import logging
import re
from collections import deque
from typing import Any

from temporalio import activity
from temporalio.exceptions import CancelledError

__all__ = ["quiet_cancelled_activities", "CancelledActivityFilter", "LateCompletionFilter", "ReapedChildFilter"]

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


_LINE = "task %s of execution %s cancelled: %s"


class _Logged:
    """The tasks whose cancelled line was printed lately: the core's late report of the same
    task is then not a second line. Bounded: only the last few hundred matter."""

    def __init__(self, size: int = 512) -> None:
        self._keys: deque[tuple[str, str]] = deque(maxlen=size)

    def add(self, workflow_id: str, activity_id: str) -> None:
        self._keys.append((workflow_id, activity_id))

    def __contains__(self, key: object) -> bool:
        return key in self._keys


_LOGGED = _Logged()


class CancelledActivityFilter(logging.Filter):
    """Turns the SDK's "Completing activity as failed" record of a cancelled activity into one line."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, (asyncio.CancelledError, CancelledError)) and str(record.msg).startswith(_FAILED):
            info: dict[str, Any] = getattr(record, "temporal_activity", None) or {}
            activity_id, workflow_id = str(info.get("activity_id", "?")), str(info.get("workflow_id", "?"))
            record.msg, record.args = _LINE, (activity_id, workflow_id, _why())
            record.exc_info, record.exc_text = None, None
            _LOGGED.add(workflow_id, activity_id)
        return True


_NOT_FOUND = "Activity not found on completion"
_TOKEN = re.compile(r"TaskToken\(([A-Za-z0-9+/=_-]+)\)")


class LateCompletionFilter(logging.Filter):
    """The core's "Activity not found on completion" as the one cancelled-task line."""

    def filter(self, record: logging.LogRecord) -> bool:
        core = getattr(record, "temporal_log", None)
        if core is None or not str(getattr(core, "message", "")).startswith(_NOT_FOUND):
            return True
        fields = getattr(core, "fields", None) or {}
        workflow_id, activity_id = _token_ids(str(fields.get("task_token", "")))
        if (workflow_id, activity_id) in _LOGGED:
            return False
        _LOGGED.add(workflow_id, activity_id)
        record.msg, record.args = _LINE, (activity_id, workflow_id, "its execution had ended")
        return True


class ReapedChildFilter(logging.Filter):
    """Drops asyncio's "Unknown child process pid" of a task process reaped by its transport."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Unknown child process pid")


def _token_ids(text: str) -> tuple[str, str]:
    """(workflow id, activity id) of an activity task token, as the core prints it
    (``TaskToken(<base64>)``); ``?`` for what cannot be read."""
    match = _TOKEN.search(text)
    token = (match[1] if match else "") + "=="   # excess padding is ignored, missing padding is not
    try:
        raw = base64.urlsafe_b64decode(token) if "-" in token or "_" in token else base64.b64decode(token)
    except (binascii.Error, ValueError):
        raw = b""
    strings = _proto_strings(raw)
    # The server's token (temporal.server.api.token.v1.Task): 2 workflow_id, 6 activity_id.
    return strings.get(2, "?"), strings.get(6, "?")


def _proto_strings(raw: bytes) -> dict[int, str]:
    """The top-level length-delimited fields of a protobuf message that are UTF-8 text.
    A reader of the wire format's four common types, enough for a task token."""
    found: dict[int, str] = {}
    at = 0
    try:
        while at < len(raw):
            key, at = _varint(raw, at)
            number, wire = key >> 3, key & 7
            if wire == 0:
                _, at = _varint(raw, at)
            elif wire == 2:
                size, at = _varint(raw, at)
                chunk, at = raw[at:at + size], at + size
                if len(chunk) == size:
                    found.setdefault(number, chunk.decode("utf-8"))
            elif wire in (1, 5):
                at += 8 if wire == 1 else 4
            else:
                break
    except (IndexError, UnicodeDecodeError):
        pass
    return found


def _varint(raw: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = raw[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, at


_FILTERS = {"temporalio.activity": CancelledActivityFilter(), "temporalio.core": LateCompletionFilter(),
            "asyncio": ReapedChildFilter()}


def quiet_cancelled_activities() -> None:
    """Install the filters on the loggers they watch (idempotent)."""
    for name, log_filter in _FILTERS.items():
        logger = logging.getLogger(name)
        if log_filter not in logger.filters:
            logger.addFilter(log_filter)
