"""Redrive in the pure engine: the plan (what is reused, what reruns) and a run that reuses
recorded results instead of sending task commands (docs/operations.md)."""

from __future__ import annotations

import json

from noetl_temporal.engine import progress, snapshot
from noetl_temporal.engine.machine import new_state, step_graph
from noetl_temporal.engine.messages import Start
from noetl_temporal.engine.redrive import plan, redriven_event

from .harness import NOW, Run, err, feed, finished, ok, playbook

CHAIN = """
workload: {n: 0}
workflow:
  - step: a
    tool: {kind: python, code: "result = {'v': 1}"}
    set: {ctx: {from_a: "{{ a.v }}"}}
    next: {arcs: [{step: b}]}
  - step: b
    tool: {kind: python, code: "result = 2"}
    next: {arcs: [{step: c, when: "{{ ctx.from_a == 1 }}", args: {got: "{{ b }}"}}]}
  - step: c
    tool: {kind: python, code: "result = 3"}
    next: {arcs: [{step: d}]}
  - step: d
    tool: {kind: python, code: "result = 4"}
"""


def _old_steps(**statuses):
    return {name: {"status": status, "runs": 1, "result": {"old": name}} for name, status in statuses.items()}


def test_plan_reuses_completed_steps_before_the_failure_and_reruns_it_and_what_follows():
    pb = playbook(CHAIN)
    p = plan(old_execution_id="old", old_steps=_old_steps(a="COMPLETED", b="COMPLETED", c="FAILED"),
             old_playbook=pb, new_playbook=pb, new_graph=step_graph(pb))
    assert sorted(p["reuse"]) == ["a", "b"]
    assert p["reuse"]["a"] == {"old": "a"} and p["from_execution_id"] == "old" and p["changed"] == []


def test_plan_reuses_a_step_an_operator_skipped_with_the_result_given():
    pb = playbook(CHAIN)
    p = plan(old_execution_id="old", old_steps=_old_steps(a="COMPLETED", b="SKIPPED", c="FAILED"),
             old_playbook=pb, new_playbook=pb, new_graph=step_graph(pb))
    assert sorted(p["reuse"]) == ["a", "b"] and p["reuse"]["b"] == {"old": "b"}


def test_plan_from_a_step_reruns_it_and_everything_after_it():
    pb = playbook(CHAIN)
    p = plan(old_execution_id="old", old_steps=_old_steps(a="COMPLETED", b="COMPLETED", c="COMPLETED",
                                                          d="COMPLETED"),
             old_playbook=pb, new_playbook=pb, new_graph=step_graph(pb), from_step="b")
    assert sorted(p["reuse"]) == ["a"]


def test_plan_reruns_a_changed_step_and_what_follows_it_and_a_step_that_ran_twice():
    old = playbook(CHAIN)
    new = playbook(CHAIN.replace('result = 2"', 'result = 22"'))
    done = _old_steps(a="COMPLETED", b="COMPLETED", c="COMPLETED", d="FAILED")
    p = plan(old_execution_id="old", old_steps=done, old_playbook=old, new_playbook=new, new_graph=step_graph(new))
    assert sorted(p["reuse"]) == ["a"] and p["changed"] == ["b"]
    done["a"]["runs"] = 2
    p = plan(old_execution_id="old", old_steps=done, old_playbook=old, new_playbook=old, new_graph=step_graph(old))
    assert p["reuse"] == {}


def _redrive(reuse: dict, tool) -> Run:
    pb = playbook(CHAIN)
    r = Run(new_state(pb, "new"))
    r.tool, r.hold, r.held, r.yields = tool, (lambda cmd: False), [], 0  # type: ignore[attr-defined]
    feed(r, Start(execution_id="new", now=NOW, redrive={"from_execution_id": "old", "reuse": reuse,
                                                          "definition": "original"}))
    return r


def test_reused_steps_run_no_task_say_reused_and_rebuild_ctx_args_and_results():
    r = _redrive({"a": {"v": 1}, "b": 2}, lambda cmd: ok(cmd.step))
    assert r.status == "COMPLETED"
    assert [c.step for c in r.ran] == ["c", "d"]        # no task command for a or b
    assert r.state.ctx["from_a"] == 1                    # a's set ran on its recorded result
    assert r.state.step_results["b"] == 2
    c_args = next(e for e in r.events if e["event_type"] == "step.scheduled" and e["entity_id"] == "c")
    assert c_args["payload"]["inputs"]["args"] == {"got": 2}   # b's arc rendered from the reused result
    done = {e["entity_id"]: e["payload"] for e in r.events if e["event_type"] == "step.done"}
    assert done["a"]["reused"] is True and done["a"]["redriven_from"] == "old"
    assert "reused" not in done["c"]
    tasks = {e["step_run_id"].split(":")[0] for e in r.events if e["event_type"].startswith("task.")}
    assert tasks == {"c", "d"}
    details = progress.describe(r.state)   # the Temporal UI's current details
    assert "redrive of `old`" in details
    assert "reused (recorded results, no tool): `a`, `b`" in details and "reran: `c`, `d`" in details
    assert {name: record.to_dict().get("reused", False) for name, record in r.state.steps.items()} == \
        {"a": True, "b": True, "c": False, "d": False}   # the output's steps say it (status, the page)
    first = next(e for e in r.events if e["event_type"] == "execution.redriven_from")
    assert first["payload"]["redriven_from"] == "old" and first["payload"]["reused_steps"] == ["a", "b"]


def test_a_rerun_step_fails_again_like_any_step():
    r = _redrive({"a": {"v": 1}, "b": 2}, lambda cmd: err() if cmd.step == "c" else ok(1))
    assert r.status == "FAILED" and [c.step for c in r.ran][0] == "c"
    assert not {"a", "b"} & {c.step for c in r.ran}


def test_without_a_plan_nothing_is_reused_and_no_redrive_event():
    pb = playbook(CHAIN)
    r = Run(new_state(pb, "plain"))
    r.tool, r.hold, r.held, r.yields = (lambda cmd: ok({"v": 1})), (lambda c: False), [], 0  # type: ignore[attr-defined]
    feed(r, Start(execution_id="plain", now=NOW))
    assert [c.step for c in r.ran] == ["a", "b", "c", "d"]
    assert not [e for e in r.events if "redriven" in e["event_type"] or e["payload"].get("reused")]


def test_the_old_streams_event_follows_its_last_one():
    event = redriven_event(old_execution_id="old", last_seq=41, now=NOW, new_execution_id="new",
                           from_step=None, definition="original", reused=["a"])
    assert event["seq"] == 42 and event["event_id"] == "old:42" and event["event_type"] == "execution.redriven"
    assert event["payload"]["redriven_by"] == "new"


LOOP = """
workload: {items: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]}
workflow:
  - step: start
    tool: {kind: python, code: "result = 1"}
    next: {arcs: [{step: each}]}
  - step: each
    loop: {in: "{{ workload.items }}", iterator: i, spec: {mode: parallel, max_in_flight: 4}}
    tool: {kind: python, input: {i: "{{ i }}"}, code: "result = i"}
    next: {arcs: [{step: after, when: "{{ event.name == 'loop.done' and event.status == 'ok' }}"}]}
  - step: after
    tool: {kind: python, input: {n: "{{ each.results | length }}"}, code: "result = n"}
"""


def _item(cmd) -> int:
    return int(cmd.config["input"]["i"])


def test_a_loop_with_failed_iterations_reruns_only_those():
    pb = playbook(LOOP)
    old = Run(new_state(pb, "old"))
    old.tool = lambda cmd: err() if cmd.step == "each" and _item(cmd) in (2, 5, 7) else ok(  # type: ignore[attr-defined]
        _item(cmd) * 10 if cmd.step == "each" else 1)
    old.hold, old.held, old.yields = (lambda cmd: False), [], 0  # type: ignore[attr-defined]
    feed(old, Start(execution_id="old", now=NOW))
    assert old.status == "FAILED"
    steps = {name: record.to_dict() for name, record in old.state.steps.items()}
    p = plan(old_execution_id="old", old_steps=steps, old_playbook=pb, new_playbook=pb, new_graph=step_graph(pb))
    assert sorted(p["reuse"]) == ["start"] and sorted(p["iterations"]["each"]["results"], key=int) == [
        "0", "1", "3", "4", "6", "8", "9"]
    r = _redrive_with(pb, p, lambda cmd: ok(_item(cmd) * 10 if cmd.step == "each" else 99))
    assert r.status == "COMPLETED"
    assert sorted(_item(c) for c in r.ran if c.step == "each") == [2, 5, 7]
    assert [c.step for c in r.ran if c.step != "each"] == ["after"]
    assert r.state.step_results["each"]["results"] == [i * 10 for i in range(10)]
    reused = [e["iteration"] for e in r.events if e["event_type"] == "loop.iteration.done" and e["payload"].get("reused")]
    assert sorted(reused) == [0, 1, 3, 4, 6, 8, 9]
    # a loop whose items changed count reruns every iteration
    p["iterations"]["each"]["count"] = 11
    r = _redrive_with(pb, p, lambda cmd: ok(1))
    assert len([c for c in r.ran if c.step == "each"]) == 10


def _redrive_with(pb, p, tool) -> Run:
    r = Run(new_state(pb, "new"))
    r.tool, r.hold, r.held, r.yields = tool, (lambda cmd: False), [], 0  # type: ignore[attr-defined]
    feed(r, Start(execution_id="new", now=NOW, redrive=p))
    return r


def test_a_redrive_plan_survives_continue_as_new():
    """The plan is engine state: a snapshot in the middle of a redrive keeps what is still to reuse."""
    pb = playbook(LOOP.replace("mode: parallel, max_in_flight: 4", "mode: sequential"))
    p = {"from_execution_id": "old", "reuse": {"start": 1},
         "iterations": {"each": {"count": 10, "results": {str(i): i * 10 for i in range(1, 10)}}}}
    r = Run(new_state(pb, "new"))
    r.tool, r.hold, r.held, r.yields = (lambda cmd: ok(0)), (lambda cmd: True), [], 0  # type: ignore[attr-defined]
    feed(r, Start(execution_id="new", now=NOW, redrive=p))
    assert [_item(c) for c in r.ran] == [0]             # iteration 0 runs; 1-9 wait in the plan
    data = json.loads(json.dumps(snapshot.snapshot(r.state)))
    again = Run(snapshot.restore(pb, data))
    again.tool, again.hold, again.held, again.yields = (lambda cmd: ok(5)), (lambda cmd: False), [], 0  # type: ignore[attr-defined]
    feed(again, finished(r.held[0], ok(0)))  # type: ignore[attr-defined]
    assert again.status == "COMPLETED" and [c.step for c in again.ran] == ["after"]
    assert again.state.step_results["each"]["results"] == [i * 10 for i in range(10)]


LOOP_OF_CHILDREN = """
workflow:
  - step: first
    tool: {kind: noop}
    next: {arcs: [{step: each}]}
  - step: each
    loop: {in: "{{ workload.items }}", iterator: it}
    tool: {kind: playbook, path: child.yaml, input: {item: "{{ it }}"}}
"""


def test_a_loops_failed_iterations_name_their_children_for_the_redrive():
    from noetl_temporal.engine.redrive import child_key, child_label, child_tasks, has_loop_children

    pb = playbook(LOOP_OF_CHILDREN)
    old = _old_steps(first="COMPLETED")
    old["each"] = {"status": "FAILED", "runs": 1, "result": {"results": ["a", None, "c", None], "count": 4,
                                                            "done": 4, "failed_iterations": [1, 3]}}
    p = plan(old_execution_id="old", old_steps=old, old_playbook=pb, new_playbook=pb, new_graph=step_graph(pb))
    assert p["iterations"]["each"]["results"] == {"0": "a", "2": "c"}
    keys = child_tasks(old_steps=old, old_playbook=pb, new_playbook=pb, new_graph=step_graph(pb),
                       iterations=p["iterations"])
    assert keys == [child_key("each", "each_task", 1), child_key("each", "each_task", 3)]
    assert keys[0] == "each:run:1:iter:1:task:each_task" and child_label(keys[0]) == "each[1]"
    assert child_label(child_key("sub", "t")) == "sub"
    # without the plan's iterations (the loop reruns whole: a fail_fast stop, --from it) no child is redriven
    assert child_tasks(old_steps=old, old_playbook=pb, new_playbook=pb, new_graph=step_graph(pb)) == []
    assert has_loop_children({"children": {"sub:run:1:task:t": {"children": {keys[0]: {}}}}})
    assert not has_loop_children({"children": {"sub:run:1:task:t": {}}}) and not has_loop_children(None)


def test_a_childs_input_digest_ignores_key_order_and_tells_items_apart():
    from noetl_temporal.engine.redrive import payload_digest

    assert payload_digest({"a": 1, "b": [1, 2]}) == payload_digest({"b": [1, 2], "a": 1})
    assert payload_digest({"item": "a"}) != payload_digest({"item": "b"})
