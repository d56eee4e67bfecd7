"""Legacy NoETL event names and what they mean in the canonical taxonomy (seed 001 §4).

Used to accept legacy names as filters; ``docs/events.md`` prints this table.
A legacy name maps to one or more canonical types, optionally narrowed by ``status``.
"""

from __future__ import annotations

__all__ = ["LEGACY_EVENT_NAMES", "CANONICAL_EVENT_TYPES", "expand_types"]

CANONICAL_EVENT_TYPES = (
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
)

# legacy name -> (canonical types, status narrowing or None)
LEGACY_EVENT_NAMES: dict[str, tuple[tuple[str, ...], str | None]] = {
    "playbook.initialized": (("playbook.started",), None),
    "playbook.completed": (("playbook.finished",), "success"),
    "playbook.failed": (("playbook.finished",), "error"),
    "workflow.initialized": (("workflow.started",), None),
    "workflow.completed": (("workflow.finished",), "success"),
    "workflow.failed": (("workflow.finished",), "error"),
    "step.enter": (("step.started",), None),
    "step.exit": (("step.done", "step.failed"), None),
    "call.done": (("task.done",), None),
    "call.error": (("task.failed",), None),
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


def expand_types(names: list[str] | None) -> tuple[set[str], dict[str, str]] | None:
    """Canonical types a filter selects, plus status narrowing per type (legacy names).

    Returns None for "no filter". Unknown names raise ValueError naming the valid ones.
    """
    if not names:
        return None
    types: set[str] = set()
    status: dict[str, str] = {}
    for name in names:
        if name in CANONICAL_EVENT_TYPES:
            types.add(name)
            status.pop(name, None)
        elif name in LEGACY_EVENT_NAMES:
            canonical, narrowing = LEGACY_EVENT_NAMES[name]
            for c in canonical:
                if narrowing and c not in types:
                    status[c] = narrowing
                types.add(c)
        elif name.endswith(".*") and any(t.startswith(name[:-1]) for t in CANONICAL_EVENT_TYPES):
            types |= {t for t in CANONICAL_EVENT_TYPES if t.startswith(name[:-1])}
        else:
            raise ValueError(f"unknown event type {name!r}; use a canonical type such as "
                             "'step.done' (see docs/events.md), a prefix such as 'task.*', "
                             "or a legacy name such as 'step.exit'")
    return types, status
