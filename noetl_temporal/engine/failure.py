"""Failure mode (``best_effort`` / ``fail_fast``), stopping an execution, and the step
timeout message: shared by step runs, loops and pipelines, so it sits below all three.
"""

from __future__ import annotations

from .common import step_definition
from .messages import CancelTasks, Command
from .state import ExecutionState, StepRun

__all__ = ["failure_mode", "stop", "timeout_message"]


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


def timeout_message(run: StepRun, timeout: float | None) -> str:
    return f"step '{run.step}' exceeded lifecycle.timeout_s={timeout}"
