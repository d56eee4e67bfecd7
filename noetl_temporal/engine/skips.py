"""An operator skips a running step, or pauses and resumes one step (docs/approvals.md).

The step's waiting task (running, retrying, or waiting for an answer) is cancelled, the
rest of its tasks do not run, and the step ends as a success whose result is what the
operator gave (or null): its arcs fire as for any success. ``step.skipped`` records who,
why and the result, before the step's ``step.done``; the step ends SKIPPED (behaviour
``skipped-step-status``; before it, COMPLETED). In a loop, one iteration is skipped
(``iteration``), and the loop goes on. :func:`refusal` is the update validator's rule.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .behaviours import SKIPPED_STEP_STATUS
from .common import emit
from .messages import CancelTasks, Command, HoldStep, SkipStep
from .pipeline import PipelineEnd, skip_task
from .state import ExecutionState, PipelineRun, StepRecord, StepRun
from .status_layers import StepStatus

__all__ = ["refusal", "skip", "hold_refusal", "hold", "skipped_steps"]


def _target(state: ExecutionState, step: str, iteration: int | None) -> tuple[StepRun, PipelineRun] | str:
    if state.finished:
        return "the execution is not running: no step to skip"
    runs = [run for run in state.step_runs.values() if run.step == step and not run.final]
    if not runs:
        running = sorted({run.step for run in state.step_runs.values()})
        return (f"step {step!r} is not running, so there is nothing to skip "
                f"({'running: ' + ', '.join(running) if running else 'no step runs'})")
    run = runs[-1]
    if run.loop is not None:
        if iteration is None:
            waiting = sorted(i for i, p in run.iterations.items() if p.in_flight is not None)
            return (f"step {step!r} is a loop: name the iteration to skip (--iteration N; waiting: "
                    f"{', '.join(map(str, waiting)) or 'none'})")
        pipe = run.iterations.get(iteration)
        if pipe is None or pipe.finished:
            return f"iteration {iteration} of step {step!r} is not running"
    else:
        if iteration is not None:
            return f"step {step!r} has no loop: leave out the iteration"
        pipe = run.main
    if pipe is None or pipe.in_flight is None:
        return f"step {step!r} has no task waiting (it is between tasks): try again in a moment"
    return run, pipe


def refusal(state: ExecutionState, step: str, reason: str | None, iteration: int | None = None) -> str | None:
    if not isinstance(reason, str) or not reason.strip():
        return "a skip needs a reason (recorded in step.skipped)"
    target = _target(state, step, iteration)
    return target if isinstance(target, str) else None


def skip(state: ExecutionState, event: SkipStep, commands: list[Command]) -> PipelineEnd | None:
    target = _target(state, event.step, event.iteration)
    if isinstance(target, str):
        return None   # refused by the validator; nothing to do on replay either
    run, pipe = target
    task_run_id = pipe.in_flight
    assert task_run_id is not None
    commands.append(CancelTasks(task_run_ids=[task_run_id], reason=f"step skipped: {event.reason}"))
    emit(state, "step.skipped", entity_id=run.step, parent_id=state.execution_id, step_run_id=run.id,
         task_run_id=task_run_id, iteration=pipe.iteration, status="success",
         payload={"by": event.by, "reason": event.reason, "result": event.result, "skipped_at": state.now})
    if pipe is run.main and SKIPPED_STEP_STATUS in state.behaviours:
        # the whole step was skipped (one iteration's skip leaves its loop step to end as it ends)
        run.skipped = {"by": event.by, "reason": event.reason}
    return skip_task(state, run, pipe, event.result)


def skipped_steps(steps: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The steps whose last run an operator skipped -> ``{by, reason}``, from the run's step
    records (``StepRecord`` or their JSON, as the output holds them): what ``status`` shows."""
    out = {}
    for name, record in steps.items():
        data = record.to_dict() if isinstance(record, StepRecord) else record
        if isinstance(data, Mapping) and data.get("status") == StepStatus.SKIPPED.value:
            out[name] = dict(data.get("skipped") or {})
    return out


def hold_refusal(state: ExecutionState, step: str, hold: bool) -> str | None:
    """Why a step cannot be paused (``hold``) or resumed now."""
    if state.finished:
        return "the execution is not running: no step to pause or resume"
    if step not in state.graph.steps:
        return f"the playbook has no step {step!r}"
    if hold and step in state.paused_steps:
        return f"step {step!r} is paused already"
    if not hold and step not in state.paused_steps:
        paused = ", ".join(state.paused_steps) or "none"
        return f"step {step!r} is not paused (paused steps: {paused})"
    return None


def hold(state: ExecutionState, event: HoldStep) -> None:
    """Pause one step (no new run of it starts; a running one goes on) or resume it."""
    if hold_refusal(state, event.step, event.hold) is not None:
        return   # refused by the validator
    if event.hold:
        state.paused_steps.append(event.step)
    else:
        state.paused_steps.remove(event.step)
    emit(state, "step.paused" if event.hold else "step.resumed", entity_id=event.step,
         parent_id=state.execution_id, status="paused" if event.hold else "in_progress",
         payload={"by": event.by, "reason": event.reason, "at": state.now})
