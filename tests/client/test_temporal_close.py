"""Temporal's own status tells the truth: a playbook that ends FAILED closes its workflow
Failed, CANCELLED closes Canceled, COMPLETED Completed; read with the Temporal client and
the ``temporal`` CLI (what an operator already uses), and every reader of ours still gets
the playbook's output. The Temporal UI's view of a failed run is in test_temporal_ui.py.
"""

from __future__ import annotations

import asyncio
import json
import textwrap
import time

import pytest
from temporalio.client import WorkflowExecutionStatus, WorkflowFailureError
from temporalio.exceptions import ApplicationError

from noetl_temporal.client.connect import start_execution
from noetl_temporal.client.control import cancel, describe, list_executions, read_detail
from noetl_temporal.client.devserver import temporal_cli_path
from noetl_temporal.client.end_to_end import run_with_client
from noetl_temporal.client.observe import read_status
from noetl_temporal.conversion.playbook_result import PLAYBOOK_FAILED, workflow_output
from noetl_temporal.dsl import load_playbook_text
from noetl_temporal.hosting.worker import build_worker
from noetl_temporal.store.event_store import open_event_store
from tests.cli.test_cli_control import cli

pytestmark = pytest.mark.temporal

FAILING = """
metadata: {name: close-fails}
workflow:
  - step: boom
    tool: {kind: python, code: "raise ValueError('the input was bad')"}
"""
SLEEPING = """
metadata: {name: close-cancelled}
workflow:
  - step: nap
    tool: {kind: shell, cmd: "sleep 30"}
"""
COMPLETING = """
metadata: {name: close-completes}
workflow:
  - step: fine
    tool: {kind: noop, result: 7}
"""


async def _start(temporal, task_queue, text):
    playbook = load_playbook_text(textwrap.dedent(text)).playbook
    return await start_execution(temporal.client, playbook, task_queue=task_queue, execution_timeout_s=60)


async def _temporal_list(address: str, query: str) -> list[str]:
    """Workflow ids ``temporal workflow list --query`` prints (the operator's view)."""
    proc = await asyncio.create_subprocess_exec(
        temporal_cli_path(), "workflow", "list", "--address", address, "--query", query, "--output", "json",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), timeout=60)
    assert proc.returncode == 0, err.decode()
    text = out.decode().strip()
    rows = json.loads(text) if text.startswith("[") else [json.loads(line) for line in text.splitlines() if line]
    return [row["execution"]["workflowId"] for row in rows]


async def _listed(address: str, query: str, ids: set[str]) -> set[str]:
    """The ids of ``ids`` the query lists, once visibility has caught up (it is eventual)."""
    deadline = time.monotonic() + 20
    while True:
        found = set(await _temporal_list(address, query)) & ids
        if found or time.monotonic() > deadline:
            return found
        await asyncio.sleep(0.3)


async def test_each_playbook_state_is_its_temporal_close_status(temporal, task_queue):
    async with build_worker(temporal.client, task_queue=task_queue):
        failing = await _start(temporal, task_queue, FAILING)
        completing = await _start(temporal, task_queue, COMPLETING)
        sleeping = await _start(temporal, task_queue, SLEEPING)
        for _ in range(200):   # cancel once the shell task runs
            if (await sleeping.query("status"))["current_step"] == "nap":
                break
            await asyncio.sleep(0.05)
        assert (await cancel(temporal.client, sleeping.id, reason="operator stop"))["state"] == "CANCELLED"

        # the raw Temporal result: a non-retryable PlaybookFailed carrying the output
        with pytest.raises(WorkflowFailureError) as failure:
            await failing.result()
        cause = failure.value.cause
        assert isinstance(cause, ApplicationError) and cause.type == PLAYBOOK_FAILED and cause.non_retryable
        assert "the input was bad" in cause.message
        carried = cause.details[0]
        assert carried["state"] == "FAILED" and carried["steps"]["boom"]["status"] == "FAILED"
        assert carried["result"]["failed_steps"] and "the input was bad" in json.dumps(carried["result"])
        assert (await workflow_output(failing)) == carried
        assert (await workflow_output(completing))["state"] == "COMPLETED"

        expected = {failing.id: (WorkflowExecutionStatus.FAILED, "FAILED"),
                    sleeping.id: (WorkflowExecutionStatus.CANCELED, "CANCELLED"),
                    completing.id: (WorkflowExecutionStatus.COMPLETED, "COMPLETED")}
        for execution_id, (temporal_status, state) in expected.items():
            assert (await temporal.client.get_workflow_handle(execution_id).describe()).status == temporal_status
            info = await describe(temporal.client, execution_id)            # the API's reader
            assert (info.state, info.temporal_status) == (state, temporal_status.name)
            status = await read_status(temporal.client, execution_id, open_event_store())   # `status`
            assert (status["state"], status["completion_inferred"]) == (state, False), status
            code, out, err = await cli("status", execution_id, "--address", temporal.address, "--json")
            assert json.loads(out)["state"] == state, err

        # without the event store, the state comes from the failure's details: recorded, not inferred
        status = await read_status(temporal.client, failing.id)
        assert (status["state"], status["completion_inferred"], status["terminal_event"]) == (
            "FAILED", False, "playbook.finished"), status
        _, detail = await read_detail(temporal.client, failing.id)          # the API's detail
        assert detail["state"] == "FAILED" and detail["steps"]["boom"]["status"] == "FAILED"

    ids = set(expected)
    for query, listed in (("ExecutionStatus='Failed'", {failing.id}), ("ExecutionStatus='Canceled'", {sleeping.id}),
                          ("ExecutionStatus='Completed'", {completing.id})):
        assert await _listed(temporal.address, query, ids) == listed, query
    failed, _ = await list_executions(temporal.client, state="FAILED", page_size=100)
    assert failing.id in {item["execution_id"] for item in failed}


async def test_run_reports_a_failed_playbook_with_its_steps(temporal, task_queue):
    playbook = load_playbook_text(textwrap.dedent(FAILING)).playbook
    report = await run_with_client(temporal.client, playbook, task_queue=task_queue, execution_timeout_s=60)
    assert report.state == "FAILED"
    assert report.steps["boom"]["status"] == "FAILED" and report.error and "the input was bad" in report.error
    desc = await temporal.client.get_workflow_handle(report.execution_id).describe()
    assert desc.status == WorkflowExecutionStatus.FAILED
