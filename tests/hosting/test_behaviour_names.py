"""An execution started by a newer client lists a behaviour this worker does not know: the
worker refuses it (the workflow task fails and is retried) instead of running the old
behaviour where a newer worker's history would hold the new one (engine/behaviours.py)."""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta

from temporalio.api.enums.v1 import EventType

from noetl_temporal.engine import behaviours
from noetl_temporal.hosting.lifecycle import hosted_worker
from noetl_temporal.workflow.types import WORKFLOW_NAME, RunInput

PLAYBOOK = {"metadata": {"name": "future"}, "workflow": [{"step": "start", "tool": [
    {"kind": "noop", "name": "t", "config": {}}]}]}


def test_unknown_lists_only_names_this_code_does_not_know():
    assert behaviours.unknown(None) == []
    assert behaviours.unknown(list(behaviours.CURRENT)) == []
    assert behaviours.unknown(["zz-later", *behaviours.CURRENT, "aa-later"]) == ["aa-later", "zz-later"]
    assert set(behaviours.CURRENT) <= behaviours.KNOWN


async def test_a_worker_refuses_an_execution_with_a_behaviour_it_does_not_know(temporal, task_queue):
    execution_id = f"future-{uuid.uuid4().hex[:8]}"
    inp = RunInput(execution_id=execution_id, playbook=PLAYBOOK, behaviours=[*behaviours.CURRENT, "from-the-future"])
    async with hosted_worker(temporal.client, task_queue=task_queue, owns_tools=False):
        handle = await temporal.client.start_workflow(WORKFLOW_NAME, inp, id=execution_id, task_queue=task_queue,
                                                      execution_timeout=timedelta(seconds=60))
        try:
            failure = None
            for _ in range(100):
                history = await handle.fetch_history()
                failed = [e for e in history.events if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED]
                if failed:
                    failure = failed[0].workflow_task_failed_event_attributes.failure.message
                    break
                await asyncio.sleep(0.1)
            assert failure is not None and "from-the-future" in failure and "upgrade the worker" in failure
            assert (await handle.describe()).status.name == "RUNNING"  # not failed: waiting for a newer worker
        finally:
            await handle.terminate("test over")
