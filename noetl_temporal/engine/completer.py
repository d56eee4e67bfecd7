"""The completer: dispatches the engine's internal completions (``internal_completions.py``).

Lower modules never call up: a pipeline that ends returns ``PipelineDone`` or
``IterationDone``, a loop returns ``FillLoop`` (its next fill step) or ``StepRunDone``
(it closed). The machine hands each such completion to :func:`complete`, which works
through them until none is left (as taskflow's engine completes its atoms), so the
modules form a DAG: machine -> completer -> steps -> loops -> pipeline.

Order: what a completion leads to runs before anything queued behind it, exactly the
order of the nested calls this replaces, so the event stream is unchanged.
"""

from __future__ import annotations

from collections import deque

from . import loops, pipeline, steps
from .internal_completions import Completion, FillLoop, IterationDone, PipelineDone
from .messages import Command
from .state import ExecutionState, StepRun

__all__ = ["complete", "dispatch"]


def complete(state: ExecutionState, first: Completion | None, commands: list[Command]) -> None:
    """Dispatch ``first`` and everything it leads to, depth first, without recursion."""
    if first is None:
        return
    work: deque[Completion] = deque([first])
    while work:
        follow_ups = dispatch(state, work.popleft(), commands)
        work.extendleft(reversed(follow_ups))


def dispatch(state: ExecutionState, done: Completion, commands: list[Command]) -> list[Completion]:
    """Carry out one completion; return the completions it produced, in order."""
    run = state.step_runs.get(done.step_run_id)
    if run is None:
        return []  # defensive: completions are dispatched at once, while their run still exists
    if isinstance(done, PipelineDone):
        _finish_from_pipeline(state, run, commands)
        return []
    if isinstance(done, IterationDone):
        fill = loops.iteration_finished(state, run, done.iteration, commands)
        return [fill] if fill is not None else []
    if isinstance(done, FillLoop):
        return loops.fill_loop(state, run, done, commands)
    steps.finish_step_run(state, run, ok=done.ok, result=done.result, outcome=done.outcome,
                          commands=commands, loop_done=done.loop_done)
    return []


def _finish_from_pipeline(state: ExecutionState, run: StepRun, commands: list[Command]) -> None:
    assert run.main is not None
    outcome = pipeline.step_outcome(run.main)
    steps.finish_step_run(state, run, ok=not run.main.failed, result=outcome.result, outcome=outcome,
                          commands=commands)
