"""NoETL 5.x ``spec.policy.on_unmatched: continue | fail``: what a task does when no rule
of its policy matches (docs/semantics.md, "Task policies")."""

from __future__ import annotations

import pytest

from noetl_temporal.dsl import validate_text
from noetl_temporal.engine.policy_evaluation import evaluate_policy

from .harness import err, ok, run

NEVER = [{"when": "{{ false }}", "then": {"do": "retry"}}]


@pytest.mark.parametrize("rules, status, on_unmatched, action", [
    (NEVER, "error", None, "continue"),       # the seed's rule: rules but no match continue
    (NEVER, "error", "fail", "fail"),
    (NEVER, "ok", "fail", "fail"),            # strict: an outcome no rule accepts fails
    (NEVER, "ok", "continue", "continue"),
    ([], "error", None, "fail"),              # no rules: ok continues, error fails ...
    ([], "error", "continue", "continue"),    # ... unless the policy says otherwise
    ([], "ok", "fail", "fail"),
    ([{"when": "{{ true }}", "then": {"do": "break"}}], "ok", "fail", "break"),  # a match wins
])
def test_on_unmatched_decides_only_when_no_rule_matches(rules, status, on_unmatched, action):
    assert evaluate_policy(rules, status, {}, on_unmatched).action == action


def pipeline(policy: str, first: str = "python") -> str:
    setting = "code: x" if first == "python" else "result: x"
    return f"""
    workflow:
      - step: s
        tool:
          - name: a
            kind: {first}
            {setting}
            spec: {{policy: {policy}}}
          - {{name: b, kind: python, code: x}}
    """


def test_fail_stops_the_pipeline_on_an_unmatched_error():
    r = run(pipeline('{rules: [{when: "{{ output.error.kind == \'timeout\' }}", then: {do: retry}}], '
                     'on_unmatched: fail}'), tool=lambda c: err() if c.task == "a" else ok())
    assert [c.task for c in r.ran] == ["a"] and r.status == "FAILED"


def test_continue_without_rules_goes_on_after_an_error():
    r = run(pipeline("{on_unmatched: continue}"), tool=lambda c: err() if c.task == "a" else ok())
    assert [c.task for c in r.ran] == ["a", "b"] and r.status == "COMPLETED"


def test_an_inline_task_follows_it_too():
    # noop runs in the engine, which evaluates the policy itself
    r = run(pipeline('{rules: [{when: "{{ false }}", then: {do: continue}}], on_unmatched: fail}', first="noop"))
    assert [c.task for c in r.ran] == [] and r.status == "FAILED"


def test_the_dsl_accepts_the_two_values_and_locates_another():
    head = "apiVersion: noetl.io/v2\nkind: Playbook\nmetadata: {name: t}\n"
    for value in ("continue", "fail"):
        text = head + f"workflow:\n  - step: s\n    tool: {{kind: noop, spec: {{policy: {{on_unmatched: {value}}}}}}}\n"
        assert validate_text(text, "pb.yaml") == []
    text = head + "workflow:\n  - step: s\n    tool: {kind: noop, spec: {policy: {on_unmatched: skip}}}\n"
    (diag,) = validate_text(text, "pb.yaml")
    assert (diag.code, diag.path, diag.line) == ("NTL901", "workflow[0].tool.spec.policy.on_unmatched", 6)
    assert "'continue' or 'fail'" in diag.message


def test_an_inline_tasks_retry_rule_fails_it_with_the_engines_whole_scope():
    # the engine decides for a noop through the one decision (policy_evaluation.decide): its
    # guard reads `_prev` and a step's result from the engine's scope, and a matching retry
    # is a fail (it would give the same outcome again), the rule still matched
    # (docs/semantics.md, "Task policies")
    text = """
    workflow:
      - step: s
        tool:
          - {name: a, kind: noop, result: 7}
          - name: b
            kind: noop
            result: x
            spec:
              policy:
                rules:
                  - when: "{{ _prev == 7 and _task == 'b' and _attempt == 1 and output.data == 'x' }}"
                    then: {do: retry, attempts: 3, set_ctx: {seen: true}}
          - {name: c, kind: python, code: x}
    """
    r = run(text)
    (evaluated,) = [e for e in r.events if e["event_type"] == "policy.task.evaluated"]
    assert evaluated["payload"] == {"matched_rule_index": 0, "action": {"do": "fail"}}
    assert [c.task for c in r.ran] == [] and r.status == "FAILED"
    assert r.state.ctx.get("seen") is True
