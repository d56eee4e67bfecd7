"""Pipelines: a step's labeled tasks run in order, one ``RunTask`` at a time (``noop`` runs
inline); each task's outcome goes through its policy (``continue``, ``jump``, ``break``,
``fail``; ``retry`` is the activity's), its ``set`` patches apply before the action, and
the pipeline's end is a completion (``PipelineDone`` / ``IterationDone``) returned to the
caller: this module never calls the step or loop that owns the pipeline.

The pipeline's state moves by the "pipeline" table (``state_machines.py``); a task policy's action
(``PipelineAction``) picks the move.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from .. import tool_kinds
from ..dsl.models import Step, Task
from ..errors import ResultFieldUnavailable, TemplateError
from ..templates import render_value, undefined
from . import approvals, budget, ctx_size, invocation
from .behaviours import STORED_POLICY_FIELDS
from .common import (
    emit,
    ended_outcome,
    engine_error,
    error_outcome,
    patch_ctx,
    record_failure,
    short_outcome,
    step_definition,
    template_context,
)
from .context import outcome_view, set_path
from .envelopes import Attempt, ErrorInfo, Outcome
from .failure import timeout_message
from .internal_completions import IterationDone, PipelineDone
from .messages import Command, TaskFinished
from .policy_evaluation import PolicyInput, decide
from .state import ExecutionState, PipelineRun, StepRun
from .state_machines import PipelineAction, PipelineState, move
from .stored_results import held_outcome

__all__ = ["INLINE_KINDS", "PipelineEnd", "run_pipeline", "task_finished", "apply_patches", "step_outcome",
           "skip_task"]

#: what a pipeline's end returns: the completion its owner (step run or loop) handles
PipelineEnd = PipelineDone | IterationDone

# Kinds evaluated inside the workflow (no activity, no history cost), and kinds whose
# configuration is used in the workflow, never by ``noetl.run_task`` (inline kinds, and
# sub-playbooks the shell runs as child workflows): each kind declares it (tool_kinds/).
INLINE_KINDS = tool_kinds.INLINE_KINDS
#: a task that waits for a person's answer (``approvals.py``)
APPROVE_KIND = tool_kinds.approve.APPROVE.kind
#: undefined-value warnings kept per task run (a loop over a typo would repeat one)
_MAX_WARNINGS = 10
#: the error of a cancelled task that reported none (an ``ok`` outcome that arrived after
#: the cancel): the empty error object the step's failure always carried then
_NO_ERROR = ErrorInfo.from_dict({})


def run_pipeline(state: ExecutionState, run: StepRun, pipe: PipelineRun,
                 commands: list[Command]) -> PipelineEnd | None:
    """Advance a pipeline until it waits on an activity, parks, or ends (inline tasks run
    here); return its completion when it ended."""
    step_def = step_definition(state, run.step)
    tasks = step_def.tool
    if pipe.state is PipelineState.PARKED:
        _move(pipe, PipelineState.RUNNING)
    while not pipe.finished:
        if run.cancelled or run.timed_out:
            return _end_pipeline(state, run, pipe, failed=True, cancelled=run.cancelled,
                                 error=ErrorInfo(kind="timeout" if run.timed_out else "cancelled",
                                                 message="step timed out" if run.timed_out else "cancelled",
                                                 keys=("kind", "message")))
        if pipe.pc >= len(tasks):
            return _end_pipeline(state, run, pipe, failed=False, error=None)
        task = tasks[pipe.pc]
        if task.kind in INLINE_KINDS:
            if budget.exhausted(state):
                _move(pipe, PipelineState.PARKED)
                budget.park_pipeline(state, pipe)  # Proceed runs it on a later activation
                return None
            budget.spend(state)
        count = pipe.runs.get(task.name, 0) + 1
        pipe.runs[task.name] = count
        suffix = f":iter:{pipe.iteration}" if pipe.iteration is not None else ""
        task_run_id = f"{run.id}{suffix}:task:{task.name}:{count}"
        context = template_context(state, step_def, args=run.args, pipe=pipe, extra=_pipeline_extra(pipe, task))
        started = emit(state, "task.started", entity_id=task.name, parent_id=run.id, step_run_id=run.id,
                       task_run_id=task_run_id, iteration=pipe.iteration, status="in_progress",
                       payload={"meta": {"kind": task.kind}})
        try:
            config, secret_context = _render_task(state, step_def, task, context, started)
            rules = [] if task.kind in INLINE_KINDS else invocation.task_rules(state, run, step_def, task, context)
        except TemplateError as exc:
            end = _apply_outcome(state, run, pipe, task, TaskReport(task_run_id, error_outcome("template", str(exc))))
            if end is not None:
                return end
            continue
        if task.kind in INLINE_KINDS:
            outcome = _inline_outcome(task, config)
            too_big = ctx_size.inline_overflow(state, outcome.result, f"{run.step}.tool.{task.name}")
            if too_big is not None:
                outcome = error_outcome("limit", too_big)
            end = _apply_outcome(state, run, pipe, task, TaskReport(task_run_id, outcome))
            if end is not None:
                return end
            continue
        if task.kind == APPROVE_KIND:
            problem = approvals.config_problem(config)
            if problem is not None:
                end = _apply_outcome(state, run, pipe, task, TaskReport(task_run_id, error_outcome("approve", problem)))
                if end is not None:
                    return end
                continue
            approvals.requested(state, run, pipe, task.name, task_run_id, config)
        _move(pipe, PipelineState.WAITING)
        pipe.in_flight = task_run_id
        state.pipelines[task_run_id] = pipe
        commands.append(invocation.run_task_command(state, run, pipe, step_def, task, task_run_id, context,
                                                    config, secret_context, rules))
        return None
    return None


def _move(pipe: PipelineRun, target: PipelineState) -> None:
    pipe.state = move("pipeline", pipe.state, target)


def _pipeline_extra(pipe: PipelineRun, task: Task, view: dict[str, Any] | None = None,
                    attempt: int = 1) -> dict[str, Any]:
    """The pipeline's names for a task's templates; ``view`` is its outcome as templates see it."""
    return {"_prev": pipe.prev, "_task": task.name, "_attempt": attempt, "output": view, "outcome": view}


def _render_task(state: ExecutionState, step_def: Step, task: Task, context: Any,
                 started: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The task's rendered configuration. An undefined value a template printed is a warning
    in the task's ``task.started`` payload (no event of its own: the log's sequence, which
    ``uuid()`` reads, stays what it was), or with ``strict_templates`` a template error.
    (Its ``set:`` patches warn in its ``task.done``/``task.failed`` payload.)"""
    strict = state.playbook.executor.spec.strict_templates
    with undefined.recording(strict=strict) as found:
        rendered = invocation.render_config(state, step_def, task, context)
    _add_warnings(started, found)
    return rendered


def _add_warnings(event: dict[str, Any], found: list[undefined.Undefined]) -> None:
    """Undefined values rendered for a task go into its event's payload (no event of its own)."""
    if found:
        event["payload"] = {**(event.get("payload") or {}),
                            "warnings": [u.to_dict() for u in found[:_MAX_WARNINGS]]}


def _inline_outcome(task: Task, config: dict[str, Any]) -> Outcome:
    if "result" in config:
        result = config["result"]
    else:
        merged = {**(config.get("input") or {}), **(config.get("args") or {})}
        result = merged or None
    return Outcome.ok(result, attempt=1, duration_ms=0)


def task_finished(state: ExecutionState, event: TaskFinished, commands: list[Command]) -> PipelineEnd | None:
    """Apply a task's reported outcome, then advance its pipeline; its completion if it ended."""
    pipe = state.pipelines.pop(event.task_run_id, None)
    state.approvals.pop(event.task_run_id, None)   # an approval cancelled while it waited
    if pipe is None:
        return None  # a late report for a task we no longer wait for (duplicate or cancelled run)
    pipe.in_flight = None
    _move(pipe, PipelineState.RUNNING)
    run = state.step_runs.get(pipe.step_run_id)
    if run is None:
        return None
    step_def = step_definition(state, run.step)
    task = step_def.tool[pipe.pc]
    reported = event.result
    for attempt in reported.attempts:
        _emit_attempt(state, run, pipe, task, event.task_run_id, attempt)
    decision = None
    if reported.decided:
        decision = (reported.rule_index, PipelineAction(reported.action or "continue"))
        if reported.exhausted:
            decision = (reported.rule_index, PipelineAction.FAIL)
    end = _apply_outcome(state, run, pipe, task, TaskReport(event.task_run_id, reported.outcome, reported.attempts,
                                                          decision))
    if end is not None or pipe.finished:
        return end
    return run_pipeline(state, run, pipe, commands)


def _emit_attempt(state: ExecutionState, run: StepRun, pipe: PipelineRun, task: Task, task_run_id: str,
                  attempt: Attempt) -> None:
    ids = dict(entity_id=task.name, parent_id=task_run_id, step_run_id=run.id, task_run_id=task_run_id,
               iteration=pipe.iteration, attempt=attempt.attempt)
    emit(state, "task.attempt.started", status="in_progress", payload={"meta": {"started_at": attempt.started_at}},
         **ids)
    ok = attempt.ok
    emit(state, "task.attempt.done" if ok else "task.attempt.failed", status="success" if ok else "error",
         duration_ms=attempt.duration_ms,
         payload={"error": attempt.error.to_dict() if attempt.error is not None else None,
                  "meta": {"action": attempt.action, "next_delay_s": attempt.next_delay_s}},
         **ids)


@dataclass(frozen=True)
class TaskReport:
    """A task's end as the pipeline applies it: its outcome, its attempt records, and the
    policy decision the activity took on it (None: the pipeline decides, for inline tasks,
    template errors and tasks no activity could decide for)."""

    task_run_id: str
    outcome: Outcome
    attempts: tuple[Attempt, ...] = ()
    decision: tuple[int | None, PipelineAction] | None = None


@dataclass(frozen=True)
class _TaskEnd:
    """One task end being applied: where the task ran and what it reported, with the names
    its patches and policy see (its outcome's JSON is written once, for those and the event)."""

    state: ExecutionState
    run: StepRun
    pipe: PipelineRun
    task: Task
    step_def: Step
    report: TaskReport
    attempt: int
    data: dict[str, Any]      # the outcome's JSON
    scope: dict[str, Any]     # the pipeline's names with the outcome's view

    @property
    def outcome(self) -> Outcome:
        return self.report.outcome

    @property
    def rules(self) -> list[Any]:
        return self.task.spec.policy.rules if self.task.spec.policy else []


@dataclass(frozen=True)
class _Verdict:
    """The policy's decision on a task end: the matched rule (and its ``then``) and the action;
    a cancelled task fails whatever its policy says."""

    rule_index: int | None
    action: PipelineAction
    then: Any
    cancelled: bool


def _apply_outcome(state: ExecutionState, run: StepRun, pipe: PipelineRun, task: Task,
                   report: TaskReport) -> PipelineEnd | None:
    """Apply a task's end: judge it, record it, apply its patches, then carry out the action;
    the completion if the action ended the pipeline."""
    end = _task_end(state, run, pipe, task, report)
    verdict = _judge(end)
    event = _record(end, verdict)
    unread = _apply_task_patches(end, verdict, event)
    if unread is not None:  # a `set` read a stored result's part the workflow does not hold
        return _end_pipeline(end.state, end.run, end.pipe, failed=True, error=engine_error("template", str(unread)))
    return _act(end, verdict)


def _task_end(state: ExecutionState, run: StepRun, pipe: PipelineRun, task: Task, report: TaskReport) -> _TaskEnd:
    attempt = report.outcome.meta.get("attempt") or max(1, len(report.attempts))
    data = report.outcome.to_dict()
    return _TaskEnd(state=state, run=run, pipe=pipe, task=task, step_def=step_definition(state, run.step),
                    report=report, attempt=attempt, data=data,
                    scope=_pipeline_extra(pipe, task, outcome_view(data), attempt))


def _judge(end: _TaskEnd) -> _Verdict:
    """The matched rule and action: none for a cancelled task, the activity's decision when
    it made one, else the policy evaluated here (inline tasks and template errors)."""
    run, outcome, rules = end.run, end.outcome, end.rules
    cancelled = outcome.error_kind == "cancelled" or run.cancelled or run.timed_out
    if cancelled:
        rule_index, action = None, PipelineAction.FAIL
    elif end.report.decision is not None:
        rule_index, action = end.report.decision
    else:
        d = decide(_policy_input(end), outcome, end.attempt)
        rule_index, action = d.rule_index, PipelineAction(d.action)
    then = rules[rule_index].then if rule_index is not None else None
    return _Verdict(rule_index=rule_index, action=action, then=then, cancelled=cancelled)


def _policy_input(end: _TaskEnd) -> PolicyInput:
    """What the decision needs for a task the engine decides on: the engine's whole scope
    now (no ``RunTask`` picked names from it), and no retry (docs/semantics.md, "Task policies")."""
    policy = end.task.spec.policy
    names = template_context(end.state, end.step_def, args=end.run.args, pipe=end.pipe, extra=end.scope)
    return PolicyInput(end.task.name, [r.model_dump() for r in end.rules], names,
                       policy.on_unmatched if policy else None, can_retry=False)


def _record(end: _TaskEnd, verdict: _Verdict) -> dict[str, Any]:
    """Keep the outcome on the pipeline and emit what it says: ``task.done|failed``, a stored
    result, the policy's evaluation. Returns the ``task.done|failed`` event (patch warnings
    join its payload)."""
    state, run, pipe, task, outcome = end.state, end.run, end.pipe, end.task, end.outcome
    task_run_id, ok = end.report.task_run_id, outcome.status == "ok"
    pipe.last_outcome = outcome
    pipe.vars[task.name] = outcome.result
    # (keyword order is the events' key order)
    event = emit(state, "task.done" if ok else "task.failed", entity_id=task.name, parent_id=run.id,
                 step_run_id=run.id, task_run_id=task_run_id, iteration=pipe.iteration,
                 status="success" if ok else "error", duration_ms=outcome.meta.get("duration_ms"),
                 attempt=end.attempt, payload={"outcome": short_outcome(end.data)})
    ids = dict(task_run_id=task_run_id, step_run_id=run.id, iteration=pipe.iteration)
    ref = outcome.result_ref
    if ref is not None:
        summary = {k: v for k, v in ref.items() if k not in ("preview", "fields")}
        if isinstance(ref.get("fields"), dict):  # their names: the values may be 64 KiB
            summary["kept"] = sorted(ref["fields"])
        emit(state, "result.stored", entity_id=f"task:{task.name}:attempt:{end.attempt}", parent_id=task_run_id,
             **ids, status="success", payload={"result_ref": summary, "extracted": ref.get("extracted")})
    if end.rules or end.report.decision is not None:
        then = verdict.then
        emit(state, "policy.task.evaluated", entity_id=f"task:{task.name}", parent_id=task_run_id, **ids,
             status="success", payload={"matched_rule_index": verdict.rule_index, "action": {
                 "do": verdict.action.value, **({"to": then.to} if then and then.to else {})}})
    return event


def _apply_task_patches(end: _TaskEnd, verdict: _Verdict, event: dict[str, Any]) -> ResultFieldUnavailable | None:
    """The task's own ``set`` patches, then the matched rule's (before the action). NoETL's
    task sequences bind a task's own plain-name ``set:`` (``fetch_result: "{{ output }}"``) to
    the task's *result*; its ``ctx.``/``iter.`` keys and policy ``then.set`` see the envelope.
    Undefined values are warnings in the task's event (strict covers its configuration).
    Returns the error of a read of the task's stored result the workflow cannot serve
    (:func:`_held_scope`): it fails the task."""
    then = verdict.then
    if end.task.is_empty() and (then is None or then.is_empty()):
        return None   # nothing to render (a plain task: once per loop item)
    state, run, task, result = end.state, end.run, end.task, end.outcome.result
    result_scope = dict(end.scope, output=result, outcome=result)
    scope, held = _held_scope(end)
    with undefined.recording() as found:
        try:
            apply_patches(state, end.step_def, task, run, end.pipe, end.outcome, where=f"{run.step}.tool.{task.name}.set",
                          extra=scope, vars_extra=result_scope, unavailable_fails=held)
            if then is not None and not then.is_empty():
                apply_patches(state, end.step_def, then, run, end.pipe, end.outcome, extra=scope, unavailable_fails=held,
                              where=f"{run.step}.tool.{task.name}.spec.policy.rules[{verdict.rule_index}].then")
        except ResultFieldUnavailable as exc:
            return exc
        finally:
            _add_warnings(event, found)
    return None


def _held_scope(end: _TaskEnd) -> tuple[dict[str, Any], bool]:
    """The names a task's ``set`` and its policy's ``then.set`` read, and whether a read the
    workflow cannot serve fails the task: with ``STORED_POLICY_FIELDS``, ``output``/``outcome``
    read a stored result through its kept fields (``{{ output.data.count }}``, as a routing
    guard does) and what is not kept fails located, never undefined (docs/tools.md, "Large
    results"). Before, they read the reference."""
    if STORED_POLICY_FIELDS not in end.state.behaviours:
        return end.scope, False
    view = held_outcome(end.scope.get("output"), end.run.step)
    return dict(end.scope, output=view, outcome=view), True


def _act(end: _TaskEnd, verdict: _Verdict) -> PipelineEnd | None:
    """Carry out the verdict's action on the pipeline; its completion if the action ended it."""
    state, run, pipe, result = end.state, end.run, end.pipe, end.outcome.result
    if verdict.cancelled:
        error = end.outcome.error or _NO_ERROR
        if run.timed_out:
            error = engine_error("timeout", timeout_message(state, run))
        return _end_pipeline(state, run, pipe, failed=True, cancelled=run.cancelled, error=error)
    action = verdict.action
    if action is PipelineAction.CONTINUE:
        pipe.prev = result
        pipe.pc += 1
        return None
    if action is PipelineAction.BREAK:
        pipe.prev = result
        return _end_pipeline(state, run, pipe, failed=False, error=None)
    if action is PipelineAction.JUMP:
        pipe.prev = result
        return _jump(state, run, pipe, end.step_def, verdict.then.to if verdict.then else None)
    return _end_pipeline(state, run, pipe, failed=True, error=_failure(end, verdict))  # fail, or retry spent


def _failure(end: _TaskEnd, verdict: _Verdict) -> ErrorInfo:
    """The error a task's ``fail`` ends its pipeline with: the task's own, or the policy's."""
    error = end.outcome.error
    if error is None or error.is_empty:
        error = engine_error("policy", f"task '{end.task.name}' failed by policy"
                             + (f" (rule {verdict.rule_index})" if verdict.rule_index is not None else ""))
    decision, attempts = end.report.decision, end.report.attempts
    if decision is not None and decision[1] == "fail" and attempts and attempts[-1].action == "retry":
        error = dataclasses.replace(error, message=f"retries exhausted after {len(attempts)} attempts: {error.message}")
    return error


def _jump(state: ExecutionState, run: StepRun, pipe: PipelineRun, step_def: Step,
          target: str | None) -> PipelineEnd | None:
    names = [t.name for t in step_def.tool]
    pipe.jumps += 1
    limit = state.playbook.executor.spec.max_jumps
    if pipe.jumps > limit:
        return _end_pipeline(state, run, pipe, failed=True,
                             error=engine_error("jump_limit", f"task policy jumped more than {limit} times in one "
                                                  f"run of '{run.step}' (executor.spec.max_jumps); add a guard that "
                                                  "ends the cycle with do: break"))
    if target == "previous":
        pipe.pc = max(0, pipe.pc - 1)
    elif target in names:
        pipe.pc = names.index(target)
    else:
        return _end_pipeline(state, run, pipe, failed=True,
                             error=engine_error("policy", f"jump target {target!r} is not a task of step '{run.step}'"))
    return None


def apply_patches(state: ExecutionState, step_def: Step, holder: Any, run: StepRun,
                  pipe: PipelineRun | None, outcome: Outcome | None, where: str,
                  extra: dict[str, Any] | None = None, vars_extra: dict[str, Any] | None = None,
                  unavailable_fails: bool = False) -> None:
    """Render and apply ``set_ctx``/``set_iter``/``set_vars``; ``vars_extra`` (if given) is
    the scope for the plain names instead of ``extra``. ``unavailable_fails``: a stored
    result's part the workflow does not hold raises (the caller fails the task), nothing applied."""
    if holder.is_empty():
        return
    if extra is None:
        view = outcome_view(outcome)
        extra = {"output": view, "outcome": view}
        if pipe is not None:
            extra["_prev"] = pipe.prev
    context = template_context(state, step_def, args=run.args, pipe=pipe, extra=extra)
    vars_context = context if vars_extra is None else context.with_names(vars_extra)
    try:
        ctx_patch = render_value(holder.set_ctx, context, where=where)
        iter_patch = render_value(holder.set_iter, context, where=where)
        var_patch = render_value(holder.set_vars, vars_context, where=where)
    except TemplateError as exc:
        if unavailable_fails and isinstance(exc, ResultFieldUnavailable):
            raise
        record_failure(state, run.step, run.id, handled=False, kind="template", message=str(exc))
        return
    too_big = ctx_size.overflow(state, {**ctx_patch, **(var_patch if pipe is None else {})}, where)
    if too_big is not None:
        record_failure(state, run.step, run.id, handled=False, kind="limit", message=too_big)
        return
    patch_ctx(state, ctx_patch)
    if pipe is not None:
        if pipe.iter_scope is not None:
            for key, value in iter_patch.items():
                set_path(pipe.iter_scope, key, value)
        for key, value in var_patch.items():
            set_path(pipe.vars, key, value)
    else:
        # A step-level `set:` of plain names has no pipeline left to bind into: it
        # patches ctx, which is where later steps can read it.
        patch_ctx(state, var_patch)


def skip_task(state: ExecutionState, run: StepRun, pipe: PipelineRun, result: Any) -> PipelineEnd | None:
    """An operator skipped the pipeline's waiting task (``skips.py``): the pipeline ends as a
    success with ``result``, the rest of its tasks not run; the task's late report is ignored."""
    if pipe.in_flight is not None:
        state.pipelines.pop(pipe.in_flight, None)
        state.approvals.pop(pipe.in_flight, None)
        pipe.in_flight = None
        _move(pipe, PipelineState.RUNNING)
    pipe.prev = result
    pipe.last_outcome = Outcome.ok(result, attempt=1, duration_ms=0)
    return _end_pipeline(state, run, pipe, failed=False, error=None)


def _end_pipeline(state: ExecutionState, run: StepRun, pipe: PipelineRun, *, failed: bool,
                  error: ErrorInfo | None, cancelled: bool = False) -> PipelineEnd | None:
    """Close the pipeline; its owner learns from the completion returned (never a call up)."""
    if pipe.finished:
        return None
    target = PipelineState.COMPLETED
    if failed:
        target = PipelineState.CANCELLED if cancelled else PipelineState.FAILED
    _move(pipe, target)
    pipe.error = error
    if pipe.iteration is not None:
        return IterationDone(step_run_id=run.id, iteration=pipe.iteration)
    return PipelineDone(step_run_id=run.id)


def step_outcome(pipe: PipelineRun) -> Outcome:
    """The outcome a step run ends with when its own pipeline ended."""
    failed = pipe.failed
    last = pipe.last_outcome
    result = pipe.prev if not failed else (last.result if last is not None else None)
    return ended_outcome(pipe.last_outcome, ok=not failed, result=result, error=pipe.error if failed else None)
