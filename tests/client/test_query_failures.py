"""A query that fails (a worker that cannot rebuild the workflow in time answers
``WorkflowQueryFailedError``) never fails a healthy run nor a reader: ``run`` reports the
run's own outcome, ``events --follow`` and ``status`` fall back to the event store.

The workflow here is a stand-in registered under the playbook workflow's name whose queries
always fail; the runner, the readers, the server and the worker are the real ones.
"""

from __future__ import annotations

import asyncio
import textwrap
from datetime import timedelta
from typing import Any

import pytest
from temporalio import workflow
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from noetl_temporal.client.end_to_end import run_with_client
from noetl_temporal.client.observe import follow_events, read_status
from noetl_temporal.dsl import load_playbook_text
from noetl_temporal.engine.envelopes import RunOutput
from noetl_temporal.engine.status_layers import ExecutionStatus
from noetl_temporal.store.event_store import open_event_store
from noetl_temporal.workflow.types import WORKFLOW_NAME

pytestmark = pytest.mark.temporal

PLAYBOOK = textwrap.dedent("""
    workflow:
      - step: only
        tool: {kind: noop, result: 1}
""")


@workflow.defn(name=WORKFLOW_NAME)
class Unqueryable:
    """Runs a moment, then completes; every query fails as a deadlocked rebuild does."""

    @workflow.run
    async def run(self, inp: dict[str, Any]) -> dict[str, Any]:
        await workflow.sleep(timedelta(seconds=1.5))
        return RunOutput(execution_id=inp["execution_id"], state=ExecutionStatus.COMPLETED,
                         steps={"only": {"status": "COMPLETED", "runs": 1, "result": 1}}).to_dict()

    @workflow.query(name="events")
    def events(self, after_seq: int = 0, limit: int = 1000) -> list[dict[str, Any]]:
        raise RuntimeError("[TMPRL1101] Potential deadlock detected (stand-in)")

    @workflow.query(name="status")
    def status(self) -> dict[str, Any]:
        raise RuntimeError("[TMPRL1101] Potential deadlock detected (stand-in)")


def _worker(client, task_queue: str) -> Worker:
    return Worker(client, task_queue=task_queue, workflows=[Unqueryable],
                  workflow_runner=UnsandboxedWorkflowRunner())


async def test_failing_progress_queries_do_not_fail_the_run(temporal, task_queue):
    playbook = load_playbook_text(PLAYBOOK, source="<test>").playbook
    seen: list[dict[str, Any]] = []
    async with _worker(temporal.client, task_queue):
        report = await asyncio.wait_for(run_with_client(
            temporal.client, playbook, task_queue=task_queue, worker=False, on_event=seen.append,
            execution_timeout_s=60), timeout=60)
    assert report.state == "COMPLETED" and report.steps["only"]["result"] == 1
    assert seen == [] and report.events == []


async def test_readers_fall_back_to_the_store_when_queries_fail(temporal, task_queue):
    playbook = load_playbook_text(PLAYBOOK, source="<test>").playbook
    store = open_event_store()
    events: list[dict[str, Any]] = []
    async with _worker(temporal.client, task_queue):
        from noetl_temporal.client.connect import start_execution
        handle = await start_execution(temporal.client, playbook, task_queue=task_queue, execution_timeout_s=60)
        store.write([{"execution_id": handle.id, "event_id": f"{handle.id}-1", "seq": 1,
                      "event_type": "playbook.started", "entity_id": handle.id, "status": "in_progress",
                      "timestamp": "2026-01-01T00:00:00Z"}])
        status = await read_status(temporal.client, handle.id, store)
        assert status["state"] == "RUNNING"   # from the stored lifecycle, the live query failed

        async def follow() -> None:
            async for event in follow_events(temporal.client, handle.id, store=store, poll_s=0.1):
                events.append(event)

        await asyncio.wait_for(follow(), timeout=30)
    assert [e["seq"] for e in events] == [1]
    store.close()
