"""How the workflow turns a failed activity into a TaskResult (no server needed): a timeout
is recognized by Temporal's exception type, not by a class name."""

from __future__ import annotations

from temporalio.exceptions import ActivityError, ApplicationError, CancelledError, RetryState, TimeoutType
from temporalio.exceptions import TimeoutError as TemporalTimeoutError

from noetl_temporal.workflow.activities import POLICY_RETRY
from noetl_temporal.workflow.task_runs import failed_activity


def _activity_failure(cause: BaseException) -> ActivityError:
    err = ActivityError("activity failed", scheduled_event_id=5, started_event_id=6, identity="w",
                        activity_type="noetl.run_task", activity_id="t1", retry_state=RetryState.TIMEOUT)
    err.__cause__ = cause
    return err


def _failed(cause: BaseException):
    return failed_activity(_activity_failure(cause))


class SlowTimeoutLookalike(ApplicationError):
    """Its name says timeout; it is not one."""


def test_a_temporal_timeout_is_a_timeout_outcome():
    result = _failed(TemporalTimeoutError("activity StartToClose timeout", type=TimeoutType.START_TO_CLOSE,
                                          last_heartbeat_details=[]))
    assert not result.decided
    assert result.outcome.to_dict() == {
        "status": "error", "result": None,
        "error": {"kind": "timeout", "retryable": False, "code": None, "message": "activity StartToClose timeout"},
        "meta": {}}


def test_a_name_with_timeout_in_it_is_not_a_timeout():
    result = _failed(SlowTimeoutLookalike("boom", type="ReadTimeout"))
    assert result.outcome.error_kind == "activity"
    assert result.outcome.error is not None and result.outcome.error.message == "ReadTimeout: boom"


def test_a_cancelled_activity_is_a_cancelled_outcome():
    result = _failed(CancelledError("cancelled"))
    assert (result.decided, result.outcome.error_kind) == (False, "cancelled")


def test_policy_retries_cut_short_by_temporal_end_with_the_last_attempts_error():
    attempts = [{"attempt": 2, "status": "error", "error": {"kind": "http", "retryable": True, "code": 503,
                                                             "message": "HTTP 503"},
                 "action": "retry", "rule_index": 1, "next_delay_s": 1.0}]
    result = _failed(ApplicationError("policy retry 2/5", attempts, type=POLICY_RETRY))
    assert (result.decided, result.exhausted, result.action, result.rule_index) == (True, True, "fail", 1)
    assert result.outcome.to_dict() == {"status": "error", "result": None, "error": attempts[0]["error"],
                                        "meta": {"attempt": 2}}
    assert [a.to_dict() for a in result.attempts] == attempts


def test_policy_retries_without_records_keep_their_error_without_a_code():
    result = _failed(ApplicationError("policy retry 1/5", type=POLICY_RETRY))
    assert result.outcome.to_dict()["error"] == {"kind": "retries_exhausted", "retryable": False,
                                                 "message": "policy retry 1/5"}
