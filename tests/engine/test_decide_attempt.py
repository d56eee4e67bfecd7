"""``decide``: the task policy's decision on one attempt, built in one place for the task
activity, ``noetl-temporal test``'s driver and the engine tests' harness (``decide_attempt``,
from a ``RunTask``) and for the tasks the engine decides on itself (a ``PolicyInput``)."""

from __future__ import annotations

from noetl_temporal.engine.context import Scope
from noetl_temporal.engine.envelopes import ErrorInfo, Outcome
from noetl_temporal.engine.messages import RunTask
from noetl_temporal.engine.policy_evaluation import PolicyInput, decide, decide_attempt, evaluate_policy

RETRY = {"when": "{{ outcome.status == 'error' }}",
         "then": {"do": "retry", "attempts": 3, "delay": 2, "backoff": "exponential"}}


def command(rules: list | None = None, **kwargs) -> RunTask:
    return RunTask(task_run_id="s:run:1:task:t:1", execution_id="ex", step="s", step_run_id="s:run:1",
                   task="t", kind="python", config={}, rules=rules or [], **kwargs)


def failed(retry_after: float | None = None) -> Outcome:
    return Outcome.failed(ErrorInfo(kind="http", message="busy", retry_after=retry_after))


def test_without_rules_the_status_decides_and_nothing_follows() -> None:
    ok, error = decide_attempt(command(), Outcome.ok(1), 1), decide_attempt(command(), failed(), 1)
    assert (ok.action, error.action) == ("continue", "fail")
    assert not ok.following.retry and not error.following.retry
    # the usual task: the shared decision evaluate_policy gives, no copy
    assert ok is evaluate_policy([], "ok", {})


def test_a_retry_rule_says_when_the_next_attempt_runs_and_when_they_ran_out() -> None:
    cmd = command([RETRY])
    first, second, last = (decide_attempt(cmd, failed(), n) for n in (1, 2, 3))
    assert (first.action, first.rule_index) == ("retry", 0)
    assert (first.following.retry, first.following.delay, first.following.allowed) == (True, 2.0, 3)
    assert second.following.delay == 4.0
    assert not last.following.retry and last.following.exhausted


def test_a_servers_retry_after_longer_than_the_backoff_wins() -> None:
    assert decide_attempt(command([RETRY]), failed(retry_after=30), 1).following.delay == 30.0


def test_guards_read_the_outcome_the_attempt_the_task_and_the_engines_names() -> None:
    rule = {"when": "{{ output.data.n == limit and _attempt == 2 and _task == 't' }}", "then": {"do": "break"}}
    cmd = command([rule], policy_context={"limit": 5})
    assert decide_attempt(cmd, Outcome.ok({"n": 5}), 2).action == "break"
    assert decide_attempt(cmd, Outcome.ok({"n": 5}), 1).action == "continue"   # no rule matched
    assert decide_attempt(cmd, Outcome.ok({"n": 4}), 2).action == "continue"


def test_a_task_that_cannot_run_again_fails_where_its_policy_says_retry() -> None:
    # inline tasks (``noop``) give the same outcome every time: the retry rule fails them,
    # still the matching rule (its ``then`` patches apply), and no attempt follows
    policy = PolicyInput("t", [RETRY], {}, can_retry=False)
    decision = decide(policy, failed(), 1)
    assert (decision.rule_index, decision.action, decision.following.retry) == (0, "fail", False)
    assert decide(PolicyInput("t", [], {}, "retry", can_retry=False), Outcome.ok(1), 1).action == "fail"
    assert decide(PolicyInput("t", [RETRY], {}), failed(), 1).following.retry   # a RunTask's can


def test_the_engines_whole_scope_is_read_as_it_is_with_the_outcome_on_top() -> None:
    rule = {"when": "{{ _prev.n == output.data.n and _attempt == 1 }}", "then": {"do": "break"}}
    names = Scope({"_prev": {"n": 5}, "output": "stale", "_attempt": 9}, ())
    assert decide(PolicyInput("t", [rule], names, can_retry=False), Outcome.ok({"n": 5}), 1).action == "break"
