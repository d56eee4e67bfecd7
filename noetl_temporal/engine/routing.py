"""Routing: a finished step's boundary event and the evaluation of its ``next.arcs``.

Arcs are evaluated in YAML order (``exclusive`` fires the first match, ``inclusive``
every match); a fired arc adds a token for its target and applies its ``set_ctx``.
:func:`decide` matches the guards once per step end (a :class:`RouteDecision`); the step's
status reads it (is the failure handled?) and :func:`route` fires its arcs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..dsl.models import Step
from ..errors import ResultFieldUnavailable, TemplateError
from ..templates import evaluate_condition, render_value
from . import ctx_size
from .behaviours import STORED_RESULT_FIELDS
from .common import add_token, emit, patch_ctx, record_failure, template_context
from .context import Scope, outcome_view, set_path
from .envelopes import Outcome
from .event_types import CALL_DONE, CALL_ERROR
from .state import ExecutionState, StepRun
from .stored_results import held_outcome

__all__ = ["EventName", "RouteDecision", "boundary_event", "decide", "route"]


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


@dataclass(frozen=True)
class RouteDecision:
    """Which arcs of ``next`` a step run's end fires, and which of them handle its failure.

    Decided once, before the step's terminal event (whose status says whether the failure
    was handled), and carried out by :func:`route` after it: the guards are evaluated once,
    so the status and the routing read the same match. ``handling`` holds the selected arcs
    whose guard matched *because* of the failure; the failure counts as handled for the
    execution when one of them actually fires (its ``args``/``set`` rendered)."""

    event: dict[str, Any]
    context: Scope | None = None             # the guards' scope; arcs render their args in it
    matched: tuple[int, ...] = ()            # arcs whose guard matched (the first, for exclusive)
    selected: tuple[int, ...] = ()           # the arcs that fire (all matched, for inclusive)
    errors: tuple[str, ...] = ()             # guard errors
    handling: frozenset[int] = frozenset()   # selected arcs that handle the failure
    fatal: str | None = None                 # a guard read what the workflow does not hold: the step fails

    @property
    def handles_failure(self) -> bool:
        return bool(self.handling)


def decide(state: ExecutionState, run: StepRun, step_def: Step, event: dict[str, Any],
           outcome: Outcome | None) -> RouteDecision:
    """Match ``next.arcs`` against a step run's end (guard evaluation is pure: no event, no record)."""
    router = step_def.next
    if router is None or not router.arcs:
        return RouteDecision(event)
    view = outcome_view(outcome)
    if STORED_RESULT_FIELDS in state.behaviours:  # `outcome.result.count` as `start.count` reads it
        view = held_outcome(view, run.step, run.step in state.graph.loop_steps)
    context = template_context(state, step_def, args=run.args,
                               extra={"event": event, "output": view, "outcome": view})
    try:
        matched, errors = _match(run, step_def, context)
        selected = matched if router.spec.mode == "inclusive" else matched[:1]
        handling: frozenset[int] = frozenset()
        if event["status"] == "error":
            handling = frozenset(i for i in selected
                                 if _guard_is_failure_specific(router.arcs[i].when, context, event, view))
    except ResultFieldUnavailable as exc:
        # Which arc fires depends on a value the workflow does not hold: taking another arc
        # (or none) would be a silent wrong answer, so the step fails (engine/steps.py).
        return RouteDecision(event, fatal=str(exc))
    return RouteDecision(event, context, tuple(matched), tuple(selected), tuple(errors), handling)


def route(state: ExecutionState, run: StepRun, step_def: Step, decision: RouteDecision) -> bool:
    """Fire the decided arcs (a token each, their ``set`` patched into ctx); return True when
    a fired arc handled the failure."""
    router = step_def.next
    if router is None or not router.arcs or decision.context is None:
        return False
    context, errors = decision.context, list(decision.errors)
    fired: list[dict[str, Any]] = []
    handled = False
    for index in decision.selected:
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
        fired.append({"step": arc.step, "args": args})
        handled = handled or index in decision.handling
    emit(state, "next.evaluated", entity_id=f"step:{run.step}", parent_id=run.id, step_run_id=run.id,
         status="success" if fired else "skipped",
         payload={"mode": router.spec.mode, "event": str(decision.event["name"]),
                  "matched": [{"step": router.arcs[i].step, "when": router.arcs[i].when} for i in decision.matched],
                  "selected": fired, "errors": errors or None})
    if not fired:
        no_match = router.spec.on_no_match
        # The message names the setting that made a no-match a failure, so the user knows
        # which one to change: this router's own, or the playbook-wide one.
        if no_match == "error":
            why = f"step '{run.step}' has next.spec.on_no_match: error"
        elif state.playbook.executor.spec.no_next_is_error and no_match != "quiet":
            why = "executor.spec.no_next_is_error is set"
        else:
            return handled
        record_failure(state, run.step, run.id, handled=False, kind="no_next",
                       message=f"no arc of next matched ({why})")
    return handled


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


def _guard_is_failure_specific(when: str | None, context: Scope, event: dict[str, Any],
                               view: dict[str, Any] | None) -> bool:
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
    ok_outcome = outcome_view(dict(view or {}, status="ok", error=None))
    ok_context = context.with_names({"event": ok_event, "output": ok_outcome, "outcome": ok_outcome})
    matched_on_success, _ = evaluate_condition(when, ok_context)
    return not matched_on_success
