"""Approvals: a ``kind: approve`` task waiting for a person (docs/approvals.md).

Waiting is engine state: when the pipeline starts an approve task, :func:`requested`
records it in ``state.approvals`` (what the form asks, who may answer, since when) and
emits ``approval.requested``. The shell hosts the ``answer`` update and the timeout's
durable timer; both come back as an :class:`~.messages.Answer` input, which
:func:`answered` turns into ``approval.answered`` / ``approval.expired`` and the
task's end (a ``TaskFinished`` the machine hands to the pipeline). :func:`refusal` is
the update validator's rule, so the shell decides nothing itself.
"""

from __future__ import annotations

from typing import Any

from ..tool_kinds.approve import answer_problem, answer_result, field_problems, may_answer, parse_fields
from .common import emit, error_outcome
from .envelopes import Outcome, TaskResult
from .messages import Answer, TaskFinished
from .state import ExecutionState, PipelineRun, StepRun

__all__ = ["requested", "config_problem", "answered", "refusal", "find", "waiting"]


def config_problem(config: dict[str, Any]) -> str | None:
    """What is wrong with a rendered approve task (a template that rendered a bad form)."""
    problems = field_problems(config.get("fields"))
    if problems:
        return "approve: " + problems[0][1].removeprefix("name: ")
    approvers = config.get("approvers")
    if approvers is not None and (not isinstance(approvers, list)
                                  or not all(isinstance(a, str) and a for a in approvers)):
        return "approve: `approvers` is not a list of names"
    return None


def requested(state: ExecutionState, run: StepRun, pipe: PipelineRun, task_name: str, task_run_id: str,
              config: dict[str, Any]) -> None:
    # a list, not a mapping: JSON on its way through Temporal may sort a mapping's keys, and a
    # form's fields are shown in the order the playbook writes them
    fields = [{"name": name, **f.to_dict()} for name, f in parse_fields(config.get("fields")).items()]
    record = {"step": run.step, "task": task_name, "step_run_id": run.id, "iteration": pipe.iteration,
              "prompt": config.get("prompt"), "fields": fields, "approvers": list(config.get("approvers") or []),
              "timeout": config.get("timeout"), "on_timeout": config.get("on_timeout") or "fail",
              "default": config.get("default"), "since": state.now}
    state.approvals[task_run_id] = record
    emit(state, "approval.requested", entity_id=task_name, parent_id=task_run_id, step_run_id=run.id,
         task_run_id=task_run_id, iteration=pipe.iteration, status="in_progress",
         payload={key: record[key] for key in ("step", "prompt", "fields", "approvers", "timeout", "on_timeout")})


def waiting(state: ExecutionState) -> list[dict[str, Any]]:
    """The approvals waiting for an answer, as ``status`` shows them."""
    return [{"task_run_id": task_run_id, **{k: v for k, v in record.items() if k != "default"}}
            for task_run_id, record in state.approvals.items()]


def find(state: ExecutionState, step: str, iteration: int | None = None) -> tuple[str | None, str | None]:
    """``(task_run_id, None)`` of the approval ``step`` waits for, or ``(None, why not)``."""
    if state.finished:
        return None, "the execution is not running: nothing waits for an answer"
    found = [(task_run_id, record) for task_run_id, record in state.approvals.items()
             if record["step"] == step and (iteration is None or record["iteration"] == iteration)]
    if not found:
        others = sorted({record["step"] for record in state.approvals.values()})
        where = f"waiting: {', '.join(others)}" if others else "no step waits for an answer"
        return None, f"step {step!r} is not waiting for an answer{' in iteration ' + str(iteration) if iteration is not None else ''} ({where})"
    if len(found) > 1:
        iterations = ", ".join(str(record["iteration"]) for _, record in found)
        return None, f"step {step!r} waits for an answer in several iterations ({iterations}): name one"
    return found[0][0], None


def refusal(state: ExecutionState, step: str, values: Any, by: str | None, iteration: int | None = None) -> str | None:
    """Why the answer must be refused (None: it is accepted)."""
    task_run_id, why = find(state, step, iteration)
    if task_run_id is None:
        return why
    record = state.approvals[task_run_id]
    if not may_answer(record["approvers"], by):
        return (f"{by or 'an anonymous caller'} may not answer step {step!r}: its approvers are "
                f"{', '.join(record['approvers'])}")
    problem = answer_problem(parse_fields({f["name"]: _spec(f) for f in record["fields"]}), values)
    return f"answer to step {step!r} refused: {problem}" if problem else None


def _spec(field: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in field.items() if k != "name"}


def answered(state: ExecutionState, event: Answer) -> TaskFinished | None:
    """The answer (or the timeout) as the task's end; None when nothing waits for it."""
    record = state.approvals.pop(event.task_run_id, None)
    if record is None:
        return None   # answered already, or the task was cancelled meanwhile
    ids = dict(entity_id=record["task"], parent_id=event.task_run_id, step_run_id=record["step_run_id"],
               task_run_id=event.task_run_id, iteration=record["iteration"])
    outcome: Outcome
    if event.timed_out:
        take = record["on_timeout"] == "answer"
        emit(state, "approval.expired", status="success" if take else "error",
             payload={"step": record["step"], "timeout": record["timeout"], "on_timeout": record["on_timeout"],
                      "answer": record["default"] if take else None}, **ids)
        if take:
            outcome = Outcome.ok(answer_result(record["default"] or {}, by=None, at=state.now, timed_out=True),
                                 attempt=1, duration_ms=0)
        else:
            outcome = error_outcome("timeout", f"approval of step {record['step']!r} not answered within "
                                               f"{record['timeout']} s")
    else:
        emit(state, "approval.answered", status="success",
             payload={"step": record["step"], "answer": event.values, "by": event.by, "answered_at": state.now, "reason": event.reason},
             **ids)
        outcome = Outcome.ok(answer_result(event.values, by=event.by, at=state.now, timed_out=False),
                             attempt=1, duration_ms=0)
    return TaskFinished(task_run_id=event.task_run_id, now=event.now, result=TaskResult.undecided(outcome))
