"""Loop steps: one pipeline run per item of ``loop.in``, ``sequential`` or ``parallel`` (at
most ``max_in_flight`` at once); ``loop.done`` closes the step with
``{results, count, done, failed, failed_iterations}``.

Starting iterations is a chain of ``FillLoop`` completions, one iteration each; the end of
an iteration is an ``IterationDone`` and the end of the loop a ``StepRunDone``, all
returned to the completer, which dispatches them (this module never calls up into step
runs). The loop's state moves by the "loop" table (``state_machines.py``).
"""

from __future__ import annotations

from ..dsl.models import MAX_IN_FLIGHT, Step
from ..errors import TemplateError
from ..templates import render_value
from . import budget, pipeline
from .behaviours import LOOP_FAIL_FAST_FAILS_STEP
from .common import emit, error_outcome, short, template_context
from .completions import Completion, FillLoop, IterationDone, StepRunDone
from .envelopes import ErrorInfo, Outcome
from .failure import failure_mode
from .messages import CancelTasks, Command
from .numbers import render_number
from .state import ExecutionState, LoopRun, PipelineRun, StepRun
from .state_machines import LoopState, PipelineState, move

__all__ = ["DEFAULT_MAX_IN_FLIGHT", "start_loop", "begin_fill", "fill_loop", "iteration_finished"]

DEFAULT_MAX_IN_FLIGHT = 10


def start_loop(state: ExecutionState, run: StepRun, step_def: Step) -> Completion:
    """Render ``loop.in`` and open the loop: the first fill pass, or the step run's end
    when ``loop.in`` is not a list."""
    loop = step_def.loop
    assert loop is not None
    context = template_context(state, step_def, args=run.args)
    try:
        items = render_value(loop.in_, context, where=f"{step_def.step}.loop.in")
        if isinstance(items, tuple):
            items = list(items)
        if not isinstance(items, list):
            raise TemplateError(f"loop.in rendered to {type(items).__name__} "
                                f"({short(items)}), expected a list",
                                where=f"{step_def.step}.loop.in",
                                fix="make loop.in a list, e.g. '{{ workload.items }}'")
        max_in_flight = render_number(loop.spec.max_in_flight, context, f"{step_def.step}.loop.spec.max_in_flight",
                                      whole=True, minimum=1, maximum=MAX_IN_FLIGHT)
    except TemplateError as exc:
        emit(state, "loop.started", entity_id=step_def.step, step_run_id=run.id, status="error",
             payload={"error": {"kind": "loop", "message": str(exc)}})
        return StepRunDone(run.id, ok=False, result=None,
                           outcome=error_outcome("loop", str(exc)))
    parallel = loop.spec.mode == "parallel"
    cap = max_in_flight or (DEFAULT_MAX_IN_FLIGHT if parallel else 1)
    run.loop = LoopRun(items=items, iterator=loop.iterator, parallel=parallel,
                       max_in_flight=cap if parallel else 1, results=[None] * len(items))
    emit(state, "loop.started", entity_id=step_def.step, step_run_id=run.id, status="in_progress",
         payload={"meta": {"count": len(items), "mode": loop.spec.mode, "max_in_flight": run.loop.max_in_flight}})
    if state.reuse_iterations:
        _claim_recorded_iterations(state, run, len(items))
    return _fill_pass(state, run)


def _claim_recorded_iterations(state: ExecutionState, run: StepRun, count: int) -> None:
    """A redrive's first run of a loop step that failed takes the iterations the old run
    completed (docs/operations.md), if ``loop.in`` rendered as many items as it did then."""
    recorded = state.reuse_iterations.pop(run.step, None)
    if isinstance(recorded, dict) and recorded.get("count") == count:
        state.reuse_iterations[run.id] = dict(recorded.get("results") or {})


def _reused_iteration(state: ExecutionState, run: StepRun, pipe: PipelineRun, index: int) -> bool:
    recorded = state.reuse_iterations.get(run.id)
    if recorded is None or str(index) not in recorded:
        return False
    pipe.prev = recorded.pop(str(index))
    if not recorded:
        del state.reuse_iterations[run.id]
    pipe.reused = True
    pipe.state = move("pipeline", pipe.state, PipelineState.COMPLETED)
    return True


def begin_fill(state: ExecutionState, run: StepRun) -> FillLoop | None:
    """Start a fill pass unless one is under way (an iteration that ends inside a pass is
    picked up by that pass's next ``FillLoop``)."""
    loop = run.loop
    assert loop is not None
    if loop.state is LoopState.FILLING:
        return None
    loop.state = move("loop", loop.state, LoopState.FILLING)
    return _fill_pass(state, run)


def _fill_pass(state: ExecutionState, run: StepRun) -> FillLoop:
    return FillLoop(run.id, stop_new=run.cancelled or state.stopping is not None)


def fill_loop(state: ExecutionState, run: StepRun, fill: FillLoop, commands: list[Command]) -> list[Completion]:
    """One step of a fill pass: start the next iteration (and queue the pass's next step
    behind that iteration's end), or wait for running ones, or close the loop."""
    loop = run.loop
    assert loop is not None
    # ``halted`` is read per iteration (an inline iteration may fail inside this pass);
    # ``stop_new`` was decided when the pass began.
    stop = fill.stop_new or loop.halted
    if not stop and loop.next_index < len(loop.items) and len(loop.running) < loop.max_in_flight:
        if budget.exhausted(state):
            loop.state = move("loop", loop.state, LoopState.PARKED)
            budget.park_loop(state, run.id)  # Proceed fills it on a later activation
            return []
        budget.spend(state)
        index = loop.next_index
        loop.next_index += 1
        end = _start_iteration(state, run, index, commands)
        return [end, fill] if end is not None else [fill]
    if loop.running or not (stop or loop.next_index >= len(loop.items)):
        loop.state = move("loop", loop.state, LoopState.WAITING)
        return []
    return [_finish_loop(state, run)]


def _start_iteration(state: ExecutionState, run: StepRun, index: int,
                     commands: list[Command]) -> pipeline.PipelineEnd | None:
    loop = run.loop
    assert loop is not None
    item = loop.items[index]
    scope = {loop.iterator: item, "index": index, "_index": index}
    pipe = PipelineRun(key=f"{run.id}#{index}", step_run_id=run.id, iteration=index, iter_scope=scope)
    run.iterations[index] = pipe
    loop.running.add(index)
    emit(state, "loop.iteration.scheduled", entity_id=run.step, step_run_id=run.id, iteration=index,
         status="in_progress")
    emit(state, "loop.iteration.started", entity_id=run.step, step_run_id=run.id, iteration=index,
         status="in_progress")
    if state.reuse_iterations and _reused_iteration(state, run, pipe, index):
        return IterationDone(run.id, index)   # no task: the old execution's result
    return pipeline.run_pipeline(state, run, pipe, commands)


def iteration_finished(state: ExecutionState, run: StepRun, index: int,
                       commands: list[Command]) -> FillLoop | None:
    """Record an iteration's end (fail_fast cancels its siblings), then fill again."""
    loop = run.loop
    pipe = run.iterations[index]
    assert loop is not None and pipe.iteration == index
    loop.running.discard(index)
    loop.done_count += 1
    loop.results[index] = pipe.prev
    if pipe.failed:
        loop.failed.append(index)
    emit(state, "loop.iteration.failed" if pipe.failed else "loop.iteration.done", entity_id=run.step,
         step_run_id=run.id, iteration=index, status="error" if pipe.failed else "success",
         payload={"error": pipe.error.to_dict() if pipe.error is not None else None} if pipe.failed
         else {"meta": {"result": short(pipe.prev)}, **({"reused": True} if pipe.reused else {})})
    run.iterations.pop(index, None)
    if pipe.failed and not pipe.cancelled and failure_mode(state, run.step) == "fail_fast":
        if LOOP_FAIL_FAST_FAILS_STEP in state.behaviours:
            loop.halted = True  # start no more; the loop step fails when the others are done
        else:
            run.cancelled = True  # before that fix: the step ended CANCELLED (behaviours.py)
        others = [p.in_flight for p in run.iterations.values() if p.in_flight]
        if others:
            commands.append(CancelTasks(task_run_ids=others, reason=f"iteration {index} of "
                                        f"'{run.step}' failed (fail_fast)"))
    return begin_fill(state, run)


def _finish_loop(state: ExecutionState, run: StepRun) -> StepRunDone:
    loop = run.loop
    assert loop is not None
    ok = not loop.failed and not run.cancelled
    result = {"results": loop.results, "count": len(loop.items), "done": loop.done_count,
              "failed": len(loop.failed), "failed_iterations": sorted(loop.failed)}
    loop.state = move("loop", loop.state, LoopState.COMPLETED if ok else LoopState.FAILED)
    emit(state, "loop.done", entity_id=run.step, step_run_id=run.id, status="success" if ok else "error",
         payload={"meta": {"count": len(loop.items), "done": loop.done_count, "failed": len(loop.failed)}})
    error = None
    if not ok:
        error = ErrorInfo(kind="loop", message=f"{len(loop.failed)} of {len(loop.items)} iterations failed"
                          if loop.failed else "loop cancelled")
    outcome = Outcome(status="ok" if ok else "error", result=result, error=error)
    return StepRunDone(run.id, ok=ok, result=result, outcome=outcome, loop_done=True)
