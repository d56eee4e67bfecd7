"""The Temporal UI's current-details text, built from the engine state (pure)."""

from __future__ import annotations

from noetl_temporal.engine.messages import Pause, Resume
from noetl_temporal.engine.progress import MAX_LISTED, current_step, describe

from .harness import NOW, feed, finished, ok, run

LOOP = """
workload: {items: [1, 2, 3, 4]}
workflow:
  - step: each
    loop: {in: "{{ workload.items }}", iterator: n, spec: {mode: parallel, max_in_flight: 2}}
    tool: {kind: python, code: x}
    next: {arcs: [{step: after}]}
  - step: after
    tool: {kind: python, code: x}
"""

GATE = """
workflow:
  - step: start
    tool: {kind: noop}
    next: {spec: {mode: inclusive}, arcs: [{step: gated}, {step: slow}]}
  - step: slow
    tool: {kind: python, code: x}
  - step: gated
    spec: {policy: {admit: {rules: [{when: "{{ ctx.approved }}", then: {allow: true}}]}}}
    tool: {kind: noop}
"""


def test_loop_progress_counts_finished_iterations_of_the_running_step():
    r = run(LOOP, hold=lambda c: True)
    assert describe(r.state) == "**RUNNING**\n\nrunning: `each` 0/4"
    feed(r, finished(r.held.pop(0), ok(1)))
    assert "running: `each` 1/4" in describe(r.state)
    while r.held and r.held[0].step == "each":
        feed(r, finished(r.held.pop(0), ok(1)))
    assert describe(r.state) == "**RUNNING**\n\nrunning: `after`"
    feed(r, finished(r.held.pop(0), ok(1)))
    assert describe(r.state) == "**COMPLETED**\n\nended: playbook.finished\n\nlast step: `after`"


def test_a_failed_iteration_is_shown_beside_the_count():
    r = run(LOOP, hold=lambda c: True)
    feed(r, finished(r.held.pop(0), {"status": "error", "result": None, "meta": {},
                                     "error": {"kind": "python", "message": "x", "retryable": False}}))
    assert "`each` 1/4 (1 failed)" in describe(r.state)


def test_pause_and_the_steps_it_holds():
    r = run(LOOP, hold=lambda c: True)
    feed(r, Pause(now=NOW, reason="lunch"))
    while r.held:
        feed(r, finished(r.held.pop(0), ok(1)))
    text = describe(r.state)
    assert text.startswith("**RUNNING** · paused")
    assert "held by the pause: `after`" in text
    feed(r, Resume(now=NOW))
    assert "paused" not in describe(r.state)


def test_a_gate_waiting_for_ctx_is_named():
    r = run(GATE, hold=lambda c: c.step == "slow")
    text = describe(r.state)
    assert "running: `slow`" in text and "waiting at a gate (ctx change): `gated`" in text


def _fan_out(n: int) -> str:
    arcs = ", ".join(f"{{step: b{i}}}" for i in range(n))
    steps = "".join(f"""
  - step: b{i}
    tool: {{kind: python, code: x}}""" for i in range(n))
    return f"""
workflow:
  - step: start
    tool: {{kind: noop}}
    next: {{spec: {{mode: inclusive}}, arcs: [{arcs}]}}{steps}
"""


def test_long_lists_are_cut():
    r = run(_fan_out(MAX_LISTED + 3), hold=lambda c: True)
    names = [f"`b{i}`" for i in range(MAX_LISTED)]
    assert describe(r.state) == "**RUNNING**\n\nrunning: " + ", ".join(names) + " and 3 more"
    for _ in range(4):
        feed(r, finished(r.held.pop(0), ok(1)))
    assert describe(r.state) == "**RUNNING**\n\nrunning: " + ", ".join(f"`b{i}`" for i in range(4, 13))


def test_nothing_before_the_start():
    from noetl_temporal.engine.machine import new_state

    from .harness import playbook

    assert describe(new_state(playbook(LOOP), "ex")) == ""


def test_current_step_is_the_running_one_then_the_gate_not_the_last_finished():
    r = run(GATE.replace("then: {allow: true}}]", "then: {allow: true}}], on_deny: wait"), hold=lambda c: True)
    assert current_step(r.state) == "slow"          # running while `gated` waits
    feed(r, finished(r.held.pop(0), ok(1)))         # slow done: only the gate is left
    assert r.state.current_step == "slow"           # the last step started ...
    assert current_step(r.state) == "gated"         # ... but the run waits at the gate


HELD = """
workflow:
  - step: start
    tool: {kind: noop}
    next: {spec: {mode: inclusive}, arcs: [{step: fetch}, {step: first}]}
  - step: fetch
    tool: {kind: python, code: x}
  - step: first
    tool: {kind: python, code: x}
    next: {arcs: [{step: second}]}
  - step: second
    tool: {kind: python, code: x}
"""


def test_skipped_steps_and_the_runs_a_paused_step_holds_are_named():
    from noetl_temporal.engine import snapshot
    from noetl_temporal.engine.behaviours import SKIPPED_STEP_STATUS
    from noetl_temporal.engine.messages import HoldStep, SkipStep

    r = run(HELD, hold=lambda c: True, behaviours=[SKIPPED_STEP_STATUS])
    feed(r, HoldStep(now=NOW, step="second", reason="db maintenance", by="ops"))
    assert "paused by an operator (resume-step): `second`" in describe(r.state)
    assert "run held" not in describe(r.state)   # paused before anything reached it
    first = next(c for c in r.held if c.step == "first")
    r.held.remove(first)
    feed(r, finished(first, ok(1)))
    assert "paused by an operator (resume-step): `second` (1 run held)" in describe(r.state)
    feed(r, SkipStep(now=NOW, step="fetch", reason="source is down " + "x" * 300, by="oncall"))
    text = describe(r.state)
    line = next(part for part in text.split("\n\n") if part.startswith("skipped by an operator"))
    assert line.startswith("skipped by an operator (skip): `fetch` (by oncall: source is down xxx")
    assert len(line) < 200 and line.endswith("…)")   # bounded: the whole reason is in the events
    # the next run (continue-as-new) says the same: the names are rebuilt from the step records
    again = snapshot.restore(r.state.playbook, snapshot.snapshot(r.state))
    assert describe(again) == text
    feed(r, HoldStep(now=NOW, step="second", hold=False, by="ops"))
    feed(r, finished(r.held.pop(), ok(1)))
    final = describe(r.state)
    assert final.startswith("**COMPLETED**") and "paused by an operator" not in final
    assert line in final   # a closed run still says who skipped what


def test_a_fast_path_task_waiting_to_retry_is_named_with_its_wait():
    r = run(HELD, hold=lambda c: True)
    wait = {"step": "fetch", "iteration": None, "attempt": 2, "until": "2026-11-27T20:00:00Z",
            "last_error": "exit 3 " + "x" * 300}
    text = describe(r.state, [wait, {**wait, "step": "each", "iteration": 4, "last_error": None}])
    line = next(part for part in text.split("\n\n") if part.startswith("retrying: "))
    assert line.startswith("retrying: `fetch` attempt 2 waits until 2026-11-27T20:00:00Z (last error: exit 3 xxx")
    assert line.endswith("…), `each` (iteration 4) attempt 2 waits until 2026-11-27T20:00:00Z") and len(line) < 300
    assert "retrying" not in describe(r.state, [])
