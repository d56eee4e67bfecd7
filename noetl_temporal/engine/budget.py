"""The work budget of one engine input.

Inline work (noop tasks, step starts, loop iterations) runs inside the workflow
activation that fed the input. A 5,000-step noop chain or a 100,000-item noop loop would
otherwise run in a single activation and trip Temporal's deadlock detector (2 s). Each
input may do ``WORK_BUDGET`` units; past that, work is parked on the state and a ``Yield``
command asks the shell to feed ``Proceed`` on a later activation.

The budget counts units, never time, so a replay parks and resumes at exactly the same
points. Executions started with ``behaviours.PACED_WORKFLOW_TASKS`` get ``PACED_WORK_BUDGET``:
on a loaded 2-core machine (five busy processes beside the worker) an input of 500 units
took up to 1.4 s, too close to the detector's 2 s.
"""

from __future__ import annotations

from .behaviours import PACED_WORKFLOW_TASKS
from .messages import Command, Yield
from .state import ExecutionState, PipelineRun

__all__ = ["WORK_BUDGET", "PACED_WORK_BUDGET", "refill", "spend", "exhausted", "park_pipeline", "park_loop", "request_yield"]

# ~0.1–0.3 ms of engine work per unit: one input stays well under a tenth of a second.
WORK_BUDGET = 500
PACED_WORK_BUDGET = 250


def refill(state: ExecutionState) -> None:
    state.budget = PACED_WORK_BUDGET if PACED_WORKFLOW_TASKS in state.behaviours else WORK_BUDGET


def exhausted(state: ExecutionState) -> bool:
    return state.budget <= 0


def spend(state: ExecutionState, units: int = 1) -> None:
    state.budget -= units


def park_pipeline(state: ExecutionState, pipe: PipelineRun) -> None:
    state.parked_pipelines.append([pipe.step_run_id, pipe.iteration])


def park_loop(state: ExecutionState, step_run_id: str) -> None:
    if step_run_id not in state.parked_loops:
        state.parked_loops.append(step_run_id)


def request_yield(state: ExecutionState, commands: list[Command]) -> None:
    """Ask for a ``Proceed`` once, when this input left work undone."""
    if state.finished or state.yield_requested or not exhausted(state):
        return
    state.yield_requested = True
    commands.append(Yield())
