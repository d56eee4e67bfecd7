"""Task pipelines (continue/jump/break/fail, set_*), and loops."""

from __future__ import annotations

import pytest

from noetl_temporal.engine.envelopes import Outcome, TaskResult
from noetl_temporal.engine.messages import TaskFinished
from noetl_temporal.engine.policy_evaluation import evaluate_policy, max_policy_attempts, retry_delay

from .harness import NOW, err, feed, ok, run

PIPE = """
workflow:
  - step: s
    tool:
      - name: first
        kind: python
        code: x
        spec:
          policy:
            rules:
              - when: "{{ output.status == 'error' }}"
                then: {do: %s}
              - else:
                  then: {do: continue, set_ctx: {seen: "{{ output.data }}"}}
      - name: second
        kind: noop
        result: "{{ _prev }}+{{ first }}"
"""


@pytest.mark.parametrize("first_outcome, action, status, second_ran", [
    (ok("r1"), "fail", "FAILED", False),     # ok -> else: continue
    (err(), "fail", "FAILED", False),        # error -> fail: pipeline ends failed
    (err(), "continue", "COMPLETED", True),  # error -> continue: next task runs
    (err(), "break", "COMPLETED", False),    # error -> break: step done, nothing else
])
def test_pipeline_actions(first_outcome, action, status, second_ran):
    r = run(PIPE % action, tool=lambda c: first_outcome)
    if first_outcome["status"] == "ok":
        status, second_ran = "COMPLETED", True
    assert r.status == status
    tasks = [e["entity_id"] for e in r.events if e["event_type"] == "task.started"]
    assert ("second" in tasks) == second_ran


def test_prev_and_task_labels_and_set_ctx_in_pipeline():
    r = run(PIPE % "fail", tool=lambda c: ok("r1"))
    assert r.state.ctx["seen"] == "r1"
    assert r.state.step_results["s"] == "r1+r1"


def test_no_policy_means_ok_continue_error_fail():
    text = """
    workflow:
      - step: s
        tool:
          - {name: a, kind: python, code: x}
          - {name: b, kind: python, code: x}
    """
    r = run(text, tool=lambda c: err() if c.task == "a" else ok())
    assert [c.task for c in r.ran] == ["a"]
    assert r.status == "FAILED"


def test_policy_without_match_and_without_else_continues():
    text = """
    workflow:
      - step: s
        tool:
          - name: a
            kind: python
            code: x
            spec: {policy: {rules: [{when: "{{ false }}", then: {do: fail}}]}}
          - {name: b, kind: python, code: x}
    """
    r = run(text, tool=lambda c: err() if c.task == "a" else ok())
    assert [c.task for c in r.ran] == ["a", "b"]
    assert r.status == "COMPLETED"


PAGINATE = """
workflow:
  - step: pages
    tool:
      - name: fetch
        kind: http
        url: "http://x/?page={{ ctx.page | default(1) }}"
      - name: store
        kind: noop
        spec:
          policy:
            rules:
              - when: "{{ fetch.has_more }}"
                then: {do: jump, to: fetch, set_ctx: {page: "{{ (ctx.page | default(1)) + 1 }}"}}
              - else:
                  then: {do: break}
"""


def test_jump_and_break_pagination():
    pages = {"http://x/?page=1": True, "http://x/?page=2": True, "http://x/?page=3": False}
    r = run(PAGINATE, tool=lambda c: ok({"has_more": pages[c.config["url"]]}))
    assert [c.config["url"][-1] for c in r.ran] == ["1", "2", "3"]
    assert r.status == "COMPLETED"
    ids = [c.task_run_id for c in r.ran]
    assert len(set(ids)) == 3  # each invocation is its own activity id


def test_jump_cycle_is_capped():
    text = PAGINATE.replace("workflow:", "executor: {spec: {max_jumps: 5}}\nworkflow:")
    r = run(text, tool=lambda c: ok({"has_more": True}))
    assert r.status == "FAILED"
    assert "max_jumps" in r.state.result["reason"]


def test_retry_exhausted_fails_the_step_and_routes_step_failed():
    text = """
    workflow:
      - step: s
        tool:
          kind: http
          url: http://x
          spec: {policy: {rules: [{when: "{{ output.status == 'error' }}", then: {do: retry, attempts: 3}}]}}
        next:
          arcs: [{step: handler, when: "{{ event.name == 'step.failed' }}"}]
      - step: handler
        tool: {kind: noop}
    """
    r = run(text, tool=lambda c: err("server_error", "503"))
    assert r.steps_started() == ["s", "handler"]
    assert r.status == "COMPLETED"
    assert r.ran[0].max_attempts == 3


@pytest.mark.parametrize("then, attempt, delay", [
    ({"delay": 2}, 3, 2.0),
    ({"delay": 2, "backoff": "linear"}, 3, 6.0),
    ({"delay": 2, "backoff": "exponential"}, 1, 2.0),
    ({"delay": 2, "backoff": "exponential"}, 4, 16.0),
    ({"delay": 2, "backoff": "exponential", "max_delay": 5}, 4, 5.0),
    ({}, 2, 0.0),
])
def test_retry_delay_table(then, attempt, delay):
    assert retry_delay(then, attempt) == delay


@pytest.mark.parametrize("rules, status, index, action", [
    ([], "ok", None, "continue"),
    ([], "error", None, "fail"),
    ([{"when": "{{ output.http.status == 429 }}", "then": {"do": "retry"}},
      {"when": "{{ output.http.status == 401 }}", "then": {"do": "fail"}},
      {"when": "{{ output.http.status == 404 }}", "then": {"do": "jump", "to": "other"}}], "error", 1, "fail"),
    ([{"when": "{{ output.missing.deep > 1 }}", "then": {"do": "fail"}},
      {"when": None, "then": {"do": "break"}}], "ok", 1, "break"),
])
def test_policy_table(rules, status, index, action):
    ctx = {"output": {"status": status, "http": {"status": 401}}}
    d = evaluate_policy(rules, status, ctx)
    assert (d.rule_index, d.action) == (index, action)


def test_max_policy_attempts_is_the_largest_retry_rule():
    rules = [{"then": {"do": "retry", "attempts": 10}}, {"then": {"do": "retry", "attempts": 2}},
             {"then": {"do": "fail"}}]
    assert max_policy_attempts(rules) == 10
    assert max_policy_attempts([]) == 1


LOOP = """
workload: {items: %s}
workflow:
  - step: each
    loop:
      in: "{{ workload.items }}"
      iterator: it
      spec: {mode: %s, max_in_flight: 2}
    tool:
      - name: work
        kind: python
        code: x
        input: {v: "{{ it }}", i: "{{ iter.index }}", same: "{{ iter.it }}"}
    next:
      arcs: [{step: after, when: "{{ event.name == 'loop.done' }}"}]
  - step: after
    tool: {kind: noop, result: "{{ each.results }}"}
"""


def test_sequential_loop_keeps_order_and_collects_results():
    r = run(LOOP % ("[a, b, c]", "sequential"), tool=lambda c: ok(c.config["input"]["v"].upper()))
    assert [c.config["input"] for c in r.ran] == [{"v": "a", "i": 0, "same": "a"},
                                                   {"v": "b", "i": 1, "same": "b"},
                                                   {"v": "c", "i": 2, "same": "c"}]
    assert r.state.step_results["after"] == ["A", "B", "C"]
    types = r.types("loop")
    assert types[0] == "loop.started" and types[-1] == "loop.done"
    assert types.count("loop.iteration.done") == 3
    assert r.steps_started() == ["each", "after"]   # arcs fire on loop.done only


def test_parallel_loop_never_exceeds_max_in_flight():
    r = run(LOOP % ("[1, 2, 3, 4, 5]", "parallel"), hold=lambda c: True)
    assert len(r.held) == 2
    from .harness import feed, finished
    peak = 2
    while r.held:
        cmd = r.held.pop(0)
        feed(r, finished(cmd, ok(cmd.iteration)))
        in_flight = len(r.state.pipelines)
        peak = max(peak, in_flight)
    assert peak <= 2
    assert r.state.step_results["after"] == [0, 1, 2, 3, 4]   # item order, not finish order


def test_empty_loop_completes_at_once():
    r = run(LOOP % ("[]", "sequential"))
    assert r.ran == []
    assert r.types("loop") == ["loop.started", "loop.done"]
    assert r.state.step_results["after"] == []
    assert r.status == "COMPLETED"


def test_loop_in_not_a_list_is_a_step_error_with_location():
    r = run(LOOP % ("5", "sequential"))
    assert r.status == "FAILED"
    assert "each.loop.in" in r.state.result["reason"] and "expected a list" in r.state.result["reason"]


def test_failed_iteration_fails_the_loop_step_after_all_iterations():
    r = run(LOOP % ("[1, 2, 3]", "sequential"), tool=lambda c: err() if c.iteration == 1 else ok(1))
    assert len(r.ran) == 3
    assert r.types("loop.iteration.failed") == ["loop.iteration.failed"]
    assert r.status == "FAILED"


def test_loop_of_pipelines_with_set_iter_isolated_per_iteration():
    text = """
    workload: {items: [1, 2]}
    workflow:
      - step: each
        loop: {in: "{{ workload.items }}", iterator: n}
        tool:
          - name: a
            kind: noop
            result: "{{ n * 10 }}"
            spec: {policy: {rules: [{else: {then: {do: continue, set_iter: {tag: "t{{ n }}"}}}}]}}
          - name: b
            kind: noop
            result: "{{ iter.tag }}/{{ a }}/{{ iter.seen | default('fresh') }}"
            set: {iter.seen: yes}
    """
    r = run(text)
    assert r.state.step_results["each"]["results"] == ["t1/10/fresh", "t2/20/fresh"]


def test_a_reported_outcome_stays_the_typed_object_to_the_end_of_its_step():
    """The pipeline keeps the Outcome the shell reported (no JSON copy beside it); the step
    ends with its last task's result."""
    two = """
    workflow:
      - step: s
        tool:
          - {name: first, kind: python, code: x}
          - {name: second, kind: python, code: y}
    """
    reported = Outcome(status="ok", result={"n": 1}, meta={"attempt": 1}, extra={"http": {"status": 200}})
    r = run(two, hold=lambda c: True)
    (first,) = r.held
    feed(r, TaskFinished(task_run_id=first.task_run_id, now=NOW, result=TaskResult(outcome=reported, action="continue")))
    (run_,) = r.state.step_runs.values()
    assert run_.main.last_outcome is reported
    second = r.held[-1]
    assert second.task == "second"
    feed(r, TaskFinished(task_run_id=second.task_run_id, now=NOW,
                         result=TaskResult(outcome=Outcome.ok([2], attempt=1), action="continue")))
    assert r.status == "COMPLETED" and r.state.steps["s"].result == [2]
