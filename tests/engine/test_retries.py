"""The ``retry_step`` update's rule and record in the pure engine (engine/retries.py): which
step and task a retry control may act on, given what the client saw Temporal hold."""

from __future__ import annotations

import textwrap

from noetl_temporal.dsl import load_playbook_text
from noetl_temporal.engine import retries
from noetl_temporal.engine.machine import new_state, step
from noetl_temporal.engine.messages import RetryStep, RunTask, Start

T0, T1 = "2026-01-01T00:00:00Z", "2026-01-01T00:05:00Z"

PLAYBOOK = """
metadata: {name: retried}
workflow:
  - step: fetch
    tool: {kind: shell, cmd: "exit 3"}
    next: {arcs: [{step: load}]}
  - step: load
    tool: {kind: noop}
"""


def started():
    playbook = load_playbook_text(textwrap.dedent(PLAYBOOK), source="<t>").playbook
    state, commands = step(new_state(playbook, "e1"), Start(execution_id="e1", now=T0))
    [fetch] = [c for c in commands if isinstance(c, RunTask)]
    return state, fetch.task_run_id


def test_refusals_say_why_and_what_runs():
    state, task_run_id = started()
    backing_off = {task_run_id: {"retrying": True, "attempt": 2, "state": "waiting to retry"}}
    running = {task_run_id: {"retrying": False, "attempt": 1, "state": "running"}}
    assert retries.refusal(state, "nope", "now", None, backing_off) == "the playbook has no step 'nope'"
    assert retries.refusal(state, "load", "now", None, backing_off) == \
        "step 'load' is not running, so it has no retry to change (running: fetch)"
    assert retries.refusal(state, "fetch", "now", 1, backing_off) == "step 'fetch' has no loop: leave out the iteration"
    assert retries.refusal(state, "fetch", "later", None, backing_off).startswith("unknown retry control 'later'")
    assert retries.refusal(state, "fetch", "now", None, running) == \
        "step 'fetch' is not waiting to retry: its task is running (attempt 1)"
    assert "has no task that retries right now" in retries.refusal(state, "fetch", "now", None, {})
    assert retries.refusal(state, "fetch", "policy", None, running) == "a policy change sets attempts, delay or both"
    assert retries.refusal(state, "fetch", "policy", None, running, attempts=0).startswith("attempts must be")
    assert retries.refusal(state, "fetch", "policy", None, running, delay=-1).startswith("delay must be")
    assert retries.refusal(state, "fetch", "policy", None, running, attempts=5) is None   # a running task: next time
    assert retries.refusal(state, "fetch", "now", None, backing_off) is None
    assert retries.refusal(state, "fetch", "policy", None, backing_off, attempts=1) == \
        "step 'fetch' is at attempt 2 already: attempts must be 2 or more (to stop its retries, skip the step)"


def test_an_accepted_control_is_recorded_with_who_why_and_when():
    state, task_run_id = started()
    state, commands = step(state, RetryStep(now=T1, step="fetch", action="policy", task_run_id=task_run_id,
                                            reason="flaky", by="ops", attempts=6, delay=30.0))
    assert commands == []
    [event] = [e for e in state.log.since(0, 1000) if e["event_type"] == "step.retry.policy"]
    assert event["entity_id"] == "fetch" and event["task_run_id"] == task_run_id
    assert event["payload"] == {"by": "ops", "reason": "flaky", "at": T1, "attempts": 6, "delay": 30.0}
    # a control that arrives after the task moved on records nothing
    state, _ = step(state, RetryStep(now=T1, step="fetch", action="now", task_run_id="other", by="ops"))
    assert not [e for e in state.log.since(0, 1000) if e["event_type"] == "step.retry.now"]
