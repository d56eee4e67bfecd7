"""Entry, admission, routing, joins, quiescence, final_step and final status (docs/semantics.md)."""

from __future__ import annotations

import pytest

from noetl_temporal.engine import routing
from noetl_temporal.engine.messages import PatchCtx

from .harness import NOW, err, feed, ok, run

LINEAR = """
workflow:
  - step: a
    tool: {kind: python, code: "result = 1"}
    next: {arcs: [{step: b}]}
  - step: b
    tool: {kind: python, code: "result = 2"}
    next: {arcs: [{step: c}]}
  - step: c
    tool: {kind: python, code: "result = 3"}
"""


def test_linear_chain_runs_in_order_and_completes_once():
    r = run(LINEAR)
    assert r.steps_started() == ["a", "b", "c"]
    assert r.status == "COMPLETED"
    assert r.types("playbook.finished") == ["playbook.finished"]
    assert [e["seq"] for e in r.events] == list(range(1, len(r.events) + 1))
    assert len({e["event_id"] for e in r.events}) == len(r.events)


def test_entry_step_override():
    text = LINEAR.replace("workflow:", "executor: {spec: {entry_step: b}}\nworkflow:")
    assert run(text).steps_started() == ["b", "c"]


ROUTER = """
workload: {n: %s}
workflow:
  - step: start
    tool: {kind: noop}
    next:
      spec: {mode: %s}
      arcs:
        - {step: big, when: "{{ workload.n > 10 }}"}
        - {step: even, when: "{{ workload.n %% 2 == 0 }}"}
        - {step: other}
  - step: big
    tool: {kind: noop}
  - step: even
    tool: {kind: noop}
  - step: other
    tool: {kind: noop}
"""


@pytest.mark.parametrize("n, mode, expected", [
    (12, "exclusive", ["start", "big"]),            # first match wins
    (4, "exclusive", ["start", "even"]),
    (3, "exclusive", ["start", "other"]),            # `when` absent = true
    (12, "inclusive", ["start", "big", "even", "other"]),  # all matches fan out
    (3, "inclusive", ["start", "other"]),
])
def test_exclusive_and_inclusive_routing(n, mode, expected):
    r = run(ROUTER % (n, mode))
    assert r.steps_started() == expected
    assert r.status == "COMPLETED"
    evaluated = [e for e in r.events if e["event_type"] == "next.evaluated"][0]
    assert [s["step"] for s in evaluated["payload"]["selected"]] == expected[1:]


DIAMOND = """
workload: {hot: %s}
workflow:
  - step: start
    tool: {kind: noop}
    next:
      arcs:
        - {step: left, when: "{{ workload.hot }}"}
        - {step: right}
  - step: left
    tool: {kind: python, code: x}
    next: {arcs: [{step: merge}]}
  - step: right
    tool: {kind: python, code: x}
    next: {arcs: [{step: merge}]}
  - step: merge
    tool: {kind: noop}
"""


@pytest.mark.parametrize("hot, branch", [("true", "left"), ("false", "right")])
def test_exclusive_diamond_does_not_wait_for_branch_not_taken(hot, branch):
    r = run(DIAMOND % hot)
    assert r.steps_started() == ["start", branch, "merge"]
    assert r.status == "COMPLETED"


FANOUT = """
workflow:
  - step: start
    tool: {kind: noop}
    next:
      spec: {mode: inclusive}
      arcs: [{step: normalize, args: {who: n}}, {step: enrich, args: {who: e, extra: 1}}]
  - step: normalize
    tool: {kind: python, code: x}
    next: {arcs: [{step: reduce}]}
  - step: enrich
    tool: [{name: one, kind: python, code: x}, {name: two, kind: python, code: y}]
    next: {arcs: [{step: reduce}]}
  - step: reduce
    tool: {kind: noop, result: "{{ [normalize.v, enrich.v] }}"}
"""


def test_inclusive_fanout_join_runs_once_after_all_branches_and_sees_their_results():
    r = run(FANOUT, tool=lambda c: ok({"v": f"{c.step}.{c.task}"}))
    assert r.steps_started().count("reduce") == 1
    order = [e["entity_id"] for e in r.events if e["event_type"] == "step.done"]
    assert order.index("reduce") > order.index("normalize")
    assert order.index("reduce") > order.index("enrich")
    assert r.state.step_results["reduce"] == ["normalize.normalize_task", "enrich.two"]
    assert r.status == "COMPLETED"


CYCLE = """
workflow:
  - step: init
    tool: {kind: noop}
    set: {ctx.page: 0}
    next: {arcs: [{step: fetch}]}
  - step: fetch
    tool: {kind: noop}
    set: {ctx.page: "{{ ctx.page + 1 }}"}
    next:
      arcs:
        - {step: fetch, when: "{{ ctx.page < 3 }}"}
        - {step: done}
  - step: done
    tool: {kind: noop}
"""


def test_guarded_cycle_runs_until_guard_fails_and_is_not_a_join():
    r = run(CYCLE)
    assert r.steps_started() == ["init", "fetch", "fetch", "fetch", "done"]
    assert r.state.ctx["page"] == 3
    assert r.state.steps["fetch"].runs == 3
    assert "fetch" not in r.state.graph.joins


def test_routing_cycle_without_exit_hits_the_step_run_limit():
    text = """
    executor: {spec: {max_step_runs: 20}}
    workflow:
      - step: spin
        tool: {kind: noop}
        next: {arcs: [{step: spin}]}
    """
    r = run(text)
    assert r.status == "FAILED"
    assert "max_step_runs" in r.state.result["reason"]


ADMIT = """
workflow:
  - step: start
    tool: {kind: noop}
    next: {arcs: [{step: gated}]}
  - step: gated
    spec:
      policy:
        admit:
          rules:
            - when: "{{ ctx.approved }}"
              then: {allow: true}
    tool: {kind: noop}
"""


def test_admission_deny_keeps_token_pending_and_reports_it():
    r = run(ADMIT)
    assert r.steps_started() == ["start"]
    assert r.status == "COMPLETED"
    assert r.state.result["denied_steps"] == ["gated"]
    admit = [e for e in r.events if e["event_type"] == "policy.admit.evaluated"]
    assert admit and admit[0]["payload"]["allowed"] is False


def test_denied_token_is_admitted_after_a_ctx_patch_approval_gate():
    text = ADMIT.replace("tool: {kind: noop}\n    next", "tool: {kind: python, code: x}\n    next", 1)
    r = run(text, hold=lambda c: True)
    feed(r, PatchCtx(now=NOW, patch={"approved": True}))
    # still waiting for start's task; the gate opens once it routes
    from .harness import finished
    feed(r, finished(r.held[0], ok(1)))
    assert r.steps_started() == ["start", "gated"]
    assert r.status == "COMPLETED" and r.state.result["denied_steps"] == []


def test_admission_else_rule_and_explicit_deny():
    text = """
    workload: {enabled: false}
    workflow:
      - step: start
        spec:
          policy:
            admit:
              rules:
                - when: "{{ workload.enabled }}"
                  then: {allow: true}
                - else:
                    then: {allow: false}
        tool: {kind: noop}
    """
    r = run(text)
    assert r.steps_started() == []
    assert r.status == "COMPLETED"
    assert run(text, payload={"enabled": True}).steps_started() == ["start"]


FINAL = """
executor: {spec: {final_step: wrap}}
workflow:
  - step: a
    tool: {kind: python, code: x}
    next: {spec: {mode: inclusive}, arcs: [{step: b}, {step: c}]}
  - step: b
    tool: {kind: python, code: x}
    next: {arcs: [{step: wrap}]}
  - step: c
    tool: {kind: python, code: x}
    next: {arcs: [{step: wrap}]}
  - step: wrap
    tool: {kind: noop, result: "{{ args }}"}
"""


def test_final_step_runs_once_after_quiescence_with_a_summary():
    r = run(FINAL)
    assert r.steps_started() == ["a", "b", "c", "wrap"]
    summary = r.state.step_results["wrap"]
    assert summary["total_steps"] == 3 and summary["failed_steps_count"] == 0
    assert summary["execution_id"] == "ex"
    assert r.status == "COMPLETED"


def test_failing_final_step_fails_the_execution():
    r = run(FINAL.replace('{kind: noop, result: "{{ args }}"}', "{kind: python, code: boom}"),
            tool=lambda c: err() if c.step == "wrap" else ok())
    assert r.status == "FAILED"


def test_final_step_runs_after_failures_too():
    r = run(FINAL, tool=lambda c: err() if c.step == "b" else ok())
    assert r.steps_started()[-1] == "wrap"
    assert r.state.step_results["wrap"]["failed_steps_count"] == 1
    assert r.status == "FAILED"


NO_MATCH = """
executor: {spec: {no_next_is_error: %s}}
workflow:
  - step: a
    tool: {kind: noop}
    next: {arcs: [{step: b, when: "{{ ctx.route == 'b' }}"}]}
  - step: b
    tool: {kind: noop}
"""


@pytest.mark.parametrize("flag, status", [("false", "COMPLETED"), ("true", "FAILED")])
def test_no_match_terminates_the_branch_unless_no_next_is_error(flag, status):
    r = run(NO_MATCH % flag)
    assert r.steps_started() == ["a"]
    assert r.status == status


HANDLED = """
workflow:
  - step: fetch
    tool: {kind: python, code: x}
    next:
      arcs:
        %s
  - step: recover
    tool: {kind: noop}
  - step: end
    tool: {kind: noop}
"""


@pytest.mark.parametrize("arcs, started, status, step_state", [
    # an arc whose `when` matched the failure handles it
    ("- {step: recover, when: \"{{ event.name == 'step.failed' }}\"}\n        - {step: end}",
     ["fetch", "recover"], "COMPLETED", "HANDLED"),
    # the legacy alias call.error is the same event
    ("- {step: recover, when: \"{{ event.name == 'call.error' }}\"}\n        - {step: end}",
     ["fetch", "recover"], "COMPLETED", "HANDLED"),
    # an unconditional arc continues the flow but does not handle the failure
    ("- {step: end}", ["fetch", "end"], "FAILED", "FAILED"),
    # no arc for failures at all
    ("- {step: end, when: \"{{ event.name == 'step.done' }}\"}", ["fetch"], "FAILED", "FAILED"),
])
def test_handled_vs_unhandled_failures(arcs, started, status, step_state):
    r = run(HANDLED % arcs, tool=lambda c: err())
    assert r.steps_started() == started
    assert r.status == status
    failed = r.state.result["failed_steps"]
    assert failed[0]["step"] == "fetch"
    assert failed[0]["handled"] is (step_state == "HANDLED")
    assert r.state.result["failed_steps_count"] == 1
    # docs/status.md: only a failure without handled recovery is a FAILED step
    assert r.state.steps["fetch"].status == step_state
    (event,) = [e for e in r.events if e["event_type"] == "step.failed"]
    assert event["status"] == "error"
    assert event["payload"]["handled"] is (step_state == "HANDLED")
    assert event["payload"]["meta"]["step_status"] == step_state


def test_a_step_end_matches_each_guard_once(monkeypatch):
    """The step's status (handled?) and its routing read one match of the guards: each guard
    is evaluated once, plus once more as a success for an arc that fired on a failure."""
    calls: list[str] = []
    real = routing.evaluate_condition

    def counting(when, *args, **kwargs):
        calls.append(when)
        return real(when, *args, **kwargs)

    monkeypatch.setattr(routing, "evaluate_condition", counting)
    guard = "{{ event.name == 'step.failed' }}"
    r = run(HANDLED % f"- {{step: recover, when: \"{guard}\"}}\n        - {{step: end}}", tool=lambda c: err())
    assert r.state.steps["fetch"].status == "HANDLED" and r.status == "COMPLETED"
    assert calls.count(guard) == 2   # matched, then re-read as a success (failure-specific)


def test_payload_deep_merges_over_workload_and_workload_is_immutable():
    text = """
    workload: {db: {host: a, port: 1}, items: [1, 2]}
    workflow:
      - step: s
        tool: {kind: noop, result: "{{ workload }}"}
    """
    r = run(text, payload={"db": {"host": "b"}, "items": [9]})
    assert r.state.step_results["s"] == {"db": {"host": "b", "port": 1}, "items": [9]}


@pytest.mark.parametrize("expr, value", [
    ("{{ 1 + 1 }}", 2), ("{{ [1, 2] }}", [1, 2]), ("{{ true }}", True), ("{{ {'a': 1} }}", {"a": 1}),
    ("n={{ 1 + 1 }}", "n=2"), ("{{ workload.items }}", [1, 2]), ("{{ none }}", None),
    ("{{ missing }}", None), ("{{ 2.5 }}", 2.5),
])
def test_native_template_types(expr, value):
    text = f"""
    workload: {{items: [1, 2]}}
    workflow:
      - step: s
        tool: {{kind: noop, result: "{expr}"}}
    """
    assert run(text).state.step_results["s"] == value


def test_fail_fast_cancels_in_flight_branches_then_runs_final_step():
    text = """
    executor: {spec: {final_step: wrap, failure: {mode: fail_fast}}}
    workflow:
      - step: start
        tool: {kind: noop}
        next: {spec: {mode: inclusive}, arcs: [{step: slow}, {step: bad}]}
      - step: slow
        tool: {kind: python, code: x}
        next: {arcs: [{step: after}]}
      - step: bad
        tool: {kind: python, code: x}
      - step: after
        tool: {kind: noop}
      - step: wrap
        tool: {kind: noop, result: "{{ args.failed_steps_count }}"}
    """
    r = run(text, hold=lambda c: c.step == "slow", tool=lambda c: err())
    assert r.cancelled == [r.held[0].task_run_id]
    from .harness import finished
    feed(r, finished(r.held[0], err("cancelled", "task cancelled")))
    assert "after" not in r.steps_started()
    assert r.steps_started()[-1] == "wrap"
    assert r.status == "FAILED"
    assert r.state.steps["slow"].status == "CANCELLED"


def test_cancel_stops_everything_and_is_terminal_once():
    from noetl_temporal.engine.messages import Cancel
    r = run(LINEAR, hold=lambda c: True)
    feed(r, Cancel(now=NOW, reason="user"))
    assert r.status == "CANCELLED"
    assert r.cancelled == [r.held[0].task_run_id]
    assert r.types("execution.cancelled") == ["execution.cancelled"]
    assert r.state.terminal_event == "execution.cancelled"
    before = len(r.events)
    from .harness import finished
    feed(r, finished(r.held[0], ok()))
    assert len(r.events) == before  # nothing after terminal


def test_pause_holds_new_tokens_and_resume_continues():
    from noetl_temporal.engine.messages import Pause, Resume

    from .harness import finished
    r = run(LINEAR, hold=lambda c: True)
    feed(r, Pause(now=NOW, reason="maintenance"))
    feed(r, finished(r.held[0], ok()))
    assert r.steps_started() == ["a"]            # b is not admitted while paused
    assert r.status == "RUNNING" and r.state.paused
    assert "playbook.paused" in r.types()
    r.hold = lambda c: False
    feed(r, Resume(now=NOW))
    assert r.steps_started() == ["a", "b", "c"]
    assert r.status == "COMPLETED"


def test_step_done_on_last_visible_step_does_not_complete_while_work_remains():
    # docs/status.md negative case: a step finishing is never evidence of completion
    r = run(FANOUT, hold=lambda c: c.step == "enrich")
    assert any(e["event_type"] == "step.done" and e["entity_id"] == "normalize" for e in r.events)
    assert r.status == "RUNNING" and r.finish is None


def test_join_fed_by_another_join_runs_once():
    text = """
    workflow:
      - step: start
        tool: {kind: noop}
        next: {spec: {mode: inclusive}, arcs: [{step: fan}, {step: solo}]}
      - step: fan
        tool: {kind: noop}
        next: {arcs: [{step: left, when: "{{ false }}"}, {step: right}]}
      - step: left
        tool: {kind: python, code: x}
        next: {arcs: [{step: diamond}]}
      - step: right
        tool: {kind: python, code: x}
        next: {arcs: [{step: diamond}]}
      - step: diamond
        tool: {kind: noop}
        next: {arcs: [{step: join}]}
      - step: solo
        tool: {kind: python, code: x}
        next: {arcs: [{step: join}]}
      - step: join
        tool: {kind: noop}
    """
    r = run(text, hold=lambda c: c.step == "right")
    from .harness import finished
    assert "join" not in r.steps_started()
    feed(r, finished(r.held[0], ok()))
    assert r.steps_started().count("join") == 1
    assert r.status == "COMPLETED"


@pytest.mark.parametrize("on_deny, status, denied, discarded", [
    ("pending", "COMPLETED", ["gated"], []),   # reported, does not hold the execution open
    ("wait", "RUNNING", ["gated"], []),        # an approval gate: waits for a ctx patch
    ("discard", "COMPLETED", [], ["gated"]),   # dropped
])
def test_on_deny_modes(on_deny, status, denied, discarded):
    text = ADMIT.replace("        admit:\n", f"        admit:\n          on_deny: {on_deny}\n")
    r = run(text)
    assert r.status == status
    if status == "COMPLETED":
        assert r.state.result["denied_steps"] == denied
    if on_deny == "wait":
        feed(r, PatchCtx(now=NOW, patch={"approved": True}))
        assert r.steps_started() == ["start", "gated"] and r.status == "COMPLETED"
    if on_deny == "discard":
        from noetl_temporal.engine.machine import _summary
        assert _summary(r.state)["discarded_steps"] == discarded


def test_now_and_uuid_are_replay_safe():
    text = """
    workflow:
      - step: s
        tool: {kind: noop, result: "{{ now().year }}|{{ uuid() }}|{{ uuid() }}"}
    """
    first = run(text).state.step_results["s"]
    second = run(text).state.step_results["s"]
    year, u1, u2 = first.split("|")
    assert year == "2026" and u1 != u2 and first == second   # same inputs, same values
