"""Failure mode (``best_effort`` / ``fail_fast``), stopping an execution, and the step
timeout message: shared by step runs, loops and pipelines, so it sits below all three.
"""

from __future__ import annotations

from ..dsl.models import Step
from .behaviours import STEP_TIMEOUT_BOUNDS_STEP
from .common import step_definition
from .messages import CancelTasks, Command
from .state import ExecutionState, StepRun

__all__ = ["failure_mode", "stop", "step_timeout", "timeout_message", "task_timeout_default"]


def failure_mode(state: ExecutionState, step_name: str) -> str:
    step_def = step_definition(state, step_name)
    for holder in (step_def.spec.failure, step_def.spec.policy.failure if step_def.spec.policy else None,
                   state.playbook.executor.spec.failure):
        if holder is not None:
            return holder.mode
    return "best_effort"


def stop(state: ExecutionState, why: str, reason: str, commands: list[Command]) -> None:
    """fail_fast / limits: schedule nothing new and cancel what is in flight."""
    if state.stopping:
        return
    state.stopping = why
    state.stopping_reason = reason
    in_flight = list(state.pipelines)
    if in_flight:
        commands.append(CancelTasks(task_run_ids=in_flight, reason=reason))
    for run in state.step_runs.values():
        run.cancelled = True


def step_timeout(state: ExecutionState, step_def: Step) -> tuple[float, str] | None:
    """The bound on a whole step run and the key that set it: ``lifecycle.timeout_s``, and
    ``spec.timeout`` where the execution runs with STEP_TIMEOUT_BOUNDS_STEP (the stricter
    wins; on a tie the lifecycle key, whose message is the older one)."""
    bounds: list[tuple[float, str]] = []
    if step_def.spec.lifecycle is not None and step_def.spec.lifecycle.timeout_s:
        bounds.append((step_def.spec.lifecycle.timeout_s, "lifecycle.timeout_s"))
    if step_def.spec.timeout and STEP_TIMEOUT_BOUNDS_STEP in state.behaviours:
        bounds.append((step_def.spec.timeout, "spec.timeout"))
    return min(bounds, key=lambda b: b[0]) if bounds else None


def task_timeout_default(state: ExecutionState, step_def: Step) -> float | None:
    """``step.spec.timeout`` as the step's tasks' attempt timeout: only for executions from
    before it bounded the step run (behaviours.py)."""
    return None if STEP_TIMEOUT_BOUNDS_STEP in state.behaviours else step_def.spec.timeout


def timeout_message(state: ExecutionState, run: StepRun) -> str:
    bound = step_timeout(state, step_definition(state, run.step))
    if bound is None or bound[1] == "lifecycle.timeout_s":  # unchanged: recorded histories carry it
        return f"step '{run.step}' exceeded lifecycle.timeout_s={bound[0] if bound else None}"
    # starts with the engine's ``where``, so run/status turn it into file:line:col
    return (f"{run.step}.spec.timeout: step '{run.step}' ran longer than its spec.timeout of "
            f"{bound[0]:g} s; its tasks were cancelled (raise the timeout, or route the failure "
            f"with an arc on `event.error.kind == 'timeout'`)")
