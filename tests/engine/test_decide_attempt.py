"""``decide_attempt``: the task policy's decision on one attempt, built in one place for the
task activity, ``noetl-temporal test``'s driver and the engine tests' harness."""

from __future__ import annotations

from noetl_temporal.engine.envelopes import ErrorInfo, Outcome
from noetl_temporal.engine.messages import RunTask
from noetl_temporal.engine.policy_evaluation import decide_attempt, evaluate_policy

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
