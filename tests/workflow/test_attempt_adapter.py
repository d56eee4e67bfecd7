"""The task activity's own part over the Temporal-free attempt: an outcome too large for
history where the worker's converter has no claim check (the SDK's default converter, real
encoding), and that the attempt decides on what the activity will report."""

from __future__ import annotations

from temporalio.converter import DataConverter

from noetl_temporal.attempt import run_attempt
from noetl_temporal.engine.envelopes import Outcome
from noetl_temporal.engine.messages import RunTask
from noetl_temporal.tools import ToolCall
from noetl_temporal.workflow.activities import _fitting_history

BIG = 3 * 1024 * 1024   # over Temporal's 2 MB payload limit


def command(**kwargs) -> RunTask:
    return RunTask(task_run_id="s:run:1:task:t:1", execution_id="ex", step="s", step_run_id="s:run:1",
                   task="t", kind="python", **kwargs)


def call_of(cmd: RunTask, attempt: int = 1) -> ToolCall:
    return ToolCall(execution_id=cmd.execution_id, step=cmd.step, task=cmd.task, attempt=attempt,
                    task_run_id=cmd.task_run_id, result_spec=cmd.result_spec)


async def test_an_outcome_over_the_payload_limit_becomes_the_playbooks_error() -> None:
    cmd = command(config={})
    small = Outcome.ok("fits")
    assert await _fitting_history(small, DataConverter.default, cmd, call_of(cmd)) is small
    fitted = await _fitting_history(Outcome.ok("x" * BIG), DataConverter.default, cmd, call_of(cmd))
    assert fitted.status == "error" and fitted.error is not None
    assert (fitted.error.kind, fitted.error.retryable) == ("result_too_large", False)
    assert "task 't' of step 's'" in fitted.error.message and "claim check" in fitted.error.message


async def test_the_policy_decides_on_the_outcome_the_activity_reports() -> None:
    rule = {"when": "{{ outcome.error.kind == 'result_too_large' }}", "then": {"do": "break"}}
    cmd = command(config={"code": f"def main():\n    return 'x' * {BIG}\n", "in_worker": True},
                  rules=[rule], result_spec={"inline_max_bytes": 2 * BIG})

    async def fit(outcome: Outcome) -> Outcome:
        return await _fitting_history(outcome, DataConverter.default, cmd, call)

    call = call_of(cmd, attempt=2)
    outcome, decision = await run_attempt(cmd, call, fit)
    assert outcome.error is not None and outcome.error.kind == "result_too_large"
    assert outcome.meta["attempt"] == 2
    assert (decision.action, decision.rule_index) == ("break", 0)
    outcome, decision = await run_attempt(cmd, call_of(cmd))   # no check (a claim-check worker)
    assert outcome.status == "ok" and decision.action == "continue"
