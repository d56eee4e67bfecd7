"""Which event puts a step in which state on the execution page (data, not code).

The page's script applies the first row that matches an event's type and status
(``*`` = any status) to the step the event is about; later events win, so a step in a
cycle shows its latest run. ``handled`` is a failure that an arc took care of; ``denied``
a token that admission refused (it may still be admitted when ctx changes).
"""

from __future__ import annotations

__all__ = ["STEP_STATES", "STATE_WORDS", "WATCHED_TYPES", "state_of"]

#: (event_type, status or "*", step state), first match wins
STEP_STATES: tuple[tuple[str, str, str], ...] = (
    ("step.scheduled", "*", "scheduled"),
    ("step.started", "*", "running"),
    ("step.done", "handled", "handled"),
    ("step.failed", "handled", "handled"),
    ("next.evaluated", "handled", "handled"),
    ("step.done", "*", "done"),
    ("step.failed", "*", "failed"),
    ("policy.admit.evaluated", "skipped", "denied"),
)

#: the words shown in a step's box (the picture must read without colour)
STATE_WORDS: dict[str, str] = {
    "idle": "not started", "scheduled": "scheduled", "running": "running", "done": "done",
    "failed": "failed", "handled": "failed, handled", "denied": "denied (admission)",
}

#: what the page asks the event stream for: the table's types, loop progress, the end state
WATCHED_TYPES: tuple[str, ...] = tuple(dict.fromkeys(
    [row[0] for row in STEP_STATES]
    + ["loop.started", "loop.iteration.done", "loop.iteration.failed", "playbook.finished", "execution.cancelled"]))


def state_of(event_type: str, status: str | None) -> str | None:
    """The step state an event means, or None (the same rule the page's script applies)."""
    for row_type, row_status, state in STEP_STATES:
        if row_type == event_type and row_status in ("*", status):
            return state
    return None
