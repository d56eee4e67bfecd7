"""Step states on the execution page: the API's words, mapped once to the picture.

A step's state is said in the API's words: ``GET /executions/{id}`` gives a finished step's
``steps[*].status`` (COMPLETED, FAILED, HANDLED, CANCELLED, SKIPPED: an operator skipped it) and lists the steps admission
still refuses in ``summary.denied_steps`` (DENIED); the events say what is not finished yet
(SCHEDULED, RUNNING) and which tokens will never run (SKIPPED: dropped when the execution
stops, or refused by a step whose ``on_deny`` is ``discard``). :data:`PICTURE` maps each of
these to the page's state (its CSS class; :data:`STATE_WORDS` the words in the box). Both
the server's first paint (:func:`first_paint`, from the API's detail and the events so far)
and the page's script (the same :data:`STEP_EVENTS` and :data:`PICTURE`, sent to it as
JSON) use them, so the picture and the API cannot disagree.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..engine.event_types import LAST_EVENT_TYPES

__all__ = ["PICTURE", "STATE_WORDS", "STEP_EVENTS", "WATCHED_TYPES", "STOPPING", "Painted", "step_state",
           "first_paint"]

#: the API's step state (None: nothing known, not started) -> the picture's state
PICTURE: dict[str, str] = {
    "PENDING": "idle", "SCHEDULED": "scheduled", "RUNNING": "running", "COMPLETED": "done",
    "FAILED": "failed", "HANDLED": "handled", "CANCELLED": "cancelled", "DENIED": "denied",
    "SKIPPED": "skipped",
}

#: the words shown in a step's box (the picture must read without colour)
STATE_WORDS: dict[str, str] = {
    "idle": "not started", "scheduled": "scheduled", "running": "running", "done": "done",
    "failed": "failed", "handled": "failed, handled", "cancelled": "cancelled",
    "denied": "denied (admission)", "skipped": "skipped",
}

#: (event_type, status or "*", the step's state in the API's words), first match wins. A
#: ``step.failed`` event says which of FAILED/HANDLED/CANCELLED in ``payload.meta.step_status``
#: (the value the API's ``steps`` records), a ``step.done`` SKIPPED there when an operator
#: skipped the step; the row's state is its fallback.
STEP_EVENTS: tuple[tuple[str, str, str], ...] = (
    ("step.scheduled", "*", "SCHEDULED"),
    ("step.started", "*", "RUNNING"),
    ("step.done", "*", "COMPLETED"),
    ("step.failed", "*", "FAILED"),
    ("policy.admit.evaluated", "skipped", "DENIED"),
)

#: the reason a token dropped while the execution stops carries (``engine/machine.py``)
STOPPING = "execution stopping"

#: what the page asks the event stream for: the table's types, loop progress, the end
#: (the last event's ``seq`` is the execution's event count), and an operator's per-step
#: controls (their blocks ask again what applies: ``assets/steps.js``)
WATCHED_TYPES: tuple[str, ...] = tuple(dict.fromkeys(
    [row[0] for row in STEP_EVENTS]
    + ["loop.started", "loop.iteration.done", "loop.iteration.failed", "playbook.finished",
       "step.skipped", "step.paused", "step.resumed", "step.retry.now", "step.retry.policy",
       *LAST_EVENT_TYPES]))

#: states only the events know (the API's ``steps`` records a step's end): when a step's
#: newest event says one of these, it is newer than what ``steps`` recorded
_NEWER_THAN_RECORDED = frozenset({"SCHEDULED", "RUNNING", "DENIED", "SKIPPED"})


def step_state(event: Mapping[str, Any], *, discards: bool = False) -> str | None:
    """The state (API words) an event puts its step in, or None; ``discards``: the step's
    admission drops refused tokens (``on_deny: discard``). The page's script applies the
    same rule (assets/live.js)."""
    for row_type, row_status, state in STEP_EVENTS:
        if row_type == event.get("event_type") and row_status in ("*", event.get("status")):
            payload = event.get("payload") or {}
            if row_type in ("step.failed", "step.done"):
                return str((payload.get("meta") or {}).get("step_status") or state)
            if state == "DENIED" and (discards or str(payload.get("reason") or "").startswith(STOPPING)):
                return "SKIPPED"
            return state
    return None


@dataclass
class Painted:
    """What the server draws before any script runs."""

    states: dict[str, str] = field(default_factory=dict)           # step -> picture state
    loops: dict[str, tuple[int, int]] = field(default_factory=dict)  # loop step -> (done, total)
    last_seq: int = 0                                              # the stream goes on after it

    @property
    def progress(self) -> dict[str, str]:
        """Loop step -> "done/total", as the box shows it."""
        return {name: f"{done}/{total}" for name, (done, total) in self.loops.items()}


def first_paint(steps: Iterable[str], detail: Mapping[str, Any], events: Iterable[Mapping[str, Any]],
                discarding: frozenset[str] = frozenset()) -> Painted:
    """Each step's picture state from the API's detail (``GET /executions/{id}``) and the
    events read so far: a finished step shows the API's status unless its newest event is
    newer than that (a new run scheduled or running, a token denied or dropped since), as
    the page's script, which applies each event as it comes, would show it; a step the API
    lists as denied shows denied."""
    seen: dict[str, str] = {}
    loops: dict[str, list[int]] = {}
    painted = Painted()
    for event in events:
        painted.last_seq = max(painted.last_seq, int(event.get("seq") or 0))
        name = str(event.get("entity_id") or "")
        kind = event.get("event_type")
        if kind == "loop.started":
            loops[name] = [0, int(((event.get("payload") or {}).get("meta") or {}).get("count") or 0)]
        elif kind in ("loop.iteration.done", "loop.iteration.failed") and name in loops:
            loops[name][0] += 1
        state = step_state(event, discards=name in discarding)
        if state:
            seen[name] = state
    recorded = detail.get("steps") or {}
    denied = set((detail.get("summary") or detail.get("result") or {}).get("denied_steps") or ())
    for name in steps:
        live, api = seen.get(name), (recorded.get(name) or {}).get("status")
        state = live if live in _NEWER_THAN_RECORDED else api or ("DENIED" if name in denied else live)
        painted.states[name] = PICTURE[state or "PENDING"]
    # the script goes on counting from these (a loop that started before the page opened)
    painted.loops = {name: (done, total) for name, (done, total) in loops.items()}
    return painted
