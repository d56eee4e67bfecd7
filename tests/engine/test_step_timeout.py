"""``step.spec.timeout`` (NoETL 5.x) bounds the whole step run (docs/semantics.md "Step
timeouts"); executions from before that behaviour keep it as the tasks' attempt timeout."""

from __future__ import annotations

import pytest

from noetl_temporal.dsl import validate_text
from noetl_temporal.engine import CURRENT_BEHAVIOURS
from noetl_temporal.engine.behaviours import STEP_TIMEOUT_BOUNDS_STEP
from noetl_temporal.engine.messages import StepTimedOut

from .harness import NOW, feed, finished, run

PB = """
workflow:
  - step: slow
    spec: {timeout: 2%s}
    tool:
      - {name: a, kind: shell, cmd: "sleep 1"}
      - {name: b, kind: shell, cmd: "sleep 1"}
"""


def test_step_timeout_starts_one_timer_for_the_step_run_not_a_task_timeout():
    r = run(PB % "", hold=lambda cmd: True)
    assert [(t.timer_id, t.seconds) for t in r.timers] == [("timeout:slow:run:1", 2.0)]
    assert r.ran[0].timeout is None           # no longer each task's attempt timeout


def test_the_stricter_of_spec_timeout_and_lifecycle_wins():
    r = run(PB % ", lifecycle: {timeout_s: 5}", hold=lambda cmd: True)
    assert [t.seconds for t in r.timers] == [2.0]
    r = run(PB % ", lifecycle: {timeout_s: 1}", hold=lambda cmd: True)
    assert [t.seconds for t in r.timers] == [1.0]


def test_step_timeout_fires_cancels_the_task_and_fails_the_step_with_a_located_message():
    r = run(PB % "", hold=lambda cmd: True)
    feed(r, StepTimedOut(step_run_id=r.timers[0].step_run_id, now=NOW))
    assert r.cancelled == [r.ran[0].task_run_id]
    feed(r, finished(r.ran[0], {"status": "error", "result": None, "meta": {},
                                "error": {"kind": "cancelled", "message": "cancelled"}}))
    failed = [e for e in r.events if e["event_type"] == "step.failed"][0]
    error = failed["payload"]["outcome"]["error"]
    assert error["kind"] == "timeout"
    assert error["message"].startswith("slow.spec.timeout: step 'slow' ran longer than its spec.timeout of 2 s")
    assert r.status == "FAILED"


def test_without_the_behaviour_step_timeout_stays_the_attempt_timeout():
    old = [b for b in CURRENT_BEHAVIOURS if b != STEP_TIMEOUT_BOUNDS_STEP]
    r = run(PB % "", hold=lambda cmd: True, behaviours=old)
    assert r.timers == []
    assert r.ran[0].timeout == 2.0


@pytest.mark.parametrize("where", ["spec: {timeout: 1.0e+30}", "spec: {lifecycle: {timeout_s: 1.0e+30}}"])
def test_a_timeout_past_what_a_timer_takes_is_a_validation_error(where):
    # the workflow hands Temporal a timedelta: 1e30 s overflows it (a workflow task failure)
    text = f"workflow:\n  - step: s\n    {where}\n    tool: {{kind: shell, cmd: x}}\n"
    (diag,) = [d for d in validate_text(text, "pb.yaml") if d.is_error]
    assert diag.code == "NTL901" and "less than or equal to 315360000" in diag.message
