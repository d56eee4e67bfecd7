"""Which per-step controls the execution page offers (engine/step_offers.py): exactly what
the update validators would accept now, step by step."""

from __future__ import annotations

import textwrap

from noetl_temporal.dsl import load_playbook_text
from noetl_temporal.engine import retries, skips
from noetl_temporal.engine.machine import new_state, step
from noetl_temporal.engine.messages import HoldStep, RunTask, SkipStep, Start
from noetl_temporal.engine.step_offers import offered

T0, T1 = "2026-01-01T00:00:00Z", "2026-01-01T00:00:01Z"

PLAYBOOK = """
metadata: {name: offers}
workflow:
  - step: start
    tool: {kind: noop}
    next: {arcs: [{step: fetch}]}
  - step: fetch
    tool: {kind: shell, cmd: "exit 3", spec: {policy: {rules: [{when: "{{ output.status == 'error' }}",
                                                               then: {do: retry, attempts: 5, delay: 40}}]}}}
    next: {arcs: [{step: load}]}
  - step: load
    tool: {kind: noop}
  - step: each
    loop: {in: "{{ [1, 2] }}", iterator: n}
    tool: {kind: shell, cmd: "true"}
"""


def started():
    playbook = load_playbook_text(textwrap.dedent(PLAYBOOK), source="<t>").playbook
    state, commands = step(new_state(playbook, "e1"), Start(execution_id="e1", now=T0))
    [fetch] = [c for c in commands if isinstance(c, RunTask)]
    return state, fetch.task_run_id


def test_a_retrying_step_is_offered_what_its_validators_accept():
    state, task = started()
    waiting = {task: {"retrying": True, "attempt": 2, "state": "waiting to retry"}}
    [entry] = offered(state, waiting)
    assert entry == {"step": "fetch", "iteration": None, "paused": False,
                     "controls": ["skip", "retry-now", "retry-policy", "pause"]}
    # the same rule as the validators': each offered control is accepted, the others refused
    assert skips.refusal(state, "fetch", "x") is None and skips.hold_refusal(state, "fetch", False) is not None
    assert retries.refusal(state, "fetch", "now", None, waiting) is None


def test_a_running_attempt_offers_no_retry_now_and_a_fast_path_task_no_retry_control():
    state, task = started()
    [running] = offered(state, {task: {"retrying": False, "attempt": 1, "state": "running"}})
    assert running["controls"] == ["skip", "retry-policy", "pause"]
    [unseen] = offered(state, {})   # Temporal holds no activity for it (fast path, an answer, a child)
    assert unseen["controls"] == ["skip", "pause"]


def test_a_paused_step_offers_resume_and_a_finished_execution_nothing():
    state, task = started()
    state, _ = step(state, HoldStep(now=T1, step="load", hold=True, reason="maintenance", by="ops"))
    fetch, load = offered(state, {})
    assert fetch["step"] == "fetch" and load == {"step": "load", "iteration": None, "paused": True,
                                                 "controls": ["resume"]}
    state, _ = step(state, HoldStep(now=T1, step="load", hold=False, reason=None, by="ops"))
    state, _ = step(state, SkipStep(now=T1, step="fetch", reason="down", result=None, by="ops"))
    assert state.finished and offered(state, {}) == []


def test_a_loop_step_is_offered_per_running_iteration_and_paused_once():
    playbook = load_playbook_text(textwrap.dedent("""
    metadata: {name: looped}
    workflow:
      - step: each
        loop: {in: "{{ [1, 2, 3] }}", iterator: n, spec: {mode: parallel}}
        tool: {kind: shell, cmd: "sleep 60"}
    """), source="<t>").playbook
    state, commands = step(new_state(playbook, "e1"), Start(execution_id="e1", now=T0))
    tasks = [c for c in commands if isinstance(c, RunTask)]
    entries = offered(state, {})
    assert [(e["iteration"], e["controls"]) for e in entries] == [
        (0, ["skip", "pause"]), (1, ["skip"]), (2, ["skip"])] and len(tasks) == 3
    # each iteration's offer is what the validator says of that iteration
    assert all(skips.refusal(state, "each", "x", e["iteration"]) is None for e in entries)
    assert skips.refusal(state, "each", "x") is not None   # the loop step as a whole: name an iteration
