"""An operator makes a retrying step retry now, or changes its retry policy (docs/approvals.md).

A task's policy retries are Temporal's own activity retries (``workflow/activities.py``),
so Temporal carries both controls out: the client calls the server's activity APIs
(``client/step_retries.py``); a fast-path task's retries are the workflow's own loop, which
the update steers itself (``workflow/fast_retries.py``, whose view of the loop the workflow adds
to ``activities``). The engine's part is the workflow update's rule and record:
:func:`refusal` is the ``retry_step`` validator (the step must be running a task the
client saw Temporal hold for it), :func:`record` writes ``step.retry.now`` /
``step.retry.policy`` (who, why, when, the new policy) to the event log.
"""

from __future__ import annotations

from typing import Any

from .common import emit
from .messages import RetryStep
from .state import ExecutionState

__all__ = ["refusal", "in_flight", "record", "ACTIONS"]

#: what the update may ask: skip the backoff, or change the policy
ACTIONS = ("now", "policy")


def in_flight(state: ExecutionState, step: str, iteration: int | None) -> tuple[str, str | None]:
    """The running task of ``step`` (``(task_run_id, None)``), or ``("", why not)``."""
    if state.finished:
        return "", "the execution is not running: no step retries"
    if step not in state.graph.steps:
        return "", f"the playbook has no step {step!r}"
    runs = [run for run in state.step_runs.values() if run.step == step and not run.final]
    if not runs:
        running = sorted({run.step for run in state.step_runs.values() if not run.final})
        return "", (f"step {step!r} is not running, so it has no retry to change "
                    f"({'running: ' + ', '.join(running) if running else 'no step runs'})")
    run = runs[-1]
    if run.loop is not None:
        if iteration is None:
            waiting = sorted(i for i, p in run.iterations.items() if p.in_flight is not None)
            return "", (f"step {step!r} is a loop: name the iteration (--iteration N; running: "
                        f"{', '.join(map(str, waiting)) or 'none'})")
        pipe = run.iterations.get(iteration)
        if pipe is None or pipe.finished:
            return "", f"iteration {iteration} of step {step!r} is not running"
    else:
        if iteration is not None:
            return "", f"step {step!r} has no loop: leave out the iteration"
        pipe = run.main
    if pipe is None or pipe.in_flight is None:
        return "", f"step {step!r} has no task running (it is between tasks): try again in a moment"
    return pipe.in_flight, None


def refusal(state: ExecutionState, step: str, action: str, iteration: int | None,
            activities: dict[str, Any], attempts: int | None = None, delay: float | None = None) -> str | None:
    """Why the control cannot apply now. ``activities``: what the client saw Temporal hold,
    activity id -> ``{"retrying": bool, "attempt": int, "state": str}`` (the workflow itself
    cannot see an activity's retries)."""
    if action not in ACTIONS:
        return f"unknown retry control {action!r} (one of: {', '.join(ACTIONS)})"
    if action == "policy":
        if attempts is None and delay is None:
            return "a policy change sets attempts, delay or both"
        if attempts is not None and (isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 1):
            return f"attempts must be a whole number of 1 or more, not {attempts!r}"
        if delay is not None and (isinstance(delay, bool) or not isinstance(delay, int | float) or delay < 0):
            return f"delay must be a number of seconds of 0 or more, not {delay!r}"
    task_run_id, why = in_flight(state, step, iteration)
    if why is not None:
        return why
    seen = activities.get(task_run_id)
    if not isinstance(seen, dict):
        return (f"step {step!r} has no task that retries right now: its task waits for an answer or a "
                "sub-playbook, or runs on the fast path (`spec.local`) of an execution started before "
                "fast-path retry controls (behaviour fast-retry-controls); skip the step instead")
    current = seen.get("attempt")
    if action == "policy" and attempts is not None and isinstance(current, int) and attempts < current:
        return (f"step {step!r} is at attempt {current} already: attempts must be {current} or more "
                "(to stop its retries, skip the step)")
    if action == "now" and not seen.get("retrying"):
        return (f"step {step!r} is not waiting to retry: its task is {seen.get('state') or 'running'} "
                f"(attempt {seen.get('attempt')})")
    return None


def record(state: ExecutionState, event: RetryStep) -> None:
    """Write the control to the event log (the validator accepted it; Temporal acts on it)."""
    task_run_id, why = in_flight(state, event.step, event.iteration)
    if why is not None or task_run_id != event.task_run_id:
        return   # the step moved on between the validator and here: nothing to record
    payload: dict[str, Any] = {"by": event.by, "reason": event.reason, "at": state.now}
    if event.action == "policy":
        payload.update(attempts=event.attempts, delay=event.delay)
    pipe_iteration = event.iteration
    emit(state, "step.retry.now" if event.action == "now" else "step.retry.policy", entity_id=event.step,
         parent_id=state.execution_id, task_run_id=task_run_id, iteration=pipe_iteration, status="in_progress",
         payload=payload)
