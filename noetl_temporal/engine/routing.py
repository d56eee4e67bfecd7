"""Routing: a finished step's boundary event and the evaluation of its ``next.arcs``.

Arcs are evaluated in YAML order (``exclusive`` fires the first match, ``inclusive``
every match); a fired arc adds a token for its target and applies its ``set_ctx``.
"""

from __future__ import annotations

from typing import Any

from ..dsl.models import Step
from ..errors import TemplateError
from ..templates import evaluate_condition, render_value
from . import ctx_size
from .common import add_token, emit, patch_ctx, record_failure, template_context
from .context import Scope, outcome_view, set_path
from .envelopes import Outcome
from .event_types import CALL_DONE, CALL_ERROR
from .state import ExecutionState, StepRun

__all__ = ["EventName", "boundary_event", "route", "failure_handled"]


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


def boundary_event(step: str, *, ok: bool, loop_done: bool, error: dict[str, Any] | None,
                   result: Any) -> dict[str, Any]:
    """The ``event`` guards see when a step run ends (``step.done|failed`` or ``loop.done``)."""
    name = "loop.done" if loop_done else ("step.done" if ok else "step.failed")
    aliases: tuple[str, ...] = (CALL_DONE,) if ok else (CALL_ERROR,)
    if loop_done:
        aliases += ("step.done",) if ok else ("step.failed",)
    return {"name": EventName(name, aliases), "status": "ok" if ok else "error", "step": step,
            "error": error, "result": result}


def route(state: ExecutionState, run: StepRun, step_def: Step, event: dict[str, Any],
          outcome: Outcome | None) -> bool:
    """Evaluate ``next.arcs``; return True when a guarded arc handled a failure."""
    router = step_def.next
    if router is None or not router.arcs:
        return False
    context = _guard_context(state, run, step_def, event, outcome)
    matched, errors = _match(run, step_def, context)
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
            record_failure(state, run.step, run.id, handled=False, kind="template", message=str(exc))
            continue
        too_big = ctx_size.overflow(state, patch, f"{where}.set")
        if too_big is not None:
            errors.append(too_big)
            record_failure(state, run.step, run.id, handled=False, kind="limit", message=too_big)
            continue
        patch_ctx(state, patch)
        add_token(state, arc.step, args, source=run.step)
        fired.append({"step": arc.step, "args": args, "when": arc.when})
    emit(state, "next.evaluated", entity_id=f"step:{run.step}", parent_id=run.id, step_run_id=run.id,
         status="success" if fired else "skipped",
         payload={"mode": router.spec.mode, "event": str(event["name"]),
                  "matched": [{"step": router.arcs[i].step, "when": router.arcs[i].when} for i in matched],
                  "selected": [{"step": f["step"], "args": f["args"]} for f in fired],
                  "errors": errors or None})
    if not fired:
        no_match = router.spec.on_no_match
        if no_match == "error" or (state.playbook.executor.spec.no_next_is_error and no_match != "quiet"):
            record_failure(state, run.step, run.id, handled=False, kind="no_next",
                           message="no arc of next matched (executor.spec.no_next_is_error is set)")
    if event["status"] != "error":
        return False
    return any(_guard_is_failure_specific(f["when"], context, event) for f in fired)


def failure_handled(state: ExecutionState, run: StepRun, step_def: Step, event: dict[str, Any],
                    outcome: Outcome | None) -> bool:
    """Will ``route`` handle this failure? The same guards on the same state, evaluated
    before the step's terminal event is emitted (its status says whether it was handled);
    guard evaluation is pure, so ``route`` then selects exactly the same arcs."""
    router = step_def.next
    if router is None or not router.arcs or event["status"] != "error":
        return False
    context = _guard_context(state, run, step_def, event, outcome)
    matched, _ = _match(run, step_def, context)
    selected = matched if router.spec.mode == "inclusive" else matched[:1]
    return any(_guard_is_failure_specific(router.arcs[i].when, context, event) for i in selected)


def _guard_context(state: ExecutionState, run: StepRun, step_def: Step, event: dict[str, Any],
                   outcome: Outcome | None) -> Scope:
    view = outcome_view(outcome)
    return template_context(state, step_def, args=run.args, extra={"event": event, "output": view, "outcome": view})


def _match(run: StepRun, step_def: Step, context: Scope) -> tuple[list[int], list[str]]:
    """Indexes of the arcs whose guard matched (the first only, for ``exclusive``), and guard errors."""
    router = step_def.next
    assert router is not None
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
    return matched, errors


def _guard_is_failure_specific(when: str | None, context: Scope, event: dict[str, Any]) -> bool:
    """A fired arc handles a failure when its guard matched *because* of the failure.

    The guard is evaluated once more against the same boundary as a success; if it
    would have matched that too (``event.name == 'loop.done'``, no ``when`` at all), it
    only continues the flow and the failure stays unhandled.
    """
    if when is None:
        return False
    name = str(event["name"])
    ok_name = "loop.done" if name == "loop.done" else "step.done"
    ok_event = dict(event, name=EventName(ok_name, (CALL_DONE, "step.done")), status="ok", error=None)
    view = context["output"]   # the failed outcome as the guards saw it
    ok_outcome = outcome_view(dict(view or {}, status="ok", error=None))
    ok_context = context.with_names({"event": ok_event, "output": ok_outcome, "outcome": ok_outcome})
    matched_on_success, _ = evaluate_condition(when, ok_context)
    return not matched_on_success
