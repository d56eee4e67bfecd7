"""``kind: approve`` in the pure engine: waiting is state, the answer an input
(engine/approvals.py); the shell's update validator asks :func:`approvals.refusal`."""

from __future__ import annotations

import textwrap

import pytest

from noetl_temporal.dsl import load_playbook_text
from noetl_temporal.engine import approvals
from noetl_temporal.engine.behaviours import SKIPPED_STEP_STATUS
from noetl_temporal.engine.envelopes import ErrorInfo, Outcome, TaskResult
from noetl_temporal.engine.machine import new_state, step
from noetl_temporal.engine.messages import Answer, Finish, RunTask, Start, StartTimer, TaskFinished

T0, T1 = "2026-01-01T00:00:00Z", "2026-01-01T00:05:00Z"

LOOPED = """
metadata: {name: looped}
workflow:
  - step: ask
    loop: {in: "{{ [1, 2] }}", iterator: n, spec: {mode: parallel}}
    tool:
      kind: approve
      prompt: "item {{ n }}?"
      fields: {ok: {type: boolean, required: true}}
      approvers: [ops]
"""


def started(text: str, behaviours: tuple[str, ...] | None = None):
    playbook = load_playbook_text(textwrap.dedent(text), source="<t>").playbook
    state = new_state(playbook, "e1")
    listed = {} if behaviours is None else {"behaviours": list(behaviours)}   # default: a new execution's
    state, commands = step(state, Start(execution_id="e1", now=T0, **listed))
    return state, commands


def test_each_iteration_waits_and_is_answered_by_its_own_number():
    state, commands = started(LOOPED)
    asks = [c for c in commands if isinstance(c, RunTask)]
    assert [c.kind for c in asks] == ["approve", "approve"]
    assert sorted(w["prompt"] for w in approvals.waiting(state)) == ["item 1?", "item 2?"]
    assert approvals.refusal(state, "ask", {"ok": True}, "ops") == \
        "step 'ask' waits for an answer in several iterations (0, 1): name one"
    assert approvals.refusal(state, "ask", {"ok": True}, "ops", iteration=5) == \
        "step 'ask' is not waiting for an answer in iteration 5 (waiting: ask)"
    assert approvals.refusal(state, "ask", {"ok": 1}, "ops", iteration=1) == \
        "answer to step 'ask' refused: field 'ok' takes a boolean, not 1"
    assert approvals.refusal(state, "ask", {"ok": True}, None, iteration=1) == \
        "an anonymous caller may not answer step 'ask': its approvers are ops"
    assert approvals.refusal(state, "ask", {"ok": True}, "ops", iteration=1) is None

    for iteration, answer in ((1, True), (0, False)):
        task_run_id, _ = approvals.find(state, "ask", iteration)
        state, commands = step(state, Answer(now=T1, task_run_id=task_run_id, values={"ok": answer}, by="ops"))
    [finish] = [c for c in commands if isinstance(c, Finish)]
    assert finish.status == "COMPLETED" and state.approvals == {}
    results = state.step_results["ask"]["results"]
    assert [r["ok"] for r in results] == [False, True] and {r["answered_by"] for r in results} == {"ops"}
    answered = [e for e in state.log.since(0, 1000) if e["event_type"] == "approval.answered"]
    assert [(e["iteration"], e["payload"]["by"], e["payload"]["answered_at"]) for e in answered] == \
        [(1, "ops", T1), (0, "ops", T1)]


def test_a_late_answer_after_the_task_was_cancelled_changes_nothing():
    state, commands = started(LOOPED.replace("mode: parallel", "mode: sequential"))
    [ask] = [c for c in commands if isinstance(c, RunTask)]
    cancelled = Outcome.failed(ErrorInfo(kind="cancelled", message="approval cancelled"))
    state, _ = step(state, TaskFinished(task_run_id=ask.task_run_id, now=T1, result=TaskResult.undecided(cancelled)))
    assert ask.task_run_id not in state.approvals   # the wait ended with its task
    state, commands = step(state, Answer(now=T1, task_run_id=ask.task_run_id, values={"ok": True}, by="ops"))
    assert commands == [] and "approval.answered" not in [e["event_type"] for e in state.log.since(0, 1000)]


def test_an_expired_approval_takes_the_default_or_fails():
    text = """
    metadata: {name: timed}
    workflow:
      - step: ask
        tool: {kind: approve, prompt: "?", timeout: 5, on_timeout: answer, default: {ok: false}}
    """
    state, commands = started(text)
    [ask] = [c for c in commands if isinstance(c, RunTask)]
    assert not [c for c in commands if isinstance(c, StartTimer)]   # the shell's wait holds the timer
    state, commands = step(state, Answer(now=T1, task_run_id=ask.task_run_id, timed_out=True))
    assert state.step_results["ask"] == {"ok": False, "answered_by": None, "answered_at": T1, "timed_out": True}
    failing = textwrap.dedent(text).replace("on_timeout: answer, default: {ok: false}", "on_timeout: fail")
    state, commands = started(failing)
    [ask] = [c for c in commands if isinstance(c, RunTask)]
    state, commands = step(state, Answer(now=T1, task_run_id=ask.task_run_id, timed_out=True))
    [finish] = [c for c in commands if isinstance(c, Finish)]
    assert finish.status == "FAILED"
    assert state.failures[0].kind == "timeout" and "not answered within 5 s" in state.failures[0].message


def test_a_rendered_form_that_does_not_hold_fails_the_task():
    state, commands = started("""
    metadata: {name: bad}
    workload: {form: {ok: bool}}
    workflow:
      - step: ask
        tool: {kind: approve, prompt: "?", fields: "{{ workload.form }}"}
    """)
    assert not [c for c in commands if isinstance(c, RunTask)] and state.approvals == {}
    assert state.failures[0].kind == "approve" and "field 'ok' has type 'bool'" in state.failures[0].message


@pytest.mark.parametrize("behaviours, ended", [
    ((), {"status": "COMPLETED", "runs": 1, "result": {"go": True}}),   # recorded before the behaviour
    ((SKIPPED_STEP_STATUS,), {"status": "SKIPPED", "runs": 1, "result": {"go": True},
                              "skipped": {"by": "ops", "reason": "decided by phone"}}),
])
def test_skipping_a_waiting_approval_ends_its_wait_and_routes_as_a_success(behaviours, ended):
    from noetl_temporal.engine import skips
    from noetl_temporal.engine.messages import CancelTasks, SkipStep

    state, commands = started("""
    metadata: {name: skipped}
    workflow:
      - step: ask
        tool: {kind: approve, prompt: "?"}
        next: {arcs: [{step: after, when: "{{ ask.go }}"}]}
      - step: after
        tool: {kind: noop, result: "went"}
    """, behaviours)
    [ask] = [c for c in commands if isinstance(c, RunTask)]
    assert skips.refusal(state, "ask", "") == "a skip needs a reason (recorded in step.skipped)"
    assert skips.refusal(state, "after", "x") == \
        "step 'after' is not running, so there is nothing to skip (running: ask)"
    state, commands = step(state, SkipStep(now=T1, step="ask", reason="decided by phone", result={"go": True},
                                           by="ops"))
    assert [c.task_run_ids for c in commands if isinstance(c, CancelTasks)] == [[ask.task_run_id]]
    assert state.approvals == {} and state.step_results["after"] == "went"
    [skipped] = [e for e in state.log.since(0, 1000) if e["event_type"] == "step.skipped"]
    assert skipped["payload"] == {"by": "ops", "reason": "decided by phone", "result": {"go": True}, "skipped_at": T1}
    # the cancelled task's late report changes nothing
    late = Outcome.failed(ErrorInfo(kind="cancelled", message="cancelled"))
    state, commands = step(state, TaskFinished(task_run_id=ask.task_run_id, now=T1, result=TaskResult.undecided(late)))
    assert commands == [] and state.steps["ask"].to_dict() == ended
    [done] = [e for e in state.log.since(0, 1000) if e["event_type"] == "step.done" and e["entity_id"] == "ask"]
    assert done["status"] == "success"   # its arcs fired as for a success (`after` ran)
    if behaviours:
        assert done["payload"]["meta"] == {"step_status": "SKIPPED"} and done["payload"]["skipped"]["by"] == "ops"
        assert skips.skipped_steps(state.steps) == {"ask": {"by": "ops", "reason": "decided by phone"}}
    else:
        assert skips.skipped_steps(state.steps) == {}
        assert "meta" not in done["payload"] and "skipped" not in done["payload"]


def test_a_paused_step_stays_held_across_continue_as_new():
    from noetl_temporal.engine import skips, snapshot
    from noetl_temporal.engine.messages import HoldStep

    state, commands = started("""
    metadata: {name: held}
    workflow:
      - step: ask
        tool: {kind: approve, prompt: "?"}
        next: {arcs: [{step: after}]}
      - step: after
        tool: {kind: noop, result: "went"}
    """)
    [ask] = [c for c in commands if isinstance(c, RunTask)]
    state, _ = step(state, HoldStep(now=T0, step="after", reason="wait", by="ops"))
    assert skips.hold_refusal(state, "after", True) == "step 'after' is paused already"
    state = snapshot.restore(state.playbook, snapshot.snapshot(state))   # the next run's state
    assert state.paused_steps == ["after"] and list(state.approvals) == [ask.task_run_id]
    state, commands = step(state, Answer(now=T1, task_run_id=ask.task_run_id, values={}, by="ops"))
    assert "after" not in state.steps and not [c for c in commands if isinstance(c, Finish)]   # held
    state, commands = step(state, HoldStep(now=T1, step="after", hold=False, by="ops"))
    assert state.step_results["after"] == "went" and [c for c in commands if isinstance(c, Finish)]
