"""What a status reads from Temporal without a worker (``client/liveness.py``) and the
records of attempts lost with their worker (``activities._with_lost``): pure parts, on
Temporal's own protobuf messages."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from google.protobuf.timestamp_pb2 import Timestamp
from temporalio.api.enums.v1 import PendingActivityState, PendingWorkflowTaskState
from temporalio.api.workflow.v1 import PendingActivityInfo, PendingWorkflowTaskInfo
from temporalio.api.workflowservice.v1 import DescribeWorkflowExecutionResponse

from noetl_temporal.client.liveness import STALLED_AFTER, _pending_task, _waiting_since
from noetl_temporal.engine.steps import step_of_run_id
from noetl_temporal.workflow.activities import LOST_KIND, _with_lost

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


def stamp(seconds_ago: float) -> Timestamp:
    out = Timestamp()
    out.FromDatetime(NOW - timedelta(seconds=seconds_ago))
    return out


def activity(state, seconds_ago: float, *, retry_due_ago: float | None = None, attempt: int = 1):
    info = PendingActivityInfo(activity_id="long_task:run:1:task:long_task_task:1", state=state,
                               scheduled_time=stamp(seconds_ago), attempt=attempt)
    if retry_due_ago is not None:
        info.next_attempt_schedule_time.CopyFrom(stamp(retry_due_ago))
    return info


def described(*activities, workflow_task_ago: float | None = None):
    raw = DescribeWorkflowExecutionResponse(pending_activities=list(activities))
    if workflow_task_ago is not None:
        raw.pending_workflow_task.CopyFrom(PendingWorkflowTaskInfo(
            state=PendingWorkflowTaskState.PENDING_WORKFLOW_TASK_STATE_SCHEDULED,
            scheduled_time=stamp(workflow_task_ago)))
    return raw


SCHEDULED = PendingActivityState.PENDING_ACTIVITY_STATE_SCHEDULED
STARTED = PendingActivityState.PENDING_ACTIVITY_STATE_STARTED
LATE = STALLED_AFTER.total_seconds() + 1


def test_work_waiting_longer_than_a_worker_takes_it_is_stalled_since_it_became_due():
    assert _waiting_since(described(activity(SCHEDULED, LATE)), NOW) == NOW - timedelta(seconds=LATE)
    assert _waiting_since(described(workflow_task_ago=LATE), NOW) == NOW - timedelta(seconds=LATE)


def test_running_work_fresh_work_and_a_retry_in_its_backoff_are_not_stalled():
    assert _waiting_since(described(activity(STARTED, 60)), NOW) is None
    assert _waiting_since(described(activity(SCHEDULED, 0.5)), NOW) is None
    # scheduled long ago, but its retry is due only in a moment: not waiting for a worker yet
    assert _waiting_since(described(activity(SCHEDULED, 60, retry_due_ago=-5, attempt=2)), NOW) is None
    assert _waiting_since(described(workflow_task_ago=0.2), NOW) is None


def test_a_pending_task_names_its_step_attempt_and_last_failure():
    info = activity(SCHEDULED, LATE, attempt=2)
    info.last_failure.message = "activity Heartbeat timeout"
    task = _pending_task(info)
    assert (task.step, task.attempt, task.started) == ("long_task", 2, False)
    assert task.line() == ("step long_task (long_task:run:1:task:long_task_task:1) attempt 2 waiting for a worker; "
                           "last failure: activity Heartbeat timeout")


def test_the_step_of_a_run_id():
    assert step_of_run_id("long_task:run:1:task:long_task_task:1") == "long_task"
    assert step_of_run_id("fan-out:run:2:iter:3:task:t:1") == "fan-out"
    assert step_of_run_id("long_task:run:4") == "long_task"
    assert step_of_run_id("noetl.persist") is None


def test_every_earlier_attempt_without_a_record_is_recorded_lost():
    assert _with_lost([], 1) == []
    lost = _with_lost([], 3)
    assert [(r["attempt"], r["status"], r["error"]["kind"], r["action"]) for r in lost] == \
        [(1, "error", LOST_KIND, "retry"), (2, "error", LOST_KIND, "retry")]
    retried = {"attempt": 2, "status": "error", "action": "retry"}   # a policy retry's own record
    assert [r["attempt"] for r in _with_lost([retried], 3)] == [1, 2]
    assert _with_lost([retried], 3)[1] is retried
