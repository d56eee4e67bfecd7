"""The interpreter: ``step(state, input) -> (state, commands)``.

Pure and deterministic: no Temporal import, no I/O, no clock (time arrives with every
input). The Temporal workflow feeds inputs and carries out the returned commands; tests
feed inputs directly.

Life of an execution (docs/semantics.md):

1. ``Start``: one token for the entry step.
2. ``_pump``: tokens pass admission (denied ones wait for a ctx change), joins hold
   tokens from concurrent upstreams until none can still deliver (``joins``), admitted
   tokens become step runs.
3. A step run runs its pipeline task by task (``RunTask`` commands; ``noop`` inline),
   applying each task's policy decision; a loop step runs one pipeline per item.
4. A finished step run applies its ``set`` patches and routes through ``next.arcs``.
5. Quiescence (nothing runnable, nothing running, no join waiting): run ``final_step``
   once if configured, then decide the final status and ``Finish``.

This module holds the lifecycle (start, the token pump with admission and joins,
quiescence, the final summary, finish, cancel); the rest lives in ``steps`` (step runs,
timeouts), ``failure`` (failure mode), ``loops``, ``pipeline`` (tasks and their policies),
``invocation`` (what a ``RunTask`` carries), ``routing`` (``next.arcs``) and ``common``.
What ends inside those modules comes back as an internal completion, which the
``completer`` dispatches: the modules call downwards only (machine -> completer ->
steps -> loops -> pipeline), and nothing here recurses.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..dsl.models import AdmitPolicy, Playbook, Step
from ..errors import ResultFieldUnavailable
from ..templates import evaluate_condition
from ..templates.text import python_text
from . import approvals, budget, ctx_size, joins, loops, pipeline, retries, skips, steps
from .behaviours import NOETL_TEXT
from .common import add_token, emit, patch_ctx, template_context
from .completer import complete
from .context import deep_merge
from .event_log import EventLog
from .graph import StepGraph
from .loops import DEFAULT_MAX_IN_FLIGHT
from .messages import (
    Answer,
    Cancel,
    CancelTasks,
    Command,
    Finish,
    HoldStep,
    Input,
    PageFetched,
    PatchCtx,
    Pause,
    Proceed,
    Resume,
    RetryStep,
    SkipStep,
    Start,
    StepTimedOut,
    TaskFinished,
)
from .pipeline import INLINE_KINDS
from .routing import EventName
from .state import ExecutionState, Token
from .state_machines import TokenState, move
from .status_layers import ExecutionStatus, StepStatus, WorkflowStatus, transition

__all__ = ["new_state", "step_graph", "step", "INLINE_KINDS", "DEFAULT_MAX_IN_FLIGHT", "EventName"]


def new_state(playbook: Playbook, execution_id: str, graph: StepGraph | None = None) -> ExecutionState:
    """A fresh state; ``graph`` is the playbook's :func:`step_graph` when the caller has it."""
    return ExecutionState(playbook=playbook, graph=graph or step_graph(playbook),
                          execution_id=execution_id, log=EventLog(execution_id))


def step_graph(playbook: Playbook) -> StepGraph:
    """The playbook's step graph, from its entry step (not analysed yet)."""
    return StepGraph(playbook, playbook.executor.spec.entry_step or playbook.workflow[0].step)


def step(state: ExecutionState, event: Input) -> tuple[ExecutionState, list[Command]]:
    """Apply one input; return the (mutated) state and the commands to carry out."""
    if state.finished:
        return state, []  # terminal exactly once: late inputs change nothing
    listed = event.behaviours if isinstance(event, Start) else state.behaviours
    # Every render of this input prints text as the execution's behaviours say (templates.text).
    with python_text(NOETL_TEXT not in listed):
        return _step(state, event)


def _step(state: ExecutionState, event: Input) -> tuple[ExecutionState, list[Command]]:
    commands: list[Command] = []
    state.now = event.now
    budget.refill(state)
    if isinstance(event, Start):
        _start(state, event)
    elif isinstance(event, PageFetched):
        complete(state, loops.page_fetched(state, event), commands)
    elif isinstance(event, TaskFinished):
        complete(state, pipeline.task_finished(state, event, commands), commands)
    elif isinstance(event, HoldStep):
        skips.hold(state, event)
    elif isinstance(event, RetryStep):
        retries.record(state, event)
    elif isinstance(event, SkipStep):
        complete(state, skips.skip(state, event, commands), commands)
    elif isinstance(event, Answer):
        finished = approvals.answered(state, event)
        if finished is not None:
            complete(state, pipeline.task_finished(state, finished, commands), commands)
    elif isinstance(event, PatchCtx):
        ctx_size.overflow(state, event.patch, "ctx patch")   # counted (the update validator refused past it)
        patch_ctx(state, event.patch)
        if not event.patch:
            state.ctx_version += 1  # an external patch re-evaluates denied tokens even when empty
    elif isinstance(event, Pause):
        if not state.paused:
            state.paused = True
            emit(state, "playbook.paused", entity_id=state.execution_id, status="paused",
                 payload={"reason": event.reason})
    elif isinstance(event, Resume):
        if state.paused:
            state.paused = False
            emit(state, "playbook.started", entity_id=state.execution_id, status="in_progress",
                 payload={"resumed": True})
    elif isinstance(event, Cancel):
        _cancel(state, event.reason, commands)
        return state, commands
    elif isinstance(event, StepTimedOut):
        complete(state, steps.step_timed_out(state, event.step_run_id, commands), commands)
    elif isinstance(event, Proceed):
        _proceed(state, commands)
    _pump(state, commands)
    budget.request_yield(state, commands)
    return state, commands


def _proceed(state: ExecutionState, commands: list[Command]) -> None:
    """Resume the inline work an earlier input parked when its budget ran out."""
    state.yield_requested = False
    parked, state.parked_pipelines = state.parked_pipelines, []
    for step_run_id, iteration in parked:
        run = state.step_runs.get(step_run_id)
        if run is None:
            continue
        pipe = run.main if iteration is None else run.iterations.get(int(iteration))
        if pipe is not None and not pipe.finished and pipe.in_flight is None:
            complete(state, pipeline.run_pipeline(state, run, pipe, commands), commands)
    loops_to_fill, state.parked_loops = state.parked_loops, []
    for step_run_id in loops_to_fill:
        run = state.step_runs.get(step_run_id)
        if run is not None and run.loop is not None:
            complete(state, loops.begin_fill(state, run), commands)


def _start(state: ExecutionState, event: Start) -> None:
    pb = state.playbook
    state.parent_execution_id = event.parent_execution_id
    state.log.parent_execution_id = event.parent_execution_id
    state.source = event.source
    state.behaviours = list(event.behaviours)
    state.started_at = event.now
    emit(state, "playbook.execution.requested", entity_id=state.execution_id, status="in_progress",
         payload={"inputs": event.payload, "meta": {"playbook": pb.metadata.path or pb.metadata.name,
                                                     "parent_execution_id": event.parent_execution_id}})
    state.workload = deep_merge(pb.workload, event.payload or {})
    emit(state, "playbook.request.evaluated", entity_id=state.execution_id, status="success")
    state.status = transition("execution", state.status, ExecutionStatus.RUNNING)
    emit(state, "playbook.started", entity_id=state.execution_id, status="in_progress")
    state.workflow_status = transition("workflow", state.workflow_status, WorkflowStatus.RUNNING)
    emit(state, "workflow.started", entity_id=state.execution_id, status="in_progress",
         payload={"entry_step": state.graph.entry})
    if event.redrive is not None:
        _redriven(state, event.redrive)
    add_token(state, state.graph.entry, {}, source=None)


def _redriven(state: ExecutionState, plan: dict[str, Any]) -> None:
    """A redrive: keep the results it reuses; say where it comes from (docs/operations.md)."""
    state.redriven_from = str(plan.get("from_execution_id") or "")
    state.reuse = dict(plan.get("reuse") or {})
    state.reuse_iterations = dict(plan.get("iterations") or {})
    emit(state, "execution.redriven_from", entity_id=state.execution_id, status="success",
         payload={"redriven_from": state.redriven_from, "from_step": plan.get("from_step"),
                  "definition": plan.get("definition"), "reused_steps": sorted(state.reuse),
                  "changed_steps": plan.get("changed") or [],
                  "reused_iterations": {step: len(entry.get("results") or {})
                                        for step, entry in sorted(state.reuse_iterations.items())}})


def _pump(state: ExecutionState, commands: list[Command]) -> None:
    """Admit tokens, fire joins, and detect quiescence until nothing changes (a loop: the
    final_step token that quiescence adds is pumped by the next round, not a nested call)."""
    progress = True
    while progress and not state.finished:
        progress = False
        if state.stopping:
            _drop_tokens(state)
        if not state.paused:
            # Joins fire only once every token in hand has been placed: a token still on
            # its way to a join's buffer must be part of that join's single run.
            progress = _admit_tokens(state, commands) or joins.fire_joins(
                state, lambda join: _active_steps(state, join))
        if not progress:
            progress = _check_quiescence(state, commands)


def _drop_tokens(state: ExecutionState) -> None:
    """While stopping, only the final_step token may still run."""
    dropped = [t for t in state.tokens if not t.final]
    if not dropped and not any(state.join_buffers.values()):
        return
    for token in dropped:
        emit(state, "policy.admit.evaluated", entity_id=token.step, status="skipped",
             payload={"allowed": False, "reason": f"execution stopping ({state.stopping})"})
        _move(token, TokenState.DROPPED)
    for buffered in state.join_buffers.values():
        for token in buffered:
            _move(token, TokenState.DROPPED)
    state.tokens = [t for t in state.tokens if t.final]
    state.join_buffers.clear()


def _move(token: Token, target: TokenState) -> None:
    token.state = move("token", token.state, target)


def _admit_tokens(state: ExecutionState, commands: list[Command]) -> bool:
    progress = False
    final_step = state.playbook.executor.spec.final_step
    for token in list(state.tokens):
        if not token.in_hand or state.finished:  # taken out meanwhile (joined, dropped, ...)
            continue
        if token.denied and token.evaluated_ctx_version == state.ctx_version:
            continue
        if final_step and token.step == final_step and not token.final:
            # final_step runs once, after quiescence: an arc to it only ends its branch.
            _move(token, TokenState.ABSORBED)
            state.tokens.remove(token)
            state.absorbed_final_tokens += 1
            progress = True
            continue
        if joins.waits_at_join(state, token):
            progress = True
            continue
        if token.step in state.paused_steps and not token.final:
            continue  # an operator paused this step: it waits, in hand, until resumed
        if budget.exhausted(state):
            continue  # left for Proceed: only starting a step run costs budget
        allowed = token.final or _admitted(state, token)
        if allowed:
            _move(token, TokenState.ADMITTED)
            state.tokens.remove(token)
            complete(state, steps.start_step_run(state, token, commands), commands)
            progress = True
        elif _on_deny(state, token.step) == "discard":
            _move(token, TokenState.DISCARDED)
            state.tokens.remove(token)
            state.discarded_steps.append(token.step)
            progress = True
        else:
            if not token.denied:
                _move(token, TokenState.DENIED)  # a denied token re-evaluated stays denied
            token.evaluated_ctx_version = state.ctx_version
    return progress


def _admit_policy(state: ExecutionState, step_name: str) -> tuple[Step | None, AdmitPolicy | None]:
    step_def = state.graph.steps.get(step_name)
    return step_def, (step_def.spec.policy.admit if step_def and step_def.spec.policy else None)


def _admitted(state: ExecutionState, token: Token) -> bool:
    """Admission rules: first match wins; no rules = allow; rules but no match = deny."""
    step_def, admit = _admit_policy(state, token.step)
    if admit is None or not admit.rules:
        return True
    context = template_context(state, step_def, args=token.args)
    allowed, matched, errors = False, None, []
    for index, rule in enumerate(admit.rules):
        try:
            ok, error = evaluate_condition(rule.when, context, where=f"{token.step}.admit.rules[{index}]")
        except ResultFieldUnavailable as exc:  # recorded in the event, as any guard error here
            ok, error = False, str(exc)
        if error:
            errors.append(error)
        if ok:
            allowed, matched = rule.allow, index
            break
    emit(state, "policy.admit.evaluated", entity_id=token.step, status="success" if allowed else "skipped",
         payload={"allowed": allowed, "matched_rule_index": matched, "token": token.id,
                  "errors": errors or None})
    return allowed


def _on_deny(state: ExecutionState, step_name: str) -> str:
    _, admit = _admit_policy(state, step_name)
    return admit.on_deny if admit is not None else "pending"


def _active_steps(state: ExecutionState, exclude_join: str) -> Iterator[str]:
    """The steps that may still produce tokens, lazily (with repeats): a join asks whether
    *any* of them can still reach it, and the first one usually can. (A set of all of them,
    built on every arrival, made a 10,000-way fan-out quadratic.)"""
    yield from (run.step for run in state.step_runs.values())
    yield from (t.step for t in state.tokens if not t.denied or _on_deny(state, t.step) == "wait")
    yield from (j for j, buf in state.join_buffers.items() if buf and j != exclude_join)


def _check_quiescence(state: ExecutionState, commands: list[Command]) -> bool:
    """At quiescence add the final_step token (True: the pump has work again) or finish."""
    if state.step_runs or any(state.join_buffers.values()):
        return False
    waiting = [t for t in state.tokens if not t.denied or _on_deny(state, t.step) == "wait"]
    if waiting:
        return False  # paused (resume runs them), or an approval gate waiting for a ctx patch
    final_step = state.playbook.executor.spec.final_step
    if final_step and not state.final_started:
        state.final_started = True
        add_token(state, final_step, _summary(state), source=None, final=True)
        return True
    _finish(state, commands)
    return False


def _summary(state: ExecutionState) -> dict[str, Any]:
    failed = _failed_steps(state)
    return {
        "execution_id": state.execution_id,
        "total_steps": len(state.steps),
        "step_runs": state.total_step_runs,
        "failed_steps_count": len({f["step"] for f in failed}),
        "failed_steps": failed,
        "steps": {name: record.status for name, record in state.steps.items()},
        "denied_steps": sorted({t.step for t in state.tokens if t.denied}),
        "discarded_steps": sorted(set(state.discarded_steps)),
    }


def _failed_steps(state: ExecutionState) -> list[dict[str, Any]]:
    return [f.to_dict() for f in state.failures]


def _finish(state: ExecutionState, commands: list[Command]) -> None:
    unhandled = [f for f in state.failures if not f.handled]
    ok = not unhandled and state.stopping is None
    status = ExecutionStatus.COMPLETED if ok else ExecutionStatus.FAILED
    reason = None
    if not ok:
        reason = state.stopping_reason
        if unhandled:
            first = unhandled[0]
            reason = reason or f"step '{first.step}' failed: {first.message}"
    wf_status = WorkflowStatus.COMPLETED if ok else WorkflowStatus.FAILED
    state.workflow_status = transition("workflow", state.workflow_status, wf_status)
    emit(state, "workflow.finished", entity_id=state.execution_id,
         status="success" if ok else "error", payload={"meta": {"status": wf_status.value}})
    state.status = transition("execution", state.status, status)
    result = _run_result(state, reason, unhandled=len(unhandled),
                         denied_steps=sorted({t.step for t in state.tokens if t.denied}))
    emit(state, "playbook.finished", entity_id=state.execution_id, status="success" if ok else "error",
         payload={"meta": result})
    emit(state, "playbook.processed", entity_id=state.execution_id, status="success" if ok else "error")
    _close(state, "playbook.finished", result, commands)


def _run_result(state: ExecutionState, reason: str | None, *, unhandled: int,
                denied_steps: list[str]) -> dict[str, Any]:
    """The run's result (``Finish``, the workflow's output, ``playbook.finished``), one shape
    for every end: the execution's status (already set), why, and its failed steps."""
    failed = _failed_steps(state)
    return {"status": state.status.value, "reason": reason, "total_steps": len(state.steps),
            "failed_steps_count": len({f["step"] for f in failed}), "failed_steps": failed,
            "unhandled_failures": unhandled, "denied_steps": denied_steps,
            "final_step": state.playbook.executor.spec.final_step}


def _close(state: ExecutionState, terminal_event: str, result: dict[str, Any], commands: list[Command]) -> None:
    state.ended_at = state.now
    state.terminal_event = terminal_event
    state.result = result
    commands.append(Finish(status=state.status.value, result=result))


def _cancel(state: ExecutionState, reason: str | None, commands: list[Command]) -> None:
    in_flight = list(state.pipelines)
    in_flight += [r.loop.fetching for r in state.step_runs.values() if r.loop is not None and r.loop.fetching]
    if in_flight:
        commands.append(CancelTasks(task_run_ids=in_flight, reason=reason or "execution cancelled"))
    for run in state.step_runs.values():
        run.cancelled = True
        if run.status in (StepStatus.PENDING, StepStatus.RUNNING):
            run.status = transition("step", run.status, StepStatus.CANCELLED)
            emit(state, "step.failed", entity_id=run.step, parent_id=state.execution_id,
                 step_run_id=run.id, status="error",
                 payload={"error": {"kind": "cancelled", "message": reason or "execution cancelled"},
                          "handled": False, "meta": {"step_status": StepStatus.CANCELLED.value}})
            steps.record_step(state, run.step, StepStatus.CANCELLED, None)
    state.workflow_status = transition("workflow", state.workflow_status, WorkflowStatus.CANCELLED)
    emit(state, "workflow.finished", entity_id=state.execution_id, status="error",
         payload={"meta": {"status": "CANCELLED"}})
    state.status = transition("execution", state.status, ExecutionStatus.CANCELLED)
    # A cancel counts no failure as unhandled and no step as denied: the run did not decide them.
    result = _run_result(state, reason or "cancelled", unhandled=0, denied_steps=[])
    emit(state, "execution.cancelled", entity_id=state.execution_id, status="error",
         payload={"reason": reason, "cancelled_tasks": in_flight})
    for token in state.tokens:
        _move(token, TokenState.DROPPED)
    state.tokens.clear()
    _close(state, "execution.cancelled", result, commands)
