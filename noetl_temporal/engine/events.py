"""The canonical event envelope (seed 001 §2) and the append-only log.

Event ids are ``<execution_id>:<seq>`` with a gap-free ``seq``: replaying a workflow
rebuilds exactly the same ids, so an idempotent store keyed by
``(execution_id, event_id)`` never duplicates an event.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["EventLog", "alias_of", "PAYLOAD_CAP_BYTES", "WORKER_EVENTS"]

# Payloads are capped so the log (workflow memory, queries, the store) stays small;
# large values belong in the result store and travel as references.
PAYLOAD_CAP_BYTES = 16 * 1024

# Events the data plane emits per seed 001 §5.2; everything else is the server's.
WORKER_EVENTS = frozenset({
    "step.started", "step.done", "step.failed",
    "task.started", "task.attempt.started", "task.attempt.done", "task.attempt.failed",
    "task.done", "task.failed", "policy.task.evaluated",
    "loop.iteration.started", "loop.iteration.done", "loop.iteration.failed", "result.stored",
})

_ENTITY_OF_PREFIX = {
    "playbook": "playbook", "workflow": "workflow", "step": "step", "task": "task",
    "loop": "loop", "policy": "policy", "next": "next", "result": "result", "execution": "playbook",
}


def alias_of(event_type: str) -> str:
    """``task.attempt.failed`` -> ``TaskAttemptFailed``."""
    return "".join(part.capitalize() for part in event_type.split("."))


def cap_payload(payload: dict[str, Any] | None) -> dict[str, Any]:
    if not payload:
        return {}
    text = json.dumps(payload, default=str, separators=(",", ":"))
    if len(text) <= PAYLOAD_CAP_BYTES:
        return json.loads(text) if _needs_plain(payload) else payload
    return {"truncated": True, "bytes": len(text), "preview": text[:1024]}


def _needs_plain(payload: dict[str, Any]) -> bool:
    # Fast path: payloads made only of JSON types are kept as they are.
    try:
        json.dumps(payload)
        return False
    except (TypeError, ValueError):
        return True


class EventLog:
    """Builds envelopes with a monotonic, gap-free ``seq``; holds them in order."""

    def __init__(self, execution_id: str) -> None:
        self.execution_id = execution_id
        self.parent_execution_id: str | None = None   # set for sub-playbook executions
        self.events: list[dict[str, Any]] = []
        # Events before ``base`` belong to earlier runs of a continued-as-new execution:
        # they are in the event store, not in memory.
        self.base = 0

    @property
    def seq(self) -> int:
        return self.base + len(self.events)

    def since(self, after_seq: int, limit: int) -> list[dict[str, Any]]:
        """Events in memory with ``seq > after_seq`` (from ``base`` on), at most ``limit``."""
        start = max(after_seq - self.base, 0)
        return self.events[start: start + max(limit, 0)]

    def emit(self, event_type: str, *, timestamp: str, entity_id: str | None = None,
             parent_id: str | None = None, status: str | None = None,
             payload: dict[str, Any] | None = None, **correlation: Any) -> dict[str, Any]:
        seq = self.base + len(self.events) + 1
        event: dict[str, Any] = {
            "event_id": f"{self.execution_id}:{seq}",
            "event_type": event_type,
            "event_alias": alias_of(event_type),
            "timestamp": timestamp,
            "execution_id": self.execution_id,
            **({"parent_execution_id": self.parent_execution_id} if self.parent_execution_id else {}),
            "source": "worker" if event_type in WORKER_EVENTS else "server",
            "entity_type": _ENTITY_OF_PREFIX.get(event_type.split(".", 1)[0], "playbook"),
            "entity_id": entity_id,
            "parent_id": parent_id,
            "seq": seq,
            "status": status,
        }
        for key, value in correlation.items():
            if value is not None:
                event[key] = value
        event["payload"] = cap_payload(payload)
        self.events.append(event)
        return event
