"""fail_fast in a loop: a failing iteration stops the loop, and the loop step *fails*.

``loop-fail-fast-fails-step`` (engine/behaviours.py): before it, the loop's step run was
marked cancelled, so the step ended CANCELLED as a handled failure and the execution could
end COMPLETED although an iteration had failed. Executions recorded before the change keep
that (their replay does not switch the behaviour on): the last test pins it.
"""

from __future__ import annotations

from noetl_temporal.engine.behaviours import CURRENT, LOOP_FAIL_FAST_FAILS_STEP
from noetl_temporal.engine.envelopes import Outcome, TaskResult
from noetl_temporal.engine.messages import Start, TaskFinished

from .harness import NOW, err, feed, ok, run
from .test_completer import FAIL_FAST

# the completer test's loop, with a step after it
INLINE = FAIL_FAST + """\
    next: {arcs: [{step: after}]}
  - step: after
    tool: {kind: noop}
"""

PARALLEL = """
executor: {spec: {failure: {mode: fail_fast}}}
workflow:
  - step: each
    loop: {in: "{{ [0, 1, 2, 3] }}", iterator: x, spec: {mode: parallel, max_in_flight: 2}}
    tool: {kind: python, code: "result = x", input: {x: "{{ x }}"}}
"""


def _iterations(r, kind: str) -> list[int]:
    return [e["iteration"] for e in r.events if e["event_type"] == kind]


def test_new_executions_get_the_change():
    assert LOOP_FAIL_FAST_FAILS_STEP in CURRENT
    assert LOOP_FAIL_FAST_FAILS_STEP in Start(execution_id="e", now=NOW).behaviours


def test_an_inline_iteration_failure_starts_no_more_and_fails_the_step_and_the_run():
    r = run(INLINE)
    assert _iterations(r, "loop.iteration.started") == [0]   # 1 and 2 never start
    assert r.status == "FAILED"
    assert r.state.steps["each"].status == "FAILED"
    assert "after" not in r.steps_started()
    [failed] = [e for e in r.events if e["event_type"] == "step.failed"]
    assert failed["payload"]["handled"] is False
    assert r.state.failures[0].handled is False


def test_an_activity_failure_cancels_the_iterations_in_flight_and_fails_the_step():
    # iteration 0 fails at once, iteration 1 is held in flight
    r2 = run(PARALLEL, tool=lambda cmd: err() if cmd.iteration == 0 else ok(cmd.iteration),
             hold=lambda cmd: cmd.iteration == 1)
    [in_flight] = r2.held  # type: ignore[attr-defined]
    assert r2.cancelled == [in_flight.task_run_id]       # fail_fast cancels the sibling
    feed(r2, TaskFinished(task_run_id=in_flight.task_run_id, now=NOW, result=TaskResult.undecided(Outcome.from_dict(err("cancelled", "cancelled")))))
    assert _iterations(r2, "loop.iteration.started") == [0, 1]   # 2 and 3 never start
    assert _iterations(r2, "loop.iteration.failed") == [0, 1]
    assert r2.status == "FAILED" and r2.state.steps["each"].status == "FAILED"


def test_an_error_arc_can_still_handle_the_failed_loop_step():
    handled = INLINE.replace("next: {arcs: [{step: after}]}",
                             "next: {arcs: [{step: after, when: \"{{ event.name == 'step.failed' }}\"}]}")
    r = run(handled)
    assert "after" in r.steps_started()
    assert r.state.steps["each"].status == "HANDLED" and r.status == "COMPLETED"


def test_executions_recorded_before_the_change_keep_the_old_ending():
    r = run(INLINE, behaviours=[])
    assert r.state.steps["each"].status == "CANCELLED"
    assert r.status == "COMPLETED"   # what the fix is about
