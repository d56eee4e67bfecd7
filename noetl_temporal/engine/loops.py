"""Loop steps: one pipeline run per item of ``loop.in``, ``sequential`` or ``parallel`` (at
most ``max_in_flight`` at once); ``loop.done`` closes the step with
``{results, count, done, failed, failed_iterations}`` and NoETL's summary ``stats: {total,
success, failed}`` (behaviour ``loop-stats``).

Starting iterations is a chain of ``FillLoop`` completions, one iteration each; the end of
an iteration is an ``IterationDone`` and the end of the loop a ``StepRunDone``, all
returned to the completer, which dispatches them (this module never calls up into step
runs). The loop's state moves by the "loop" table (``state_machines.py``).
"""

from __future__ import annotations

from ..dsl.models import CURSOR_PAGE_ROWS, MAX_IN_FLIGHT, Step, Task
from ..errors import TemplateError
from ..templates import render_value
from . import budget, invocation, pipeline
from .behaviours import CURSOR_LOOPS, LOOP_FAIL_FAST_FAILS_STEP, LOOP_STATS
from .common import emit, error_outcome, short, step_definition, template_context
from .envelopes import ErrorInfo, Outcome
from .failure import failure_mode
from .internal_completions import Completion, FillLoop, IterationDone, StepRunDone
from .messages import CancelTasks, Command, FetchPage, PageFetched
from .numbers import render_number
from .state import ExecutionState, LoopRun, PipelineRun, StepRun
from .state_machines import LoopState, PipelineState, move

__all__ = ["DEFAULT_MAX_IN_FLIGHT", "start_loop", "begin_fill", "fill_loop", "iteration_finished", "page_fetched"]

#: the name a cursor loop's page fetch has as a task (its ``RunTask`` fields, its task plan)
CURSOR_TASK = "cursor"
#: a page's rows always come back inline: the loop needs them in the workflow (NoETL's own
#: bound on one frame, ``frame.max_bytes``, is 64 MiB; the data converter's claim check
#: keeps such a payload out of history)
_PAGE_INLINE_MAX_BYTES = 64 * 1024 * 1024

DEFAULT_MAX_IN_FLIGHT = 10


def start_loop(state: ExecutionState, run: StepRun, step_def: Step) -> Completion:
    """Render ``loop.in`` and open the loop: the first fill pass, or the step run's end
    when ``loop.in`` is not a list."""
    loop = step_def.loop
    assert loop is not None
    if loop.cursor is not None:
        return _start_cursor(state, run, step_def)
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


def _start_cursor(state: ExecutionState, run: StepRun, step_def: Step) -> Completion:
    """Open a cursor loop: no items yet; the first fill pass asks for the first page."""
    loop = step_def.loop
    assert loop is not None
    context = template_context(state, step_def, args=run.args)
    try:
        if CURSOR_LOOPS not in state.behaviours:
            raise TemplateError("this execution started before cursor loops ran (behaviours.py)",
                                where=f"{step_def.step}.loop.cursor", fix="run the playbook again")
        max_in_flight = render_number(loop.spec.max_in_flight, context, f"{step_def.step}.loop.spec.max_in_flight",
                                      whole=True, minimum=1, maximum=MAX_IN_FLIGHT)
    except TemplateError as exc:
        emit(state, "loop.started", entity_id=step_def.step, step_run_id=run.id, status="error",
             payload={"error": {"kind": "loop", "message": str(exc)}})
        return StepRunDone(run.id, ok=False, result=None, outcome=error_outcome("loop", str(exc)))
    cap = max_in_flight or 1
    run.loop = LoopRun(items=[], iterator=loop.iterator, parallel=cap > 1, max_in_flight=cap, cursor=True)
    emit(state, "loop.started", entity_id=step_def.step, step_run_id=run.id, status="in_progress",
         payload={"meta": {"count": None, "mode": "cursor", "max_in_flight": cap}})
    return _fill_pass(state, run)


def _page_end(loop: LoopRun) -> int:
    """One past the last index whose item the loop holds (a cursor loop: of this page)."""
    return loop.page_base + len(loop.items)


def _fetch_page(state: ExecutionState, run: StepRun, commands: list[Command]) -> None:
    """Ask for the cursor's next page: the claim rendered with the page size
    (``__frame_max_rows``) and the rows read so far (``__cursor_offset``)."""
    loop = run.loop
    assert loop is not None
    step_def = step_definition(state, run.step)
    assert step_def.loop is not None and step_def.loop.cursor is not None
    cursor = step_def.loop.cursor.model_dump(mode="json")
    frame = step_def.loop.spec.frame or {}
    rows = frame.get("max_rows") or CURSOR_PAGE_ROWS
    task = Task(name=CURSOR_TASK, kind=cursor.pop("kind"),
                config={**{k: v for k, v in cursor.items() if k != "claim"}, "command": cursor["claim"]})
    pipe = PipelineRun(key=f"{run.id}#cursor", step_run_id=run.id)
    context = template_context(state, step_def, args=run.args,
                               extra={"__frame_max_rows": rows, "__cursor_offset": loop.rows})
    task_run_id = f"{run.id}:page:{loop.pages + 1}"
    try:
        config, secret_context = invocation.render_config(state, step_def, task, context)
    except TemplateError as exc:
        loop.exhausted = True
        loop.fetch_error = {"kind": "template", "message": str(exc)}
        return
    command = invocation.run_task_command(state, run, pipe, step_def, task, task_run_id, context, config,
                                          secret_context, [])
    fields = {f: getattr(command, f) for f in command.__dataclass_fields__}
    fields["result_spec"] = {"inline_max_bytes": _PAGE_INLINE_MAX_BYTES}
    commands.append(FetchPage(**fields))
    loop.fetching = task_run_id


def page_fetched(state: ExecutionState, event: PageFetched) -> FillLoop | None:
    """A page arrived: its rows are the loop's next iterations; no row (or a failed claim)
    ends the cursor, and the loop closes when its last iterations end."""
    run = next((r for r in state.step_runs.values()
                if r.loop is not None and r.loop.fetching == event.task_run_id), None)
    if run is None or run.loop is None:
        return None   # the step ended meanwhile (skipped, timed out): the page is dropped
    loop = run.loop
    loop.fetching = None
    outcome = event.result.outcome
    rows = outcome.result.get("rows") if outcome.status == "ok" and isinstance(outcome.result, dict) else None
    if not isinstance(rows, list):
        loop.exhausted = True
        loop.fetch_error = outcome.error.to_dict() if outcome.error is not None else {
            "kind": "cursor", "message": "the cursor's claim returned no `rows`"}
    else:
        loop.pages += 1 if rows else 0
        loop.rows += len(rows)
        loop.page_base = loop.next_index
        # NoETL's ``frame.process: frame``: the whole page is one iteration (its rows a list)
        loop_def = step_definition(state, run.step).loop
        frame = (loop_def.spec.frame if loop_def is not None else None) or {}
        loop.items = [rows] if rows and frame.get("process") == "frame" else rows
        loop.exhausted = not rows
    return begin_fill(state, run)


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
    if loop.cursor and not stop and not loop.exhausted and loop.next_index >= _page_end(loop):
        if loop.fetching is None:
            _fetch_page(state, run, commands)
        if loop.fetching is not None:
            loop.state = move("loop", loop.state, LoopState.WAITING)
            return []
    if not stop and loop.next_index < _page_end(loop) and len(loop.running) < loop.max_in_flight:
        if budget.exhausted(state):
            loop.state = move("loop", loop.state, LoopState.PARKED)
            budget.park_loop(state, run.id)  # Proceed fills it on a later activation
            return []
        budget.spend(state)
        index = loop.next_index
        loop.next_index += 1
        end = _start_iteration(state, run, index, commands)
        return [end, fill] if end is not None else [fill]
    if loop.running or loop.fetching or not (stop or loop.next_index >= _page_end(loop)):
        loop.state = move("loop", loop.state, LoopState.WAITING)
        return []
    return [_finish_loop(state, run)]


def _start_iteration(state: ExecutionState, run: StepRun, index: int,
                     commands: list[Command]) -> pipeline.PipelineEnd | None:
    loop = run.loop
    assert loop is not None
    item = loop.items[index - loop.page_base]
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
    if not loop.cursor:   # a cursor loop keeps counts only: its rows are unbounded
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
    ok = not loop.failed and not run.cancelled and loop.fetch_error is None
    count = loop.next_index if loop.cursor else len(loop.items)
    result = {"results": loop.results, "count": count, "done": loop.done_count,
              "failed": len(loop.failed), "failed_iterations": sorted(loop.failed)}
    if LOOP_STATS in state.behaviours:  # NoETL's loop summary (behaviours.py)
        result["stats"] = {"total": loop.done_count, "success": loop.done_count - len(loop.failed),
                           "failed": len(loop.failed)}
    meta = {"count": count, "done": loop.done_count, "failed": len(loop.failed)}
    if loop.cursor:
        result["pages"] = meta["pages"] = loop.pages
    loop.state = move("loop", loop.state, LoopState.COMPLETED if ok else LoopState.FAILED)
    emit(state, "loop.done", entity_id=run.step, step_run_id=run.id, status="success" if ok else "error",
         payload={"meta": meta, **({"error": loop.fetch_error} if loop.fetch_error is not None else {})})
    error = None
    if loop.fetch_error is not None:
        error = ErrorInfo(kind="cursor", message=f"the cursor's page {loop.pages + 1} could not be read: "
                          f"{loop.fetch_error.get('message')}")
    elif not ok:
        error = ErrorInfo(kind="loop", message=f"{len(loop.failed)} of {count} iterations failed"
                          if loop.failed else "loop cancelled")
    outcome = Outcome(status="ok" if ok else "error", result=result, error=error)
    return StepRunDone(run.id, ok=ok, result=result, outcome=outcome, loop_done=True)
