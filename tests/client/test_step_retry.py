"""Retry now, on the dev server through the CLI (as a subprocess): a step waiting out a
one-hour backoff retries within seconds of ``retry-now``; the control is refused, with the
reason, for a step that is not retrying, one the playbook lacks, and a finished execution
(docs/approvals.md, "Retrying a step now")."""

from __future__ import annotations

import asyncio
import contextlib
import json
import textwrap

import pytest
from temporalio.api.workflowservice.v1 import DescribeWorkflowExecutionRequest

from noetl_temporal.client.connect import start_execution
from noetl_temporal.client.observe import read_events
from noetl_temporal.dsl import load_playbook_text
from noetl_temporal.hosting.worker import build_worker
from tests.support.cli_process import cli

pytestmark = pytest.mark.temporal

# fetch fails once, then succeeds; its policy waits an hour between attempts. The execution
# may outlive the hour (Temporal gives up at once on a retry that would start after it).
BACKOFF = """
metadata: {name: backoff}
workflow:
  - step: start
    tool: {kind: noop}
    next: {arcs: [{step: fetch}]}
  - step: fetch
    tool:
      kind: shell
      cmd: "echo x >> {{ workload.mark }}; [ $(wc -l < {{ workload.mark }}) -ge 2 ] || exit 3"
      spec: {policy: {rules: [{when: "{{ output.status == 'error' }}", then: {do: retry, attempts: 3, delay: 3600}}]}}
    next: {arcs: [{step: load}]}
  - step: load
    tool: {kind: shell, cmd: "sleep {{ workload.nap }}"}
"""


def load(text: str):
    return load_playbook_text(textwrap.dedent(text), source="<test>").playbook


async def backing_off(client, execution_id: str) -> None:
    """Wait until Temporal holds the step's task in its backoff (attempt 2 scheduled)."""
    from temporalio.api.common.v1 import WorkflowExecution
    for _ in range(600):
        desc = await client.workflow_service.describe_workflow_execution(DescribeWorkflowExecutionRequest(
            namespace=client.namespace, execution=WorkflowExecution(workflow_id=execution_id)))
        if any(p.attempt == 2 for p in desc.pending_activities):
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the task never waited to retry")


async def test_a_step_in_a_one_hour_backoff_retries_now_from_the_cli(temporal, task_queue, tmp_path):
    mark = tmp_path / "attempts"
    async with build_worker(temporal.client, task_queue=task_queue):
        handle = await start_execution(temporal.client, load(BACKOFF), task_queue=task_queue,
                                       execution_timeout_s=7200, payload={"mark": str(mark), "nap": 30})
        try:
            await backing_off(temporal.client, handle.id)
            for step, reason in (("nope", "the playbook has no step 'nope'"),
                                 ("load", "step 'load' is not running, so it has no retry to change")):
                code, out, err = await cli("retry-now", handle.id, step, "--address", temporal.address)
                assert code == 2 and err.strip().startswith(f"error: {reason}"), err
            code, out, err = await cli("retry-now", handle.id, "fetch", "--reason", "the source is back",
                                       "--by", "oncall", "--address", temporal.address)
            assert code == 0, err
            assert json.loads(out)["attempt"] == 2
            for _ in range(600):   # not an hour: seconds
                if len(await read_events(temporal.client, handle.id, types=["step.started"])) == 3:
                    break
                await asyncio.sleep(0.05)
            assert mark.read_text().count("x") == 2
            events = await read_events(temporal.client, handle.id)
            assert ("step.done", "fetch") in [(e["event_type"], e["entity_id"]) for e in events]
            [now] = [e for e in events if e["event_type"] == "step.retry.now"]
            assert now["entity_id"] == "fetch" and now["payload"]["by"] == "oncall"
            assert now["payload"]["reason"] == "the source is back" and now["payload"]["at"]
            # load runs (sleep 30): its task is running, not waiting to retry
            code, out, err = await cli("retry-now", handle.id, "load", "--address", temporal.address)
            assert code == 2 and "step 'load' is not waiting to retry: its task is running (attempt 1)" in err, err
        finally:
            with contextlib.suppress(Exception):
                await handle.terminate("test over")
    code, out, err = await cli("retry-now", handle.id, "fetch", "--address", temporal.address)
    assert code == 1 and "is already" in err and "cannot retry step 'fetch' of it" in err, err
    history = await handle.fetch_history()
    assert any(e.HasField("workflow_execution_update_accepted_event_attributes") and b"oncall" in
               e.SerializeToString() for e in history.events)
