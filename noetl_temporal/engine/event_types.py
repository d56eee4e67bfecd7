"""The event vocabulary: every canonical event type, who emits it, and the legacy names.

One home for the names the engine's emitter (:mod:`.events`) writes and everything
else reads: the event store's filters (``store/legacy.py``), the API's accepted
``type=`` values, routing guards (``call.done``) and ``docs/events.md``.
``tests/engine/test_event_catalog.py`` checks that every name the engine emits is here
and that every name here is documented.
"""

from __future__ import annotations

__all__ = [
    "EVENT_TYPES",
    "RESERVED_EVENT_TYPES",
    "WORKER_EVENTS",
    "TERMINAL_EVENT_TYPES",
    "LAST_EVENT_TYPES",
    "CALL_DONE",
    "CALL_ERROR",
    "LEGACY_EVENT_NAMES",
]

# Canonical types (docs/events.md, "Canonical types"), in the order docs/events.md lists them.
EVENT_TYPES: tuple[str, ...] = (
    "playbook.execution.requested", "playbook.request.evaluated", "playbook.started",
    "playbook.paused", "playbook.finished", "playbook.processed",
    "workflow.started", "workflow.finished",
    "step.scheduled", "step.started", "step.done", "step.failed",
    "task.started", "task.attempt.started", "task.attempt.done", "task.attempt.failed",
    "task.done", "task.failed",
    "loop.started", "loop.iteration.scheduled", "loop.iteration.started", "loop.iteration.done",
    "loop.iteration.failed", "loop.done",
    "policy.admit.evaluated", "policy.task.evaluated", "next.evaluated",
    "result.stored", "result.manifest.updated", "execution.cancelled",
    "approval.requested", "approval.answered", "approval.expired", "step.skipped",
    "step.paused", "step.resumed", "step.retry.now", "step.retry.policy",
    "execution.redriven", "execution.redriven_from",
)

# Part of the seed's taxonomy and accepted as filters, but nothing in this runtime emits
# them (results are stored per attempt; there is no manifest to update).
RESERVED_EVENT_TYPES = frozenset({"result.manifest.updated"})

# Events the data plane emits per docs/events.md (``source: worker``); the rest are the server's.
WORKER_EVENTS = frozenset({
    "step.started", "step.done", "step.failed",
    "task.started", "task.attempt.started", "task.attempt.done", "task.attempt.failed",
    "task.done", "task.failed", "policy.task.evaluated",
    "loop.iteration.started", "loop.iteration.done", "loop.iteration.failed", "result.stored",
})

# The terminal lifecycle events: exactly one of them ends every execution's log.
TERMINAL_EVENT_TYPES: tuple[str, ...] = ("playbook.finished", "execution.cancelled")

# The event that closes a log: nothing follows it (followers stop there).
LAST_EVENT_TYPES: tuple[str, ...] = ("playbook.processed", "execution.cancelled")

# NoETL's older engines announce the end of a step's call with ``call.done``/``call.error``.
# Here that is the end of the step itself: every step run, loop steps included, ends with
# exactly one ``step.done`` or ``step.failed``. Routing guards (``event.name == 'call.done'``)
# and event filters (``--type call.done``) both use this one meaning.
CALL_DONE = "call.done"
CALL_ERROR = "call.error"

# legacy name -> (canonical types, status narrowing or None). We never emit these.
LEGACY_EVENT_NAMES: dict[str, tuple[tuple[str, ...], str | None]] = {
    "playbook.initialized": (("playbook.started",), None),
    "playbook.completed": (("playbook.finished",), "success"),
    "playbook.failed": (("playbook.finished",), "error"),
    "workflow.initialized": (("workflow.started",), None),
    "workflow.completed": (("workflow.finished",), "success"),
    "workflow.failed": (("workflow.finished",), "error"),
    "step.enter": (("step.started",), None),
    "step.exit": (("step.done", "step.failed"), None),
    CALL_DONE: (("step.done",), None),
    CALL_ERROR: (("step.failed",), None),
    "command.issued": (("task.started",), None),
    "command.claimed": (("task.attempt.started",), None),
    "command.started": (("task.attempt.started",), None),
    "command.completed": (("task.done",), None),
    "command.failed": (("task.failed",), None),
    "command.cancelled": (("task.failed",), "error"),
    "tool.started": (("task.started",), None),
    "tool.processed": (("task.done", "task.failed"), None),
    "retry.started": (("task.attempt.started",), None),
    "retry.processed": (("task.attempt.done", "task.attempt.failed"), None),
    "sink.started": (("task.started",), None),
    "sink.processed": (("task.done", "task.failed"), None),
    "case.evaluated": (("next.evaluated", "policy.task.evaluated"), None),
    "case.matched": (("next.evaluated", "policy.task.evaluated"), None),
    "loop.completed": (("loop.done",), None),
    "iteration.started": (("loop.iteration.started",), None),
    "iteration.completed": (("loop.iteration.done",), None),
    "iteration.failed": (("loop.iteration.failed",), None),
}
