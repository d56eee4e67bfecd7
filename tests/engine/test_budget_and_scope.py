"""The engine's work budget (long inline work split over several inputs), the lazy template
scope, and forgetting persisted events: pure tables, no server."""

from __future__ import annotations

import pytest

from noetl_temporal.engine.behaviours import CURRENT, PACED_WORKFLOW_TASKS
from noetl_temporal.engine.budget import PACED_WORK_BUDGET, WORK_BUDGET
from noetl_temporal.engine.context import build_context
from noetl_temporal.engine.event_log import EventLog
from noetl_temporal.engine.machine import new_state, step
from noetl_temporal.engine.messages import Cancel, Proceed, Start, Yield
from tests.engine.harness import NOW, playbook, run


def chain(n: int) -> str:
    steps = []
    for i in range(n):
        nxt = f"\n    next: {{arcs: [{{step: s{i + 1}}}]}}" if i < n - 1 else ""
        steps.append(f"  - step: s{i}\n    tool: {{kind: noop, result: {i}}}{nxt}")
    return "workflow:\n" + "\n".join(steps) + "\n"


@pytest.mark.parametrize("steps, min_yields", [
    (10, 0),                          # small: one input does it all
    (WORK_BUDGET, 1),                 # a step start and a noop task are two units each step
    (3 * WORK_BUDGET, 5),
])
def test_long_noop_chains_yield_and_still_run_every_step_once(steps, min_yields):
    r = run(chain(steps))
    assert r.status == "COMPLETED"
    assert r.yields >= min_yields
    assert r.steps_started() == [f"s{i}" for i in range(steps)]
    assert r.state.steps[f"s{steps - 1}"].result == steps - 1
    assert [e["seq"] for e in r.events] == list(range(1, len(r.events) + 1))


def test_paced_executions_spend_a_smaller_budget_per_input_and_end_the_same():
    """``paced-workflow-tasks`` halves an input's work (shorter activations under load);
    an execution started before it keeps the budget it was recorded with."""
    paced = run(chain(4 * WORK_BUDGET), behaviours=list(CURRENT))
    before = run(chain(4 * WORK_BUDGET), behaviours=[b for b in CURRENT if b != PACED_WORKFLOW_TASKS])
    assert PACED_WORK_BUDGET < WORK_BUDGET
    assert paced.status == before.status == "COMPLETED"
    assert paced.yields >= 2 * before.yields - 1 and before.yields >= 3
    assert paced.steps_started() == before.steps_started()


@pytest.mark.parametrize("mode", ["sequential", "parallel"])
def test_big_inline_loops_yield_and_keep_results_in_item_order(mode):
    n = 3 * WORK_BUDGET
    r = run(f"""
    workflow:
      - step: each
        loop: {{in: "{{{{ range({n}) | list }}}}", iterator: i, spec: {{mode: {mode}, max_in_flight: 7}}}}
        tool: {{kind: noop, result: "{{{{ i * 3 }}}}"}}
    """)
    assert r.status == "COMPLETED"
    assert r.yields >= 2
    assert r.state.steps["each"].result["results"] == [i * 3 for i in range(n)]
    assert r.types().count("loop.iteration.done") == n


def test_a_cancel_while_work_is_parked_ends_cleanly():
    state = new_state(playbook(chain(3 * WORK_BUDGET)), "ex")
    _, commands = step(state, Start(execution_id="ex", now=NOW))
    assert any(isinstance(c, Yield) for c in commands)
    step(state, Cancel(now=NOW, reason="stop"))
    assert state.status.value == "CANCELLED"
    _, late = step(state, Proceed(now=NOW))    # the shell's Proceed arrives after the end
    assert late == []


@pytest.mark.parametrize("name, expected", [
    ("x", "pipeline var"),           # pipeline names shadow everything but reserved names
    ("item", "iterator"),
    ("a", "arg"),
    ("done", "step result"),
    ("w", "workload"),
    ("ctx", {"c": 1}),               # reserved names always win
    ("missing", KeyError),
])
def test_scope_resolves_names_by_precedence_without_copying(name, expected):
    scope = build_context(workload={"w": "workload", "a": "workload", "done": "workload", "x": "workload"},
                          ctx={"c": 1}, execution_id="ex",
                          step_results={"done": "step result", "a": "step result", "x": "step result"},
                          args={"a": "arg", "x": "arg"}, iter_scope={"item": "iterator", "index": 0},
                          iterator="item", pipeline_vars={"x": "pipeline var", "ctx": "shadowed"})
    if expected is KeyError:
        assert name not in scope
        with pytest.raises(KeyError):
            scope[name]
    else:
        assert scope[name] == expected
    assert scope.pick(["a", "missing"]) == {"a": "arg"}
    assert scope.with_names({"a": "extra"})["a"] == "extra"


def test_event_log_forgets_persisted_events_and_keeps_seq():
    log = EventLog("ex")
    for _ in range(10):
        log.emit("step.started", timestamp="t")
    log.forget(6)
    assert log.seq == 10 and log.base == 6
    assert [e["seq"] for e in log.since(0, 100)] == [7, 8, 9, 10]
    log.forget(100)      # never past what exists
    assert log.seq == 10 and log.events == []
    assert log.emit("step.done", timestamp="t")["seq"] == 11
