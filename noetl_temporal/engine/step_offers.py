"""Which per-step controls apply now, step by step: what the execution page offers
(docs/approvals.md, "On the execution page").

The rule is the update validators' own: a control is offered when its validator would
accept it now (:func:`.skips.refusal`, :func:`.skips.hold_refusal`, :func:`.retries.refusal`),
so the page never offers what the workflow would refuse, and a control it does not offer
is refused by the same words if asked anyway. Listed: every running step (per running
iteration for a loop) and every paused step. ``activities``: what the client saw Temporal
hold, as the ``retry_step`` validator is given it (the workflow cannot see an activity's
retries itself).
"""

from __future__ import annotations

from typing import Any

from . import retries, skips
from .state import ExecutionState

__all__ = ["offered", "CONTROLS", "MAX_ITERATIONS"]

#: the controls, in the order the page shows them (each is a route under steps/{step}/)
CONTROLS = ("skip", "retry-now", "retry-policy", "pause", "resume")

#: running iterations of one loop step listed at most (the CLI and the API reach the others)
MAX_ITERATIONS = 20

# a reason is the operator's to give: the offer asks the rule with a placeholder
_ANY_REASON = "offered"


def offered(state: ExecutionState, activities: dict[str, Any]) -> list[dict[str, Any]]:
    """``[{step, iteration, paused, controls: [...]}]``: one entry per running step (per
    running iteration of a loop step) and per paused step, in run order."""
    if state.finished:
        return []
    out: list[dict[str, Any]] = []
    listed: set[str] = set()
    for run in list(state.step_runs.values()):
        if run.final or run.step in listed:
            continue
        listed.add(run.step)
        if run.loop is not None:
            running = sorted(i for i, pipe in run.iterations.items() if pipe.in_flight is not None)
            targets: list[int | None] = list(running[:MAX_ITERATIONS]) or [None]
        else:
            targets = [None]
        # pausing holds the step's next runs, so a loop step's first entry offers it for the step
        out += [_entry(state, run.step, iteration, activities, step_level=i == 0) for i, iteration in enumerate(targets)]
    out += [_entry(state, step, None, activities, step_level=True) for step in state.paused_steps if step not in listed]
    return out


def _entry(state: ExecutionState, step: str, iteration: int | None, activities: dict[str, Any], *,
           step_level: bool) -> dict[str, Any]:
    accepts = {
        "skip": skips.refusal(state, step, _ANY_REASON, iteration) is None,
        "retry-now": retries.refusal(state, step, "now", iteration, activities) is None,
        # a delay alone is a valid change: the rule left to check is whether Temporal retries the task
        "retry-policy": retries.refusal(state, step, "policy", iteration, activities, delay=0.0) is None,
        "pause": step_level and skips.hold_refusal(state, step, True) is None,
        "resume": step_level and skips.hold_refusal(state, step, False) is None,
    }
    return {"step": step, "iteration": iteration, "paused": step in state.paused_steps,
            "controls": [name for name in CONTROLS if accepts[name]]}
