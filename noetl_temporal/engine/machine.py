"""The interpreter: ``step(state, input) -> (state, commands)``.

Pure and deterministic: no Temporal import, no I/O, no clock (time arrives with every
input). The Temporal workflow feeds inputs and carries out the returned commands; tests
feed inputs directly.

Life of an execution (seed 004):

1. ``Start``: one token for the entry step.
2. ``_pump``: tokens pass admission (denied ones wait for a ctx change), joins hold
   tokens until no upstream can still deliver, admitted tokens become step runs.
3. A step run runs its pipeline task by task (``RunTask`` commands; ``noop`` inline),
   applying each task's policy decision; a loop step runs one pipeline per item.
4. A finished step run applies its ``set`` patches and routes through ``next.arcs``.
5. Quiescence (nothing runnable, nothing running, no join waiting): run ``final_step``
   once if configured, then decide the final status and ``Finish``.
"""

from __future__ import annotations

import json
from typing import Any

from ..dsl.models import Playbook, Step, Task
from ..errors import TemplateError
from ..status import ExecutionStatus, StepStatus, WorkflowStatus, transition
from ..templates import evaluate_condition, reads_name, referenced_names, render_value
from .context import build_context, deep_merge, outcome_view, set_path
from .events import EventLog
from .graph import StepGraph
from .messages import (
    Cancel,
    CancelTasks,
    Command,
    Finish,
    Input,
    PatchCtx,
    Pause,
    Resume,
    RunTask,
    Start,
    StartTimer,
    StepTimedOut,
    TaskFinished,
)
from .policy import evaluate_policy, max_policy_attempts
from .state import ExecutionState, LoopRun, PipelineRun, StepRun, Token

__all__ = ["new_state", "step", "INLINE_KINDS", "DEFAULT_MAX_IN_FLIGHT", "EventName"]

# Kinds evaluated inside the workflow: no activity, no history cost.
INLINE_KINDS = frozenset({"noop"})
DEFAULT_MAX_IN_FLIGHT = 10
_OUTCOME_NAMES = ("output", "outcome", "_attempt")


class EventName(str):
    """An event name that also equals its legacy aliases (``call.done`` ≙ ``step.done``).

    Guards written for NoETL's older engines (``event.name == 'call.done'``) keep working.
    """

    aliases: frozenset[str] = frozenset()

    def __new__(cls, name: str, aliases: tuple[str, ...] = ()) -> EventName:
        obj = super().__new__(cls, name)
        obj.aliases = frozenset((name, *aliases))
        return obj

    def __eq__(self, other: object) -> bool:
        return isinstance(other, str) and str(other) in self.aliases

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    __hash__ = str.__hash__


# =============================================================================== entry points

def new_state(playbook: Playbook, execution_id: str) -> ExecutionState:
    entry = playbook.executor.spec.entry_step or playbook.workflow[0].step
    return ExecutionState(playbook=playbook, graph=StepGraph(playbook, entry),
                          execution_id=execution_id, log=EventLog(execution_id))


def step(state: ExecutionState, event: Input) -> tuple[ExecutionState, list[Command]]:
    """Apply one input; return the (mutated) state and the commands to carry out."""
    commands: list[Command] = []
    if state.finished:
        return state, commands  # terminal exactly once: late inputs change nothing
    state.now = event.now
    if isinstance(event, Start):
        _start(state, event)
    elif isinstance(event, TaskFinished):
        _task_finished(state, event, commands)
    elif isinstance(event, PatchCtx):
        for key, value in event.patch.items():
            set_path(state.ctx, key, value)
        state.ctx_version += 1
    elif isinstance(event, Pause):
        if not state.paused:
            state.paused = True
            _emit(state, "playbook.paused", entity_id=state.execution_id, status="paused",
                  payload={"reason": event.reason})
    elif isinstance(event, Resume):
        if state.paused:
            state.paused = False
            _emit(state, "playbook.started", entity_id=state.execution_id, status="in_progress",
                  payload={"resumed": True})
    elif isinstance(event, Cancel):
        _cancel(state, event.reason, commands)
        return state, commands
    elif isinstance(event, StepTimedOut):
        _step_timed_out(state, event.step_run_id, commands)
    _pump(state, commands)
    return state, commands


# =============================================================================== lifecycle

def _emit(state: ExecutionState, event_type: str, **fields: Any) -> dict[str, Any]:
    return state.log.emit(event_type, timestamp=state.now, **fields)


def _start(state: ExecutionState, event: Start) -> None:
    pb = state.playbook
    state.parent_execution_id = event.parent_execution_id
    state.log.parent_execution_id = event.parent_execution_id
    state.source = event.source
    state.started_at = event.now
    _emit(state, "playbook.execution.requested", entity_id=state.execution_id, status="in_progress",
          payload={"inputs": event.payload, "meta": {"playbook": pb.metadata.path or pb.metadata.name,
                                                      "parent_execution_id": event.parent_execution_id}})
    state.workload = deep_merge(pb.workload, event.payload or {})
    _emit(state, "playbook.request.evaluated", entity_id=state.execution_id, status="success")
    state.status = transition("execution", state.status, ExecutionStatus.RUNNING)
    _emit(state, "playbook.started", entity_id=state.execution_id, status="in_progress")
    state.workflow_status = transition("workflow", state.workflow_status, WorkflowStatus.RUNNING)
    _emit(state, "workflow.started", entity_id=state.execution_id, status="in_progress",
          payload={"entry_step": state.graph.entry})
    _add_token(state, state.graph.entry, {}, source=None)


def _add_token(state: ExecutionState, step_name: str, args: dict[str, Any], source: str | None,
               *, joined: bool = False, final: bool = False) -> Token:
    state.token_counter += 1
    token = Token(id=f"tok:{state.token_counter}", step=step_name, args=args, source=source,
                  joined=joined, final=final)
    state.tokens.append(token)
    return token


def _pump(state: ExecutionState, commands: list[Command]) -> None:
    """Admit tokens, fire joins, and detect quiescence until nothing changes."""
    progress = True
    while progress and not state.finished:
        progress = False
        if state.stopping:
            _drop_tokens(state)
        if not state.paused:
            # Joins fire only once every token in hand has been placed: a token still on
            # its way to a join's buffer must be part of that join's single run.
            progress = _admit_tokens(state, commands) or _fire_joins(state)
        if not progress:
            _check_quiescence(state, commands)


def _drop_tokens(state: ExecutionState) -> None:
    """While stopping, only the final_step token may still run."""
    dropped = [t for t in state.tokens if not t.final]
    if not dropped and not any(state.join_buffers.values()):
        return
    for token in dropped:
        _emit(state, "policy.admit.evaluated", entity_id=token.step, status="skipped",
              payload={"allowed": False, "reason": f"execution stopping ({state.stopping})"})
    state.tokens = [t for t in state.tokens if t.final]
    state.join_buffers.clear()


def _admit_tokens(state: ExecutionState, commands: list[Command]) -> bool:
    progress = False
    final_step = state.playbook.executor.spec.final_step
    for token in list(state.tokens):
        if token not in state.tokens or state.finished:
            continue
        if token.denied and token.evaluated_ctx_version == state.ctx_version:
            continue
        if final_step and token.step == final_step and not token.final:
            # final_step runs once, after quiescence: an arc to it only ends its branch.
            state.tokens.remove(token)
            state.absorbed_final_tokens += 1
            progress = True
            continue
        if token.step in state.graph.joins and not token.joined and not token.final:
            state.tokens.remove(token)
            state.join_buffers.setdefault(token.step, []).append(token)
            progress = True
            continue
        allowed = token.final or _admitted(state, token)
        if allowed:
            state.tokens.remove(token)
            _start_step_run(state, token, commands)
            progress = True
        elif _on_deny(state, token.step) == "discard":
            state.tokens.remove(token)
            state.discarded_steps.append(token.step)
            progress = True
        else:
            token.denied = True
            token.evaluated_ctx_version = state.ctx_version
    return progress


def _admitted(state: ExecutionState, token: Token) -> bool:
    """Admission rules: first match wins; no rules = allow; rules but no match = deny."""
    step_def = state.playbook.step_by_name().get(token.step)
    admit = step_def.spec.policy.admit if step_def and step_def.spec.policy else None
    if admit is None or not admit.rules:
        return True
    context = _context(state, step_def, args=token.args)
    allowed, matched, errors = False, None, []
    for index, rule in enumerate(admit.rules):
        ok, error = evaluate_condition(rule.when, context, where=f"{token.step}.admit.rules[{index}]")
        if error:
            errors.append(error)
        if ok:
            allowed, matched = rule.allow, index
            break
    _emit(state, "policy.admit.evaluated", entity_id=token.step, status="success" if allowed else "skipped",
          payload={"allowed": allowed, "matched_rule_index": matched, "token": token.id,
                   "errors": errors or None})
    return allowed


def _on_deny(state: ExecutionState, step_name: str) -> str:
    step_def = state.playbook.step_by_name().get(step_name)
    admit = step_def.spec.policy.admit if step_def and step_def.spec.policy else None
    return admit.on_deny if admit is not None else "pending"


def _active_steps(state: ExecutionState, exclude_join: str) -> set[str]:
    active = {run.step for run in state.step_runs.values()}
    active |= {t.step for t in state.tokens if not t.denied or _on_deny(state, t.step) == "wait"}
    active |= {j for j, buf in state.join_buffers.items() if buf and j != exclude_join}
    return active


def _fire_joins(state: ExecutionState) -> bool:
    progress = False
    for join, buffered in list(state.join_buffers.items()):
        if not buffered or state.graph.can_still_deliver(join, _active_steps(state, join)):
            continue
        args: dict[str, Any] = {}
        for token in buffered:
            args = deep_merge(args, token.args)
        sources = [t.source for t in buffered]
        state.join_buffers[join] = []
        _add_token(state, join, args, source=",".join(s or "" for s in sources), joined=True)
        progress = True
    return progress


def _check_quiescence(state: ExecutionState, commands: list[Command]) -> None:
    if state.step_runs or any(state.join_buffers.values()):
        return
    waiting = [t for t in state.tokens if not t.denied or _on_deny(state, t.step) == "wait"]
    if waiting:
        return  # paused (resume runs them), or an approval gate waiting for a ctx patch
    final_step = state.playbook.executor.spec.final_step
    if final_step and not state.final_started:
        state.final_started = True
        _add_token(state, final_step, _summary(state), source=None, final=True)
        _pump(state, commands)
        return
    _finish(state, commands)


def _summary(state: ExecutionState) -> dict[str, Any]:
    failed = _failed_steps(state)
    return {
        "execution_id": state.execution_id,
        "total_steps": len(state.steps),
        "step_runs": state.total_step_runs,
        "failed_steps_count": len({f["step"] for f in failed}),
        "failed_steps": failed,
        "steps": {name: info["status"] for name, info in state.steps.items()},
        "denied_steps": sorted({t.step for t in state.tokens if t.denied}),
        "discarded_steps": sorted(set(state.discarded_steps)),
    }


def _failed_steps(state: ExecutionState) -> list[dict[str, Any]]:
    return [dict(f) for f in state.failures]


def _finish(state: ExecutionState, commands: list[Command]) -> None:
    unhandled = [f for f in state.failures if not f["handled"]]
    ok = not unhandled and state.stopping is None
    status = ExecutionStatus.COMPLETED if ok else ExecutionStatus.FAILED
    reason = None
    if not ok:
        reason = state.stopping_reason
        if unhandled:
            first = unhandled[0]
            reason = reason or f"step '{first['step']}' failed: {first.get('message') or first.get('reason')}"
    wf_status = WorkflowStatus.COMPLETED if ok else WorkflowStatus.FAILED
    state.workflow_status = transition("workflow", state.workflow_status, wf_status)
    summary = _summary(state)
    _emit(state, "workflow.finished", entity_id=state.execution_id,
          status="success" if ok else "error", payload={"meta": {"status": wf_status.value}})
    state.status = transition("execution", state.status, status)
    result = {
        "status": status.value,
        "reason": reason,
        "total_steps": summary["total_steps"],
        "failed_steps_count": summary["failed_steps_count"],
        "failed_steps": summary["failed_steps"],
        "unhandled_failures": len(unhandled),
        "denied_steps": summary["denied_steps"],
        "final_step": state.playbook.executor.spec.final_step,
    }
    _emit(state, "playbook.finished", entity_id=state.execution_id, status="success" if ok else "error",
          payload={"meta": result})
    _emit(state, "playbook.processed", entity_id=state.execution_id, status="success" if ok else "error")
    state.ended_at = state.now
    state.terminal_event = "playbook.finished"
    state.result = result
    commands.append(Finish(status=status.value, result=result))


def _cancel(state: ExecutionState, reason: str | None, commands: list[Command]) -> None:
    in_flight = list(state.pipelines)
    if in_flight:
        commands.append(CancelTasks(task_run_ids=in_flight, reason=reason or "execution cancelled"))
    for run in state.step_runs.values():
        run.cancelled = True
        if run.status in (StepStatus.PENDING, StepStatus.RUNNING):
            run.status = transition("step", run.status, StepStatus.CANCELLED)
            _emit(state, "step.failed", entity_id=run.step, parent_id=state.execution_id,
                  step_run_id=run.id, status="error",
                  payload={"error": {"kind": "cancelled", "message": reason or "execution cancelled"}})
            _record_step(state, run.step, StepStatus.CANCELLED, None)
    state.workflow_status = transition("workflow", state.workflow_status, WorkflowStatus.CANCELLED)
    _emit(state, "workflow.finished", entity_id=state.execution_id, status="error",
          payload={"meta": {"status": "CANCELLED"}})
    state.status = transition("execution", state.status, ExecutionStatus.CANCELLED)
    result = {"status": "CANCELLED", "reason": reason or "cancelled", "total_steps": len(state.steps),
              "failed_steps_count": len({f['step'] for f in state.failures}),
              "failed_steps": _failed_steps(state), "unhandled_failures": 0,
              "denied_steps": [], "final_step": state.playbook.executor.spec.final_step}
    _emit(state, "execution.cancelled", entity_id=state.execution_id, status="error",
          payload={"reason": reason, "cancelled_tasks": in_flight})
    state.ended_at = state.now
    state.terminal_event = "execution.cancelled"
    state.result = result
    state.tokens.clear()
    commands.append(Finish(status="CANCELLED", result=result))


def _stop(state: ExecutionState, why: str, reason: str, commands: list[Command]) -> None:
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


# =============================================================================== step runs

def _step_def(state: ExecutionState, name: str) -> Step:
    return state.playbook.step_by_name()[name]


def _start_step_run(state: ExecutionState, token: Token, commands: list[Command]) -> None:
    step_def = _step_def(state, token.step)
    limit = state.playbook.executor.spec.max_step_runs
    if state.total_step_runs >= limit:
        _stop(state, "limit", f"more than {limit} step runs (executor.spec.max_step_runs); "
              "a routing cycle without an exit?", commands)
        state.failures.append({"step": token.step, "step_run_id": None, "handled": False,
                               "kind": "step_run_limit", "message": "step run limit reached"})
        return
    count = state.run_counts.get(token.step, 0) + 1
    state.run_counts[token.step] = count
    state.total_step_runs += 1
    run = StepRun(id=f"{token.step}:run:{count}", step=token.step, args=token.args, final=token.final)
    state.step_runs[run.id] = run
    state.current_step = token.step
    _emit(state, "step.scheduled", entity_id=token.step, parent_id=state.execution_id, step_run_id=run.id,
          status="in_progress", payload={"inputs": {"args": token.args}, "meta": {"token": token.id,
                                                                               "from": token.source}})
    run.status = transition("step", run.status, StepStatus.RUNNING)
    run.started_at = state.now
    _emit(state, "step.started", entity_id=token.step, parent_id=state.execution_id, step_run_id=run.id,
          status="in_progress")
    timeout = step_def.spec.lifecycle.timeout_s if step_def.spec.lifecycle else None
    if timeout:
        commands.append(StartTimer(timer_id=f"timeout:{run.id}", seconds=timeout, step_run_id=run.id))
    if step_def.loop is not None:
        _start_loop(state, run, step_def, commands)
    else:
        run.main = PipelineRun(key=run.id, step_run_id=run.id)
        _run_pipeline(state, run, run.main, commands)


def _start_loop(state: ExecutionState, run: StepRun, step_def: Step, commands: list[Command]) -> None:
    loop = step_def.loop
    assert loop is not None
    context = _context(state, step_def, args=run.args)
    try:
        items = render_value(loop.in_, context, where=f"{step_def.step}.loop.in")
        if isinstance(items, tuple):
            items = list(items)
        if not isinstance(items, list):
            raise TemplateError(f"loop.in rendered to {type(items).__name__} "
                                f"({_short(items)}), expected a list",
                                where=f"{step_def.step}.loop.in",
                                fix="make loop.in a list, e.g. '{{ workload.items }}'")
    except TemplateError as exc:
        _emit(state, "loop.started", entity_id=step_def.step, step_run_id=run.id, status="error",
              payload={"error": {"kind": "loop", "message": str(exc)}})
        _finish_step_run(state, run, ok=False, result=None,
                         outcome=_error_outcome("loop", str(exc)), commands=commands)
        return
    parallel = loop.spec.mode == "parallel"
    cap = loop.spec.max_in_flight or (DEFAULT_MAX_IN_FLIGHT if parallel else 1)
    run.loop = LoopRun(items=items, iterator=loop.iterator, parallel=parallel,
                       max_in_flight=cap if parallel else 1, results=[None] * len(items))
    _emit(state, "loop.started", entity_id=step_def.step, step_run_id=run.id, status="in_progress",
          payload={"meta": {"count": len(items), "mode": loop.spec.mode, "max_in_flight": run.loop.max_in_flight}})
    _fill_loop(state, run, commands)


def _fill_loop(state: ExecutionState, run: StepRun, commands: list[Command]) -> None:
    """Start iterations up to ``max_in_flight``; finish the loop when all are done.

    Inline iterations (noop pipelines) finish while this runs; ``filling`` makes their
    completion come back here instead of recursing once per item.
    """
    loop = run.loop
    assert loop is not None
    if loop.filling:
        return
    loop.filling = True
    try:
        while True:
            stop_new = run.cancelled or state.stopping is not None
            while (not stop_new and loop.next_index < len(loop.items)
                   and len(loop.running) < loop.max_in_flight):
                index = loop.next_index
                loop.next_index += 1
                _start_iteration(state, run, index, commands)
            if loop.running:
                return
            if stop_new or loop.next_index >= len(loop.items):
                _finish_loop(state, run, commands)
                return
    finally:
        loop.filling = False


def _start_iteration(state: ExecutionState, run: StepRun, index: int, commands: list[Command]) -> None:
    loop = run.loop
    assert loop is not None
    item = loop.items[index]
    scope = {loop.iterator: item, "index": index, "_index": index}
    pipe = PipelineRun(key=f"{run.id}#{index}", step_run_id=run.id, iteration=index, iter_scope=scope)
    run.iterations[index] = pipe
    loop.running.add(index)
    _emit(state, "loop.iteration.scheduled", entity_id=run.step, step_run_id=run.id, iteration=index,
          status="in_progress")
    _emit(state, "loop.iteration.started", entity_id=run.step, step_run_id=run.id, iteration=index,
          status="in_progress")
    _run_pipeline(state, run, pipe, commands)


def _iteration_finished(state: ExecutionState, run: StepRun, pipe: PipelineRun,
                        commands: list[Command]) -> None:
    loop = run.loop
    assert loop is not None and pipe.iteration is not None
    index = pipe.iteration
    loop.running.discard(index)
    loop.done_count += 1
    loop.results[index] = pipe.prev
    if pipe.failed:
        loop.failed.append(index)
    _emit(state, "loop.iteration.failed" if pipe.failed else "loop.iteration.done", entity_id=run.step,
          step_run_id=run.id, iteration=index, status="error" if pipe.failed else "success",
          payload={"error": pipe.error} if pipe.failed else {"meta": {"result": _short(pipe.prev)}})
    run.iterations.pop(index, None)
    if pipe.failed and not pipe.cancelled and _failure_mode(state, run.step) == "fail_fast":
        run.cancelled = True  # stop this loop's remaining iterations
        others = [p.in_flight for p in run.iterations.values() if p.in_flight]
        if others:
            commands.append(CancelTasks(task_run_ids=others, reason=f"iteration {index} of "
                                        f"'{run.step}' failed (fail_fast)"))
    _fill_loop(state, run, commands)


def _finish_loop(state: ExecutionState, run: StepRun, commands: list[Command]) -> None:
    loop = run.loop
    assert loop is not None
    ok = not loop.failed and not run.cancelled
    result = {"results": loop.results, "count": len(loop.items), "done": loop.done_count,
              "failed": len(loop.failed), "failed_iterations": sorted(loop.failed)}
    _emit(state, "loop.done", entity_id=run.step, step_run_id=run.id, status="success" if ok else "error",
          payload={"meta": {"count": len(loop.items), "done": loop.done_count, "failed": len(loop.failed)}})
    error = None
    if not ok:
        error = {"kind": "loop", "retryable": False, "code": None,
                 "message": f"{len(loop.failed)} of {len(loop.items)} iterations failed"
                 if loop.failed else "loop cancelled"}
    outcome = {"status": "ok" if ok else "error", "result": result, "error": error, "meta": {}}
    _finish_step_run(state, run, ok=ok, result=result, outcome=outcome, commands=commands, loop_done=True)


def _finish_step_run(state: ExecutionState, run: StepRun, *, ok: bool, result: Any,
                     outcome: dict[str, Any] | None, commands: list[Command], loop_done: bool = False) -> None:
    step_def = _step_def(state, run.step)
    cancelled = run.cancelled and not ok
    target = StepStatus.COMPLETED if ok else (StepStatus.CANCELLED if cancelled else StepStatus.FAILED)
    run.status = transition("step", run.status, target)
    error = (outcome or {}).get("error") if not ok else None
    state.step_results[run.step] = result
    _record_step(state, run.step, target, result)
    _emit(state, "step.done" if ok else "step.failed", entity_id=run.step, parent_id=state.execution_id,
          step_run_id=run.id, status="success" if ok else "error",
          payload={"outcome": {"status": "ok" if ok else "error", "result": _short(result), "error": error}})
    state.step_runs.pop(run.id, None)
    if not cancelled:
        _apply_patches(state, step_def, step_def, run, None, outcome, where=f"{run.step}.set")
    if run.final:
        if not ok:
            state.failures.append({"step": run.step, "step_run_id": run.id, "handled": False,
                                   "kind": (error or {}).get("kind"), "message": (error or {}).get("message"),
                                   "final_step": True})
        return
    if cancelled:
        state.failures.append({"step": run.step, "step_run_id": run.id, "handled": True,
                               "kind": "cancelled", "message": "cancelled"})
        return
    name = "loop.done" if loop_done else ("step.done" if ok else "step.failed")
    aliases = ("call.done",) if ok else ("call.error",)
    if loop_done:
        aliases += ("step.done",) if ok else ("step.failed",)
    event = {"name": EventName(name, aliases), "status": "ok" if ok else "error", "step": run.step,
             "error": error, "result": result}
    handled = _route(state, run, step_def, event, outcome, commands)
    if not ok:
        state.failures.append({"step": run.step, "step_run_id": run.id, "handled": handled,
                               "kind": (error or {}).get("kind"), "message": (error or {}).get("message")})
        if not handled and _failure_mode(state, run.step) == "fail_fast":
            _stop(state, "fail_fast", f"step '{run.step}' failed (fail_fast): "
                  f"{(error or {}).get('message')}", commands)


def _record_step(state: ExecutionState, name: str, status: StepStatus, result: Any) -> None:
    info = state.steps.setdefault(name, {"status": None, "runs": 0, "result": None})
    info["status"] = status.value
    info["runs"] += 1
    info["result"] = result


def _failure_mode(state: ExecutionState, step_name: str) -> str:
    step_def = _step_def(state, step_name)
    for holder in (step_def.spec.failure, step_def.spec.policy.failure if step_def.spec.policy else None,
                   state.playbook.executor.spec.failure):
        if holder is not None:
            return holder.mode
    return "best_effort"


def _step_timed_out(state: ExecutionState, step_run_id: str, commands: list[Command]) -> None:
    run = state.step_runs.get(step_run_id)
    if run is None:
        return  # finished before the timer fired
    run.timed_out = True
    pipes = [run.main] if run.main else list(run.iterations.values())
    in_flight = [p.in_flight for p in pipes if p and p.in_flight]
    if in_flight:
        commands.append(CancelTasks(task_run_ids=in_flight, reason=f"step '{run.step}' timed out"))
    else:
        timeout = _step_def(state, run.step).spec.lifecycle.timeout_s  # type: ignore[union-attr]
        _finish_step_run(state, run, ok=False, result=None,
                         outcome=_error_outcome("timeout", f"step '{run.step}' exceeded lifecycle.timeout_s={timeout}"),
                         commands=commands)


# =============================================================================== routing

def _route(state: ExecutionState, run: StepRun, step_def: Step, event: dict[str, Any],
           outcome: dict[str, Any] | None, commands: list[Command]) -> bool:
    """Evaluate ``next.arcs``; return True when a guarded arc handled a failure."""
    router = step_def.next
    if router is None or not router.arcs:
        return False
    context = _context(state, step_def, args=run.args,
                       extra={"event": event, "output": outcome_view(outcome), "outcome": outcome_view(outcome)})
    matched: list[int] = []
    errors: list[str] = []
    for index, arc in enumerate(router.arcs):
        ok, error = evaluate_condition(arc.when, context, where=f"{run.step}.next.arcs[{index}].when")
        if error:
            errors.append(error)
        if ok:
            matched.append(index)
            if router.spec.mode == "exclusive":
                break
    selected = matched if router.spec.mode == "inclusive" else matched[:1]
    fired: list[dict[str, Any]] = []
    for index in selected:
        arc = router.arcs[index]
        where = f"{run.step}.next.arcs[{index}]"
        try:
            args = render_value(arc.args, context, where=f"{where}.args") if arc.args else {}
            args = dict(args)
            for key, value in render_value(arc.set_vars, context, where=f"{where}.set").items():
                set_path(args, key, value)
            patch = render_value(arc.set_ctx, context, where=f"{where}.set")
        except TemplateError as exc:
            errors.append(str(exc))
            state.failures.append({"step": run.step, "step_run_id": run.id, "handled": False,
                                   "kind": "template", "message": str(exc)})
            continue
        for key, value in patch.items():
            set_path(state.ctx, key, value)
        if patch:
            state.ctx_version += 1
        _add_token(state, arc.step, args, source=run.step)
        fired.append({"step": arc.step, "args": args, "when": arc.when})
    _emit(state, "next.evaluated", entity_id=f"step:{run.step}", parent_id=run.id, step_run_id=run.id,
          status="success" if fired else "skipped",
          payload={"mode": router.spec.mode, "event": str(event["name"]),
                   "matched": [{"step": router.arcs[i].step, "when": router.arcs[i].when} for i in matched],
                   "selected": [{"step": f["step"], "args": f["args"]} for f in fired],
                   "errors": errors or None})
    if not fired:
        no_match = router.spec.on_no_match
        if no_match == "error" or (state.playbook.executor.spec.no_next_is_error and no_match != "quiet"):
            state.failures.append({"step": run.step, "step_run_id": run.id, "handled": False,
                                   "kind": "no_next", "message": "no arc of next matched "
                                   "(executor.spec.no_next_is_error is set)"})
    if event["status"] != "error":
        return False
    return any(_guard_is_failure_specific(f["when"], context, event, outcome) for f in fired)


def _guard_is_failure_specific(when: str | None, context: dict[str, Any], event: dict[str, Any],
                               outcome: dict[str, Any] | None) -> bool:
    """A fired arc handles a failure when its guard matched *because* of the failure.

    The guard is evaluated once more against the same boundary as a success; if it
    would have matched that too (``event.name == 'loop.done'``, no ``when`` at all), it
    only continues the flow and the failure stays unhandled.
    """
    if when is None:
        return False
    name = str(event["name"])
    ok_name = "loop.done" if name == "loop.done" else "step.done"
    ok_event = dict(event, name=EventName(ok_name, ("call.done", "step.done")), status="ok", error=None)
    ok_outcome = outcome_view(dict(outcome or {}, status="ok", error=None))
    ok_context = dict(context, event=ok_event, output=ok_outcome, outcome=ok_outcome)
    matched_on_success, _ = evaluate_condition(when, ok_context)
    return not matched_on_success


# =============================================================================== pipelines

def _context(state: ExecutionState, step_def: Step | None, *, args: dict[str, Any] | None = None,
             pipe: PipelineRun | None = None, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    iterator = step_def.loop.iterator if step_def is not None and step_def.loop is not None else None
    return build_context(workload=state.workload, ctx=state.ctx, execution_id=state.execution_id,
                         step_results=state.step_results, args=args,
                         iter_scope=pipe.iter_scope if pipe else None, iterator=iterator,
                         pipeline_vars=pipe.vars if pipe else None, spec=state.playbook.spec, extra=extra)


def _pipeline_extra(pipe: PipelineRun, task: Task, outcome: dict[str, Any] | None = None,
                    attempt: int = 1) -> dict[str, Any]:
    view = outcome_view(outcome) if outcome is not None else None
    return {"_prev": pipe.prev, "_task": task.name, "_attempt": attempt, "output": view, "outcome": view}


def _run_pipeline(state: ExecutionState, run: StepRun, pipe: PipelineRun, commands: list[Command]) -> None:
    """Advance a pipeline until it waits on an activity or ends (inline tasks run here)."""
    step_def = _step_def(state, run.step)
    tasks = step_def.tool
    while not pipe.finished:
        if run.cancelled or run.timed_out:
            pipe.cancelled = run.cancelled
            _end_pipeline(state, run, pipe, failed=True,
                          error={"kind": "timeout" if run.timed_out else "cancelled",
                                 "message": "step timed out" if run.timed_out else "cancelled"},
                          commands=commands)
            return
        if pipe.pc >= len(tasks):
            _end_pipeline(state, run, pipe, failed=False, error=None, commands=commands)
            return
        task = tasks[pipe.pc]
        count = pipe.runs.get(task.name, 0) + 1
        pipe.runs[task.name] = count
        suffix = f":iter:{pipe.iteration}" if pipe.iteration is not None else ""
        task_run_id = f"{run.id}{suffix}:task:{task.name}:{count}"
        context = _context(state, step_def, args=run.args, pipe=pipe, extra=_pipeline_extra(pipe, task))
        _emit(state, "task.started", entity_id=task.name, parent_id=run.id, step_run_id=run.id,
              task_run_id=task_run_id, iteration=pipe.iteration, status="in_progress",
              payload={"meta": {"kind": task.kind}})
        try:
            config, secret_context = _render_config(step_def, task, context)
        except TemplateError as exc:
            _apply_outcome(state, run, pipe, task, task_run_id, _error_outcome("template", str(exc)),
                           attempts=[], decision=None, commands=commands)
            continue
        if task.kind in INLINE_KINDS:
            outcome = _inline_outcome(task, config)
            _apply_outcome(state, run, pipe, task, task_run_id, outcome, attempts=[], decision=None,
                           commands=commands)
            continue
        rules = [r.model_dump() for r in task.spec.policy.rules] if task.spec.policy else []
        names = referenced_names([r.get("when") for r in rules]) - set(_OUTCOME_NAMES)
        policy_context = {k: v for k, v in context.items() if k in names}
        timeout = task.spec.timeout or step_def.spec.timeout or _default_timeout(state)
        pipe.in_flight = task_run_id
        state.pipelines[task_run_id] = pipe
        commands.append(RunTask(task_run_id=task_run_id, execution_id=state.execution_id, step=run.step,
                                step_run_id=run.id, task=task.name, kind=task.kind, config=config,
                                rules=rules, policy_context=_plain(policy_context),
                                max_attempts=max_policy_attempts(rules), timeout=timeout,
                                iteration=pipe.iteration, secret_context=secret_context,
                                keychain=[k.model_dump(mode="json") for k in state.playbook.keychain],
                                result_spec=task.spec.result.model_dump(mode="json", exclude_none=True)
                                if task.spec.result else {},
                                spec=_layered_spec(state, step_def, task), source=state.source))
        return


def _default_timeout(state: ExecutionState) -> float | None:
    defaults = state.playbook.executor.spec.policy.get("defaults") or {}
    value = defaults.get("timeout_s")
    return float(value) if isinstance(value, int | float) else None


_READS_KEYCHAIN = reads_name("keychain")


def _render_config(step_def: Step, task: Task, context: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The task's rendered configuration, and the context its secret templates need.

    Templates that read ``keychain`` are left for the activity, which alone resolves
    secrets; the other names those templates read are handed over as plain values.
    """
    config = dict(task.config)
    if step_def.input:
        merged = dict(step_def.input)
        merged.update(config.get("input") or {})
        config["input"] = merged
    rendered = render_value(config, context, where=f"{step_def.step}.tool.{task.name}", defer=_READS_KEYCHAIN)
    secret_context: dict[str, Any] = {}
    deferred = _deferred_strings(config)
    if deferred:
        names = referenced_names(deferred) - {"keychain"}
        secret_context = _plain({k: v for k, v in context.items() if k in names and not callable(v)})
    return rendered, secret_context


def _deferred_strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value] if _READS_KEYCHAIN(value) else []
    if isinstance(value, dict):
        return [s for v in value.values() for s in _deferred_strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _deferred_strings(v)]
    return []


def _layered_spec(state: ExecutionState, step_def: Step, task: Task) -> dict[str, Any]:
    """Tool knobs: executor.spec < step.spec < loop.spec < task.spec (maps merge, lists replace).

    Control-plane keys (policies, routing, lifecycle) are not tool knobs and are left out.
    """
    control = {"policy", "failure", "lifecycle", "entry_step", "final_step", "no_next_is_error",
               "max_jumps", "max_step_runs", "timeout_s", "mode", "max_in_flight", "result"}
    layers = [state.playbook.executor.spec.model_dump(mode="json", exclude_none=True),
              step_def.spec.model_dump(mode="json", exclude_none=True),
              step_def.loop.spec.model_dump(mode="json", exclude_none=True) if step_def.loop else {},
              task.spec.model_dump(mode="json", exclude_none=True)]
    merged: dict[str, Any] = {}
    for layer in layers:
        merged = deep_merge(merged, {k: v for k, v in layer.items() if k not in control})
    return merged


def _inline_outcome(task: Task, config: dict[str, Any]) -> dict[str, Any]:
    if "result" in config:
        result = config["result"]
    else:
        merged = {**(config.get("input") or {}), **(config.get("args") or {})}
        result = merged or None
    return {"status": "ok", "result": result, "error": None, "meta": {"attempt": 1, "duration_ms": 0}}


def _error_outcome(kind: str, message: str) -> dict[str, Any]:
    return {"status": "error", "result": None,
            "error": {"kind": kind, "retryable": False, "code": None, "message": message},
            "meta": {"attempt": 1, "duration_ms": 0}}


def _task_finished(state: ExecutionState, event: TaskFinished, commands: list[Command]) -> None:
    pipe = state.pipelines.pop(event.task_run_id, None)
    if pipe is None:
        return  # a late report for a task we no longer wait for (duplicate or cancelled run)
    pipe.in_flight = None
    run = state.step_runs.get(pipe.step_run_id)
    if run is None:
        return
    step_def = _step_def(state, run.step)
    task = step_def.tool[pipe.pc]
    for attempt in event.attempts:
        _emit_attempt(state, run, pipe, task, event.task_run_id, attempt)
    decision = None
    if event.decided:
        decision = (event.rule_index, event.action or "continue")
        if event.exhausted:
            decision = (event.rule_index, "fail")
    _apply_outcome(state, run, pipe, task, event.task_run_id, event.outcome, attempts=event.attempts,
                   decision=decision, commands=commands)
    if not pipe.finished:
        _run_pipeline(state, run, pipe, commands)


def _emit_attempt(state: ExecutionState, run: StepRun, pipe: PipelineRun, task: Task, task_run_id: str,
                  attempt: dict[str, Any]) -> None:
    number = attempt.get("attempt")
    common = dict(entity_id=task.name, parent_id=task_run_id, step_run_id=run.id, task_run_id=task_run_id,
                  iteration=pipe.iteration, attempt=number)
    _emit(state, "task.attempt.started", status="in_progress",
          payload={"meta": {"started_at": attempt.get("started_at")}}, **common)
    ok = attempt.get("status") == "ok"
    _emit(state, "task.attempt.done" if ok else "task.attempt.failed", status="success" if ok else "error",
          duration_ms=attempt.get("duration_ms"),
          payload={"error": attempt.get("error"), "meta": {"action": attempt.get("action"),
                                                           "next_delay_s": attempt.get("next_delay_s")}},
          **common)


def _apply_outcome(state: ExecutionState, run: StepRun, pipe: PipelineRun, task: Task, task_run_id: str,
                   outcome: dict[str, Any], *, attempts: list[dict[str, Any]],
                   decision: tuple[int | None, str] | None, commands: list[Command]) -> None:
    step_def = _step_def(state, run.step)
    status = outcome.get("status", "error")
    attempt = (outcome.get("meta") or {}).get("attempt") or max(1, len(attempts))
    rules = task.spec.policy.rules if task.spec.policy else []
    cancelled = (outcome.get("error") or {}).get("kind") == "cancelled" or run.cancelled or run.timed_out
    context = _context(state, step_def, args=run.args, pipe=pipe,
                       extra=_pipeline_extra(pipe, task, outcome, attempt))
    if cancelled:
        rule_index, action = None, "fail"
    elif decision is not None:
        rule_index, action = decision
    else:
        d = evaluate_policy([r.model_dump() for r in rules], status, context)
        rule_index, action = d.rule_index, d.action
        if action == "retry":
            action = "fail"  # inline tasks cannot retry: same outcome every time
    then = rules[rule_index].then if rule_index is not None else None
    result = outcome.get("result")
    pipe.last_outcome = outcome
    pipe.vars[task.name] = result
    _emit(state, "task.done" if status == "ok" else "task.failed", entity_id=task.name, parent_id=run.id,
          step_run_id=run.id, task_run_id=task_run_id, iteration=pipe.iteration,
          status="success" if status == "ok" else "error", duration_ms=(outcome.get("meta") or {}).get("duration_ms"),
          attempt=attempt, payload={"outcome": _short_outcome(outcome)})
    ref = outcome.get("result_ref")
    if isinstance(ref, dict):
        _emit(state, "result.stored", entity_id=f"task:{task.name}:attempt:{attempt}", parent_id=task_run_id,
              task_run_id=task_run_id, step_run_id=run.id, iteration=pipe.iteration, status="success",
              payload={"result_ref": {k: v for k, v in ref.items() if k != "preview"},
                       "extracted": ref.get("extracted")})
    if rules or decision is not None:
        _emit(state, "policy.task.evaluated", entity_id=f"task:{task.name}", parent_id=task_run_id,
              task_run_id=task_run_id, step_run_id=run.id, iteration=pipe.iteration, status="success",
              payload={"matched_rule_index": rule_index, "action": {"do": action,
                                                                     **({"to": then.to} if then and then.to else {})}})
    # set_* patches apply before the action: the task's own, then the matched rule's.
    scope = _pipeline_extra(pipe, task, outcome, attempt)
    _apply_patches(state, step_def, task, run, pipe, outcome, where=f"{run.step}.tool.{task.name}.set",
                   extra=scope)
    if then is not None and not then.is_empty():
        _apply_patches(state, step_def, then, run, pipe, outcome,
                       where=f"{run.step}.tool.{task.name}.spec.policy.rules[{rule_index}].then", extra=scope)
    if cancelled:
        pipe.cancelled = run.cancelled
        err = dict(outcome.get("error") or {})
        if run.timed_out:
            timeout = step_def.spec.lifecycle.timeout_s if step_def.spec.lifecycle else None
            err = {"kind": "timeout", "retryable": False, "code": None,
                   "message": f"step '{run.step}' exceeded lifecycle.timeout_s={timeout}"}
        _end_pipeline(state, run, pipe, failed=True, error=err, commands=commands)
        return
    if action == "continue":
        pipe.prev = result
        pipe.pc += 1
    elif action == "break":
        pipe.prev = result
        _end_pipeline(state, run, pipe, failed=False, error=None, commands=commands)
    elif action == "jump":
        target = then.to if then else None
        names = [t.name for t in step_def.tool]
        pipe.prev = result
        pipe.jumps += 1
        limit = state.playbook.executor.spec.max_jumps
        if pipe.jumps > limit:
            _end_pipeline(state, run, pipe, failed=True, commands=commands,
                          error={"kind": "jump_limit", "retryable": False, "code": None,
                                 "message": f"task policy jumped more than {limit} times in one run of "
                                            f"'{run.step}' (executor.spec.max_jumps); add a guard that "
                                            "ends the cycle with do: break"})
        elif target == "previous":
            pipe.pc = max(0, pipe.pc - 1)
        elif target in names:
            pipe.pc = names.index(target)
        else:
            _end_pipeline(state, run, pipe, failed=True, commands=commands,
                          error={"kind": "policy", "retryable": False, "code": None,
                                 "message": f"jump target {target!r} is not a task of step '{run.step}'"})
    else:  # fail, or retry with nothing left
        error = dict(outcome.get("error") or {})
        if not error:
            error = {"kind": "policy", "retryable": False, "code": None,
                     "message": f"task '{task.name}' failed by policy"
                                + (f" (rule {rule_index})" if rule_index is not None else "")}
        if decision is not None and decision[1] == "fail" and attempts and attempts[-1].get("action") == "retry":
            error["message"] = f"retries exhausted after {len(attempts)} attempts: {error.get('message')}"
        _end_pipeline(state, run, pipe, failed=True, error=error, commands=commands)


def _apply_patches(state: ExecutionState, step_def: Step, holder: Any, run: StepRun,
                   pipe: PipelineRun | None, outcome: dict[str, Any] | None, where: str,
                   extra: dict[str, Any] | None = None) -> None:
    if holder.is_empty():
        return
    if extra is None:
        extra = {"output": outcome_view(outcome), "outcome": outcome_view(outcome)}
        if pipe is not None:
            extra["_prev"] = pipe.prev
    context = _context(state, step_def, args=run.args, pipe=pipe, extra=extra)
    try:
        ctx_patch = render_value(holder.set_ctx, context, where=where)
        iter_patch = render_value(holder.set_iter, context, where=where)
        var_patch = render_value(holder.set_vars, context, where=where)
    except TemplateError as exc:
        state.failures.append({"step": run.step, "step_run_id": run.id, "handled": False,
                               "kind": "template", "message": str(exc)})
        return
    for key, value in ctx_patch.items():
        set_path(state.ctx, key, value)
    if ctx_patch:
        state.ctx_version += 1
    if pipe is not None:
        if pipe.iter_scope is not None:
            for key, value in iter_patch.items():
                set_path(pipe.iter_scope, key, value)
        for key, value in var_patch.items():
            set_path(pipe.vars, key, value)
    else:
        # A step-level `set:` of plain names has no pipeline left to bind into: it
        # patches ctx, which is where later steps can read it.
        for key, value in var_patch.items():
            set_path(state.ctx, key, value)
        if var_patch:
            state.ctx_version += 1


def _end_pipeline(state: ExecutionState, run: StepRun, pipe: PipelineRun, *, failed: bool,
                  error: dict[str, Any] | None, commands: list[Command]) -> None:
    if pipe.finished:
        return
    pipe.finished = True
    pipe.failed = failed
    pipe.error = error
    if failed and error is not None:
        pipe.prev = pipe.prev if pipe.prev is not None else None
    if pipe.iteration is not None:
        _iteration_finished(state, run, pipe, commands)
        return
    outcome = dict(pipe.last_outcome or {"meta": {}})
    outcome["status"] = "error" if failed else "ok"
    outcome["result"] = pipe.prev if not failed else (pipe.last_outcome or {}).get("result")
    outcome["error"] = error if failed else None
    _finish_step_run(state, run, ok=not failed, result=outcome["result"], outcome=outcome, commands=commands)


# =============================================================================== helpers

def _short(value: Any, limit: int = 2048) -> Any:
    """Keep event payloads small: large values are summarized, not copied."""
    try:
        text = json.dumps(value, default=str)
    except (TypeError, ValueError):
        text = str(value)
    if len(text) <= limit:
        return value
    return {"truncated": True, "bytes": len(text), "preview": text[:256]}


def _short_outcome(outcome: dict[str, Any]) -> dict[str, Any]:
    short = {k: v for k, v in outcome.items() if k != "result"}
    short["result"] = _short(outcome.get("result"))
    return short


def _plain(value: Any) -> Any:
    """JSON-plain copy for command payloads (activities receive JSON)."""
    return json.loads(json.dumps(value, default=str))

