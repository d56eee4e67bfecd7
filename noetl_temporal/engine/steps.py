"""Step runs: an admitted token becomes a step run (one pipeline, or a loop of them); a
finished run is recorded, applies its ``set`` patches and routes through ``next.arcs``.

Starting a run returns the completion of work that ended inline (``PipelineDone``,
``FillLoop``, ``StepRunDone``) for the completer to dispatch; the completer calls
``finish_step_run``. Also step timeouts (``lifecycle.timeout_s``); the failure mode
(``fail_fast`` stops the execution at the first unhandled failure) is in ``failure``.
"""

from __future__ import annotations

from typing import Any

from . import budget, envelope_data, loops, pipeline, redrive, routing
from .behaviours import STEP_ENVELOPE_DATA
from .common import emit, engine_error, error_outcome, record_failure, short, step_definition
from .envelopes import ErrorInfo, Outcome
from .failure import failure_mode, step_timeout, stop, timeout_message
from .internal_completions import Completion, StepRunDone
from .messages import CancelTasks, Command, StartTimer
from .state import ExecutionState, PipelineRun, StepRecord, StepRun, Token
from .status_layers import StepStatus, transition

__all__ = ["start_step_run", "finish_step_run", "record_step", "step_timed_out", "RUN_MARK", "step_of_run_id"]

#: what parts a step's name from its run number in a step run id, ``<step>:run:<n>``
RUN_MARK = ":run:"


def step_of_run_id(run_id: str) -> str | None:
    """The step a step run id, or a task run id built on one, belongs to. A task's activity
    is named by its task run id, so a status read without a worker learns from Temporal's
    pending activities which step is running."""
    step, mark, _ = run_id.partition(RUN_MARK)
    return step if mark and step else None


def start_step_run(state: ExecutionState, token: Token, commands: list[Command]) -> Completion | None:
    """Turn an admitted token into a step run and start its work; the completion of what
    ended inline (the whole run, for a noop step), if anything did."""
    step_def = step_definition(state, token.step)
    limit = state.playbook.executor.spec.max_step_runs
    if state.total_step_runs >= limit:
        stop(state, "limit", f"more than {limit} step runs (executor.spec.max_step_runs); "
             "a routing cycle without an exit?", commands)
        record_failure(state, token.step, None, handled=False, kind="step_run_limit",
                       message="step run limit reached")
        return None
    budget.spend(state)
    count = state.run_counts.get(token.step, 0) + 1
    state.run_counts[token.step] = count
    state.total_step_runs += 1
    run = StepRun(id=f"{token.step}{RUN_MARK}{count}", step=token.step, args=token.args, final=token.final)
    state.step_runs[run.id] = run
    state.current_step = token.step
    emit(state, "step.scheduled", entity_id=token.step, parent_id=state.execution_id, step_run_id=run.id,
         status="in_progress", payload={"inputs": {"args": token.args}, "meta": {
             "token": token.id, "from": token.source, **({"join": token.join} if token.join else {})}})
    run.status = transition("step", run.status, StepStatus.RUNNING)
    run.started_at = state.now
    reused, recorded = redrive.take(state.reuse, token.step) if state.reuse and not token.final else (False, None)
    emit(state, "step.started", entity_id=token.step, parent_id=state.execution_id, step_run_id=run.id,
         status="in_progress", **({"payload": {"reused": True, "redriven_from": state.redriven_from}}
                                  if reused else {}))
    if reused:
        # A redrive reuses what the old execution recorded: no task runs; set and arcs do.
        run.reused = True
        return StepRunDone(run.id, ok=True, result=recorded, outcome=Outcome.ok(recorded),
                           loop_done=step_def.loop is not None)
    bound = step_timeout(state, step_def)
    if bound is not None:
        commands.append(StartTimer(timer_id=f"timeout:{run.id}", seconds=bound[0], step_run_id=run.id))
    if step_def.loop is not None:
        return loops.start_loop(state, run, step_def)
    run.main = PipelineRun(key=run.id, step_run_id=run.id)
    return pipeline.run_pipeline(state, run, run.main, commands)


def finish_step_run(state: ExecutionState, run: StepRun, *, ok: bool, result: Any,
                    outcome: Outcome | None, commands: list[Command], loop_done: bool = False) -> None:
    step_def = step_definition(state, run.step)
    cancelled = run.cancelled and not ok
    error = outcome.error if outcome is not None and not ok else None
    error_json = error.to_dict() if error is not None else None   # what guards and the event see
    state.step_results[run.step] = result
    if STEP_ENVELOPE_DATA in state.behaviours:  # NoETL's `{{ step.results.<task> }}`
        envelope_data.keep_task_results(state, step_def, run.main)
    if not cancelled:
        # Before the terminal event (the patches emit none): routing guards see them.
        pipeline.apply_patches(state, step_def, step_def, run, None, outcome, where=f"{run.step}.set")
    event = routing.boundary_event(run.step, ok=ok, loop_done=loop_done, error=error_json, result=result)
    # Matched once, before the terminal event: its status says whether an arc handles the failure.
    decision = None if run.final or cancelled else routing.decide(state, run, step_def, event, outcome)
    if decision is not None and decision.fatal is not None:  # a guard could not be evaluated
        ok, error = False, engine_error("template", decision.fatal)
        error_json = error.to_dict()
        event = routing.boundary_event(run.step, ok=False, loop_done=loop_done, error=error_json, result=result)
        decision = routing.RouteDecision(event)  # no arc fires
    target = _end_status(ok=ok, cancelled=cancelled, decision=decision, skipped=run.skipped is not None)
    run.status = transition("step", run.status, target)
    record_step(state, run.step, target, result, reused=run.reused, skipped=run.skipped)
    # A handled failure keeps the seed's event type and status (`step.failed`, `error`: the
    # tool did fail; docs/events.md has no other status); its payload says it was handled.
    failure = {} if ok else {"handled": target is StepStatus.HANDLED, "meta": {"step_status": target.value}}
    if target is StepStatus.SKIPPED:   # `step.done` still (its arcs fired as for a success), said SKIPPED
        failure = {"meta": {"step_status": target.value}, "skipped": run.skipped}
    if run.reused:
        failure = {**failure, "reused": True, "redriven_from": state.redriven_from}
    emit(state, "step.done" if ok else "step.failed", entity_id=run.step, parent_id=state.execution_id,
         step_run_id=run.id, status="success" if ok else "error",
         payload={"outcome": {"status": "ok" if ok else "error", "result": short(result), "error": error_json},
                  **failure})
    state.step_runs.pop(run.id, None)
    if run.final:
        if not ok:
            record_failure(state, run.step, run.id, handled=False, kind=_kind(error), message=_message(error),
                           final_step=True)
        return
    if cancelled:
        record_failure(state, run.step, run.id, handled=True, kind="cancelled", message="cancelled")
        return
    assert decision is not None
    handled = routing.route(state, run, step_def, decision)
    if not ok:
        record_failure(state, run.step, run.id, handled=handled, kind=_kind(error), message=_message(error))
        if not handled and failure_mode(state, run.step) == "fail_fast":
            stop(state, "fail_fast", f"step '{run.step}' failed (fail_fast): {_message(error)}", commands)


def _kind(error: ErrorInfo | None) -> str | None:
    return error.kind if error is not None and not error.is_empty else None


def _message(error: ErrorInfo | None) -> str | None:
    return error.message if error is not None and not error.is_empty else None


def _end_status(*, ok: bool, cancelled: bool, decision: routing.RouteDecision | None,
                skipped: bool = False) -> StepStatus:
    """COMPLETED, SKIPPED (an operator's skip ended it), CANCELLED, HANDLED (failed, and an arc
    handles the failure: docs/status.md counts only a failure "without handled recovery" as
    FAILED) or FAILED."""
    if ok:
        return StepStatus.SKIPPED if skipped else StepStatus.COMPLETED
    if cancelled:
        return StepStatus.CANCELLED
    if decision is not None and decision.handles_failure:
        return StepStatus.HANDLED
    return StepStatus.FAILED


def record_step(state: ExecutionState, name: str, status: StepStatus, result: Any, *, reused: bool = False,
                skipped: dict[str, Any] | None = None) -> None:
    record = state.steps.get(name)
    if record is None:
        record = state.steps[name] = StepRecord()
    record.status = status.value
    record.runs += 1
    record.result = result
    record.reused = reused
    record.skipped = skipped
    if skipped is not None and name not in state.skipped_names:
        state.skipped_names.append(name)


def step_timed_out(state: ExecutionState, step_run_id: str, commands: list[Command]) -> StepRunDone | None:
    """Cancel the run's in-flight tasks (their reports end it), or end it now when none is."""
    run = state.step_runs.get(step_run_id)
    if run is None:
        return None  # finished before the timer fired
    run.timed_out = True
    pipes = [run.main] if run.main else list(run.iterations.values())
    in_flight = [p.in_flight for p in pipes if p and p.in_flight]
    if in_flight:
        commands.append(CancelTasks(task_run_ids=in_flight, reason=f"step '{run.step}' timed out"))
        return None
    return StepRunDone(run.id, ok=False, result=None,
                       outcome=error_outcome("timeout", timeout_message(state, run)))
