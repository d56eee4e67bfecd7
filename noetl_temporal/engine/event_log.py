"""The canonical event envelope (docs/events.md, "Envelope") and the append-only log.

Event ids are ``<execution_id>:<seq>`` with a gap-free ``seq``: replaying a workflow
rebuilds exactly the same ids, so an idempotent store keyed by
``(execution_id, event_id)`` never duplicates an event.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from .event_types import WORKER_EVENTS

__all__ = ["EventLog", "alias_of", "PAYLOAD_CAP_BYTES", "WORKER_EVENTS"]

# Payloads are capped so the log (workflow memory, queries, the store) stays small;
# large values belong in the result store and travel as references.
PAYLOAD_CAP_BYTES = 16 * 1024

_ENTITY_OF_PREFIX = {
    "playbook": "playbook", "workflow": "workflow", "step": "step", "task": "task",
    "loop": "loop", "policy": "policy", "next": "next", "result": "result", "execution": "playbook",
}


@lru_cache(maxsize=256)
def alias_of(event_type: str) -> str:
    """``task.attempt.failed`` -> ``TaskAttemptFailed``."""
    return "".join(part.capitalize() for part in event_type.split("."))


@lru_cache(maxsize=256)
def _entity_of(event_type: str) -> str:
    return _ENTITY_OF_PREFIX.get(event_type.split(".", 1)[0], "playbook")


# perf: an event's alias, source and entity worked out per event — benchmark: probes.workflow_cpu
@lru_cache(maxsize=256)
def _kind_of(event_type: str) -> tuple[str, str, str]:
    """What the type alone says of an event: its alias, source and entity type."""
    return alias_of(event_type), "worker" if event_type in WORKER_EVENTS else "server", _entity_of(event_type)


_BIG_INT = 1 << 64
# Nesting past this depth is encoded to find out (and a cycle ends the walk here).
_MAX_DEPTH = 16


# perf: JSON-encoding an event payload to learn it is under the cap — benchmark: probes.workflow_cpu
def _bound(value: Any, room: int, depth: int) -> int:
    """At least the length of ``value``'s compact JSON when ``value`` is made only of JSON
    types (exactly: str, int, float, bool, None, dict with str keys, list, tuple) and that
    bound fits in ``room``; -1 otherwise.

    A character escapes to at most 6 bytes (``\\u00XX``), 12 outside ASCII (an astral one
    as a surrogate pair); a bounded int or a float encodes to at most 24; each member adds
    its separators."""
    kind = type(value)
    if kind is str:
        size = 2 + (6 if value.isascii() else 12) * len(value)
    elif kind is int:
        if not -_BIG_INT < value < _BIG_INT:  # digits without bound
            return -1
        size = 21
    elif kind is float:
        size = 24
    elif kind is bool or value is None:
        size = 5
    elif kind is dict:
        if depth >= _MAX_DEPTH:
            return -1
        size = 2
        for key, item in value.items():
            if type(key) is not str:
                return -1
            size += 4 + (6 if key.isascii() else 12) * len(key)  # quotes, colon, comma
            inner = _bound(item, room - size, depth + 1) if size <= room else -1
            if inner < 0:
                return -1
            size += inner
    elif kind is list or kind is tuple:
        if depth >= _MAX_DEPTH:
            return -1
        size = 2
        for item in value:
            size += 1
            inner = _bound(item, room - size, depth + 1) if size <= room else -1
            if inner < 0:
                return -1
            size += inner
    else:
        return -1
    return size if size <= room else -1


def _surely_small_and_plain(payload: dict[str, Any]) -> bool:
    """Most events carry a few ids, statuses and small results: no need to encode them to
    know they are plain JSON under the cap (a bound on their length, walked once)."""
    return _bound(payload, PAYLOAD_CAP_BYTES, 0) >= 0


def cap_payload(payload: dict[str, Any] | None) -> dict[str, Any]:
    """The payload as plain JSON values, or a truncated preview when it is too large.

    Encoded once: payloads made only of JSON types (nearly all) are kept as they are.
    """
    if not payload:
        return {}
    if _surely_small_and_plain(payload):
        return payload
    try:
        text = json.dumps(payload, separators=(",", ":"))
        plain = False
    except (TypeError, ValueError):
        text = json.dumps(payload, default=str, separators=(",", ":"))
        plain = True
    if len(text) > PAYLOAD_CAP_BYTES:
        return {"truncated": True, "bytes": len(text), "preview": text[:1024]}
    return json.loads(text) if plain else payload


class EventLog:
    """Builds envelopes with a monotonic, gap-free ``seq``; holds them in order."""

    def __init__(self, execution_id: str) -> None:
        self.execution_id = execution_id
        self.parent_execution_id: str | None = None   # set for sub-playbook executions
        self.events: list[dict[str, Any]] = []
        # Events up to ``base`` are in the event store, not in memory: earlier runs of a
        # continued-as-new execution, and events the workflow forgot once persisted.
        self.base = 0

    @property
    def seq(self) -> int:
        return self.base + len(self.events)

    def forget(self, upto_seq: int) -> None:
        """Drop events with ``seq <= upto_seq`` from memory (they are in the event store).

        Keeps workflow memory bounded by the events not yet persisted plus a recent tail,
        not by the length of the execution.
        """
        drop = min(max(upto_seq - self.base, 0), len(self.events))
        if drop:
            del self.events[:drop]
            self.base += drop

    def since(self, after_seq: int, limit: int) -> list[dict[str, Any]]:
        """Events in memory with ``seq > after_seq`` (from ``base`` on), at most ``limit``."""
        start = max(after_seq - self.base, 0)
        return self.events[start: start + max(limit, 0)]

    def emit(self, event_type: str, *, timestamp: str, entity_id: str | None = None,
             parent_id: str | None = None, status: str | None = None,
             payload: dict[str, Any] | None = None, **correlation: Any) -> dict[str, Any]:
        seq = self.base + len(self.events) + 1
        alias, source, entity = _kind_of(event_type)
        # One dict display per shape, keys in the envelope's order (the stored JSON keeps it).
        if self.parent_execution_id:
            event: dict[str, Any] = {
                "event_id": f"{self.execution_id}:{seq}", "event_type": event_type, "event_alias": alias,
                "timestamp": timestamp, "execution_id": self.execution_id,
                "parent_execution_id": self.parent_execution_id, "source": source, "entity_type": entity,
                "entity_id": entity_id, "parent_id": parent_id, "seq": seq, "status": status}
        else:
            event = {
                "event_id": f"{self.execution_id}:{seq}", "event_type": event_type, "event_alias": alias,
                "timestamp": timestamp, "execution_id": self.execution_id, "source": source,
                "entity_type": entity, "entity_id": entity_id, "parent_id": parent_id, "seq": seq,
                "status": status}
        for key, value in correlation.items():
            if value is not None:
                event[key] = value
        event["payload"] = cap_payload(payload)
        self.events.append(event)
        return event
