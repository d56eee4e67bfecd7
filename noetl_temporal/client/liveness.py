"""What Temporal itself knows about an open execution, read without a worker.

A status query needs a worker: with none alive it waits until its deadline. Before asking
one, a status reads what the server keeps on its own (``describe``: the pending activities,
children and workflow task; ``describe_task_queue``: the pollers), which answers at once:

* whether a worker is polling the execution's task queue, so no query is sent to nobody;
* whether the execution got past its start (an activity or a child was scheduled, the
  first workflow task completed, ``NoetlState`` says so), so it is never shown PENDING
  again once it was RUNNING;
* which step is running (a task's activity id is its task run id, ``<step>:run:<n>:...``)
  and each pending task's attempt and last failure.

Temporal keeps a poller listed for minutes after its worker died (it only records when a
poll arrived; a live idle worker polls again about once a minute). So a listed poller is
not proof of a live worker: when work a polling worker would take at once (a scheduled
activity or workflow task) has waited for more than :data:`STALLED_AFTER`, only pollers
that polled again since it became due count (a live worker busy with older work keeps
polling; a dead one polled last before it died). A worker whose every slot is taken does
not poll either, and counts as not polling until it frees one.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from temporalio.api.enums.v1 import EventType, PendingActivityState, PendingWorkflowTaskState, TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client, WorkflowExecutionDescription
from temporalio.service import RPCError

from ..engine.status_layers import ExecutionStatus
from ..engine.steps import step_of_run_id
from ..workflow.search_attributes import NOETL_STATE

__all__ = ["Liveness", "PendingTask", "read_liveness", "got_past_start", "POLLER_WINDOW", "STALLED_AFTER"]

#: a poll older than this is a worker gone: Temporal's own window (a query to a task queue
#: with no poll in the last minute fails at once), plus a margin for the poll's round trip
POLLER_WINDOW = timedelta(seconds=70)
#: a live worker with a free slot takes scheduled work within milliseconds
STALLED_AFTER = timedelta(seconds=2)
RPC_TIMEOUT = timedelta(seconds=2)

_QUEUE_TYPES = (TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW, TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY)


@dataclass(frozen=True)
class PendingTask:
    """A task's activity that Temporal holds: scheduled (waiting for a worker) or started."""

    step: str | None
    activity_id: str
    attempt: int
    started: bool
    last_failure: str | None

    def line(self) -> str:
        failure = f"; last failure: {self.last_failure}" if self.last_failure else ""
        where = "running" if self.started else "waiting for a worker"
        return f"step {self.step or '?'} ({self.activity_id}) attempt {self.attempt} {where}{failure}"


@dataclass(frozen=True)
class Liveness:
    """An open execution as Temporal sees it; ``workers_polling`` 0: nothing will answer a query."""

    task_queue: str
    workers_polling: int
    pending: tuple[PendingTask, ...]

    @property
    def current_step(self) -> str | None:
        """A step with a task in flight (the engine's choice too: a running step first)."""
        return next((t.step for t in self.pending if t.step), None)


async def read_liveness(client: Client, description: WorkflowExecutionDescription,
                        now: datetime | None = None) -> Liveness:
    """:class:`Liveness` of the open execution ``description`` describes (two cheap RPCs)."""
    now = now or datetime.now(UTC)
    raw = description.raw_description
    pending = tuple(_pending_task(p) for p in raw.pending_activities)
    pollers = await _pollers(client, description.task_queue or "", now, _waiting_since(raw, now))
    return Liveness(task_queue=description.task_queue or "", workers_polling=pollers, pending=pending)


async def got_past_start(client: Client, description: WorkflowExecutionDescription) -> bool:
    """Whether the open execution got past its start (then it is RUNNING, never PENDING):
    asked only when no worker answered, the history read last, when nothing else shows it."""
    raw = description.raw_description
    return bool(raw.pending_activities) or bool(raw.pending_children) or _marked_running(description) or \
        await _first_task_completed(client, description)


def _pending_task(info: Any) -> PendingTask:
    message = info.last_failure.message if info.HasField("last_failure") else ""
    return PendingTask(step=step_of_run_id(info.activity_id), activity_id=info.activity_id, attempt=info.attempt,
                       started=info.state == PendingActivityState.PENDING_ACTIVITY_STATE_STARTED,
                       last_failure=message or None)


def _waiting_since(raw: Any, now: datetime) -> datetime | None:
    """Since when the oldest work a polling worker would have taken (a scheduled activity or
    workflow task) has been waiting, if longer than :data:`STALLED_AFTER`."""
    due: list[datetime] = []
    for info in raw.pending_activities:
        if info.state == PendingActivityState.PENDING_ACTIVITY_STATE_SCHEDULED:
            # a retry waits its backoff first: it is due at next_attempt_schedule_time
            due.append(_time(info.next_attempt_schedule_time if info.HasField("next_attempt_schedule_time")
                             else info.scheduled_time))
    task = raw.pending_workflow_task
    if raw.HasField("pending_workflow_task") and \
            task.state == PendingWorkflowTaskState.PENDING_WORKFLOW_TASK_STATE_SCHEDULED:
        due.append(_time(task.scheduled_time))
    stalled = [when for when in due if now - when > STALLED_AFTER]
    return min(stalled) if stalled else None


def _time(stamp: Any) -> datetime:
    when: datetime = stamp.ToDatetime(tzinfo=UTC)
    return when


async def _pollers(client: Client, task_queue: str, now: datetime, waiting_since: datetime | None) -> int:
    """Workers that polled the queue (workflow or activity tasks) within :data:`POLLER_WINDOW`
    and, when work waits, after it became due: a worker that polled since then is alive
    (busy with older work); one whose last poll came before is gone (or full)."""
    oldest = now - POLLER_WINDOW if waiting_since is None else max(now - POLLER_WINDOW, waiting_since)

    async def one(kind: TaskQueueType.ValueType) -> set[str]:
        request = DescribeTaskQueueRequest(namespace=client.namespace, task_queue=TaskQueue(name=task_queue),
                                           task_queue_type=kind)
        response = await client.workflow_service.describe_task_queue(request, timeout=RPC_TIMEOUT)
        return {p.identity for p in response.pollers if _time(p.last_access_time) > oldest}

    found = await asyncio.gather(*(one(kind) for kind in _QUEUE_TYPES))
    return len(set().union(*found))


def _marked_running(description: WorkflowExecutionDescription) -> bool:
    """The ``NoetlState`` search attribute the workflow sets at its start (where registered)."""
    state = description.typed_search_attributes.get(NOETL_STATE)
    return state is not None and state != ExecutionStatus.PENDING.value


async def _first_task_completed(client: Client, description: WorkflowExecutionDescription) -> bool:
    """The workflow ran its first workflow task (the engine's start), or continued a run that
    had: nothing else shows a run past its start when no activity is pending (a timer, an
    approval gate). Reads the history's first page only."""
    handle = client.get_workflow_handle(description.id, run_id=description.run_id)
    try:
        async for event in handle.fetch_history_events(page_size=8, rpc_timeout=RPC_TIMEOUT):
            if event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED and \
                    event.workflow_execution_started_event_attributes.continued_execution_run_id:
                return True
            if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
                return True
            if event.event_id >= 8:
                break
    except RPCError:
        return False
    return False
