"""The completer: ends of pipelines, iterations and loops come back as completions and are
dispatched depth first, so events keep the order of the nested calls they replaced."""

from __future__ import annotations

import pytest

from noetl_temporal.engine.budget import WORK_BUDGET
from noetl_temporal.engine.completer import complete, dispatch
from noetl_temporal.engine.internal_completions import FillLoop, IterationDone, PipelineDone, StepRunDone
from noetl_temporal.engine.machine import new_state, step
from noetl_temporal.engine.messages import Proceed, Start
from noetl_temporal.engine.state_machines import LoopState, PipelineState
from noetl_temporal.errors import InvalidTransition

from .harness import NOW, playbook, run


def _loop_events(r) -> list[str]:
    """``loop.*`` and ``step.*`` events as ``type[:iteration]``."""
    out = []
    for e in r.events:
        if e["event_type"].startswith(("loop.", "step.")):
            it = e.get("iteration")
            out.append(e["event_type"] + (f":{it}" if it is not None else ""))
    return out


def _iterations(n: int, *, done: str = "done") -> list[str]:
    out = []
    for i in range(n):
        out += [f"loop.iteration.scheduled:{i}", f"loop.iteration.started:{i}", f"loop.iteration.{done}:{i}"]
    return out


LOOP = """
workflow:
  - step: each
    loop: {{in: "{{{{ [1, 2, 3] }}}}", iterator: x, spec: {{mode: {mode}, max_in_flight: {cap}}}}}
    tool: {{kind: {kind}, {setting}: x}}
"""

START = ["step.scheduled", "step.started", "loop.started"]


@pytest.mark.parametrize("mode, cap, kind, expected", [
    # inline iterations end inside the fill pass: each is recorded before the next starts
    ("sequential", 1, "noop", START + _iterations(3) + ["loop.done", "step.done"]),
    ("parallel", 2, "noop", START + _iterations(3) + ["loop.done", "step.done"]),
    # activity iterations: the pass fills max_in_flight, then each end fills again
    ("parallel", 2, "python", START + ["loop.iteration.scheduled:0", "loop.iteration.started:0",
                                       "loop.iteration.scheduled:1", "loop.iteration.started:1",
                                       "loop.iteration.done:0", "loop.iteration.scheduled:2",
                                       "loop.iteration.started:2", "loop.iteration.done:1",
                                       "loop.iteration.done:2", "loop.done", "step.done"]),
])
def test_loop_events_keep_the_nested_call_order(mode, cap, kind, expected):
    r = run(LOOP.format(mode=mode, cap=cap, kind=kind, setting="code" if kind == "python" else "result"))
    assert r.status == "COMPLETED"
    assert _loop_events(r) == expected


FAIL_FAST = """
executor: {spec: {failure: {mode: fail_fast}}}
workflow:
  - step: each
    loop: {in: "{{ [0, 1, 2] }}", iterator: x, spec: {mode: sequential}}
    tool:
      - name: t
        kind: noop
        spec: {policy: {rules: [{when: "{{ x == 0 }}", then: {do: fail}}]}}
"""


def test_an_inline_fill_pass_keeps_its_stop_decision():
    """Recorded executions (before ``loop-fail-fast-fails-step``): fail_fast in an inline loop:
    the pass that started item 0 decided "start more" before 0 failed, so 1 and 2 still
    start (and end cancelled at once)."""
    r = run(FAIL_FAST, behaviours=[])
    assert _loop_events(r) == START + _iterations(3, done="failed") + ["loop.done", "step.failed"]
    assert [e["payload"]["error"]["kind"] for e in r.events if e["event_type"] == "loop.iteration.failed"] == [
        "policy", "cancelled", "cancelled"]


def test_an_activity_iteration_failure_starts_no_new_pass():
    """The same failure reported by an activity: the next pass sees fail_fast and stops."""
    r = run(FAIL_FAST.replace("kind: noop", "kind: python\n        code: x"), behaviours=[])
    assert _loop_events(r) == START + ["loop.iteration.scheduled:0", "loop.iteration.started:0",
                                       "loop.iteration.failed:0", "loop.done", "step.failed"]


def test_a_noop_step_is_finished_by_its_pipeline_done_before_the_next_token():
    r = run("""
    workflow:
      - step: a
        tool: {kind: noop}
        next: {spec: {mode: inclusive}, arcs: [{step: b}, {step: c}]}
      - step: b
        tool: {kind: noop}
      - step: c
        tool: {kind: noop}
    """)
    assert [(e["event_type"], e["entity_id"]) for e in r.events if e["event_type"].startswith("step.")] == [
        ("step.scheduled", "a"), ("step.started", "a"), ("step.done", "a"),
        ("step.scheduled", "b"), ("step.started", "b"), ("step.done", "b"),
        ("step.scheduled", "c"), ("step.started", "c"), ("step.done", "c")]


HELD_LOOP = """
workflow:
  - step: each
    loop: {in: "{{ [1, 2, 3] }}", iterator: x, spec: {mode: parallel, max_in_flight: 2}}
    tool: {kind: python, code: x}
  - step: other
    tool: {kind: python, code: x}
"""


def _held(text: str = HELD_LOOP):
    r = run(text, hold=lambda cmd: True)
    (run_id,) = r.state.step_runs
    return r, r.state.step_runs[run_id]


@pytest.mark.parametrize("completion, emitted, follow_ups", [
    # a step run ends (its loop closed, or it never started): recorded and routed
    (lambda run: StepRunDone(run.id, ok=False, result=None, outcome=None), ["step.failed"], []),
    (lambda run: StepRunDone(run.id, ok=True, result={"n": 1}, outcome=None, loop_done=True), ["step.done"], []),
    # an unknown step run (already ended): nothing happens
    (lambda run: StepRunDone("gone:run:1", ok=True, result=None, outcome=None), [], []),
    (lambda run: PipelineDone("gone:run:1"), [], []),
])
def test_dispatch_table(completion, emitted, follow_ups):
    r, loop_run = _held()
    before = len(r.events)
    produced = dispatch(r.state, completion(loop_run), [])
    assert [e["event_type"] for e in r.events[before:]] == emitted
    assert produced == follow_ups


def test_an_iteration_done_is_recorded_then_asks_for_a_fill_pass():
    r, loop_run = _held()
    assert loop_run.loop.state is LoopState.WAITING       # two of three in flight
    pipe = loop_run.iterations[0]
    pipe.state = PipelineState.COMPLETED                    # its task's outcome ended it
    before = len(r.events)
    produced = dispatch(r.state, IterationDone(loop_run.id, 0), [])
    assert [e["event_type"] for e in r.events[before:]] == ["loop.iteration.done"]
    assert produced == [FillLoop(loop_run.id, stop_new=False)]
    assert loop_run.loop.state is LoopState.FILLING
    complete(r.state, produced[0], [])                      # the pass starts item 2, then waits
    assert [e["event_type"] for e in r.events[before + 1:]] == ["loop.iteration.scheduled",
                                                               "loop.iteration.started", "task.started"]
    assert loop_run.loop.state is LoopState.WAITING


def test_a_fill_step_outside_a_fill_pass_is_an_engine_bug():
    r, loop_run = _held()
    with pytest.raises(InvalidTransition):
        dispatch(r.state, FillLoop(loop_run.id, stop_new=False), [])


def test_complete_runs_follow_ups_before_anything_queued_behind():
    """Depth first: a fill step's iteration end is handled before the pass goes on."""
    r = run(LOOP.format(mode="parallel", cap=3, kind="noop", setting="result"))
    done = [e["iteration"] for e in r.events if e["event_type"] == "loop.iteration.done"]
    started = [e["iteration"] for e in r.events if e["event_type"] == "loop.iteration.started"]
    assert done == started == [0, 1, 2]


def test_a_parked_fill_pass_resumes_on_proceed():
    n = WORK_BUDGET + 10
    state = new_state(playbook(f"""
    workflow:
      - step: each
        loop: {{in: "{{{{ range({n}) | list }}}}", iterator: i, spec: {{mode: parallel, max_in_flight: 4}}}}
        tool: {{kind: noop}}
    """), "ex")
    _, commands = step(state, Start(execution_id="ex", now=NOW))
    (loop_run,) = state.step_runs.values()
    assert loop_run.loop.state is LoopState.PARKED and state.parked_loops == [loop_run.id]
    assert [type(c).__name__ for c in commands] == ["Yield"]
    proceeds = 0
    while not state.finished and proceeds < 10:
        proceeds += 1
        step(state, Proceed(now=NOW))
        assert loop_run.loop.state in (LoopState.PARKED, LoopState.COMPLETED)
    assert state.status.value == "COMPLETED" and proceeds >= 2
    assert state.steps["each"].result["done"] == n
