"""Sub-playbooks run as child workflows: status and result inheritance, cancel cascade."""

from __future__ import annotations

import asyncio
import textwrap

import pytest
from temporalio.client import WorkflowExecutionStatus

from noetl_temporal.client.connect import start_execution
from noetl_temporal.client.end_to_end import run_with_client
from noetl_temporal.client.observe import read_events
from noetl_temporal.dsl import load_playbook
from noetl_temporal.hosting.worker import build_worker
from noetl_temporal.store.event_store import open_event_store
from noetl_temporal.workflow.naming import child_execution_id

pytestmark = pytest.mark.temporal

CHILD = """
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: child}
workload: {n: 1, fail: false}
workflow:
  - step: double
    tool:
      kind: python
      input: {n: "{{ workload.n }}", fail: "{{ workload.fail }}"}
      code: |
        if fail:
            raise RuntimeError("child was told to fail")
        result = {"doubled": n * 2}
    next: {arcs: [{step: finalize}]}
  - step: finalize
    tool: {kind: noop, result: {score: "{{ double.doubled + 1 }}"}}
"""

PARENT = """
apiVersion: noetl.io/v2
kind: Playbook
metadata: {name: parent}
workload: {items: [1, 2, 3], fail: false}
workflow:
  - step: each
    loop: {in: "{{ workload.items }}", iterator: n}
    tool:
      - name: score
        kind: playbook
        path: child.yaml
        return_step: finalize
        input: {n: "{{ n }}", fail: "{{ workload.fail and n == 2 }}"}
      - name: keep
        kind: noop
        result: "{{ score.score }}"
    next:
      arcs:
        - {step: recovered, when: "{{ event.status == 'error' }}", args: {why: "{{ event.error.message }}"}}
        - {step: done}
  - step: done
    tool: {kind: noop, result: "{{ each.results }}"}
  - step: recovered
    tool: {kind: noop, result: "{{ args.why }}"}
"""


def write(tmp_path, parent=PARENT, child=CHILD):
    (tmp_path / "child.yaml").write_text(textwrap.dedent(child))
    (tmp_path / "parent.yaml").write_text(textwrap.dedent(parent))
    return load_playbook(tmp_path / "parent.yaml").playbook, str(tmp_path / "parent.yaml")


async def test_parent_waits_for_child_and_inherits_its_result(temporal, task_queue, tmp_path):
    playbook, source = write(tmp_path)
    report = await run_with_client(temporal.client, playbook, task_queue=task_queue, source=source,
                                   execution_timeout_s=60)
    assert report.state == "COMPLETED", report.error
    assert report.steps["done"]["result"] == [3, 5, 7]
    child_id = child_execution_id(report.execution_id, "each:run:1:iter:0:task:score:1", "child")
    child = temporal.client.get_workflow_handle(child_id)
    assert (await child.describe()).status == WorkflowExecutionStatus.COMPLETED
    child_events = await read_events(temporal.client, child_id, store=open_event_store(), limit=500)
    assert child_events and all(e["parent_execution_id"] == report.execution_id for e in child_events)


async def test_failed_child_fails_the_parent_task_and_routes_step_failed(temporal, task_queue, tmp_path):
    playbook, source = write(tmp_path)
    report = await run_with_client(temporal.client, playbook, task_queue=task_queue, source=source,
                                   payload={"fail": True}, execution_timeout_s=60)
    assert report.state == "COMPLETED"                     # handled by the error arc
    assert report.steps["recovered"]["result"] == "1 of 3 iterations failed"
    failed = [e for e in report.events if e["event_type"] == "task.failed" and e["entity_id"] == "score"]
    assert len(failed) == 1 and "ended FAILED" in failed[0]["payload"]["outcome"]["error"]["message"]
    # the child closed Temporal Failed; its summary still reached the parent's task
    outcome = failed[0]["payload"]["outcome"]
    child = temporal.client.get_workflow_handle(outcome["meta"]["child_execution_id"])
    assert (await child.describe()).status == WorkflowExecutionStatus.FAILED
    assert outcome["meta"]["child_state"] == "FAILED"


async def test_unhandled_child_failure_fails_the_parent(temporal, task_queue, tmp_path):
    parent = PARENT.replace(
        "        - {step: recovered, when: \"{{ event.status == 'error' }}\", args: {why: \"{{ event.error.message }}\"}}\n",
        "")
    assert parent != PARENT
    playbook, source = write(tmp_path, parent=parent)
    report = await run_with_client(temporal.client, playbook, task_queue=task_queue, source=source,
                                   payload={"fail": True}, execution_timeout_s=60)
    assert report.state == "FAILED"
    assert report.summary["failed_steps"][0]["step"] == "each"


async def test_cancelling_the_parent_cancels_the_child(temporal, task_queue, tmp_path):
    child = CHILD.replace('raise RuntimeError("child was told to fail")', "import time; time.sleep(60)")
    playbook, source = write(tmp_path, child=child)
    async with build_worker(temporal.client, task_queue=task_queue):
        handle = await start_execution(temporal.client, playbook, task_queue=task_queue, source=source,
                                       payload={"fail": True, "items": [2]}, execution_timeout_s=60)
        child_id = child_execution_id(handle.id, "each:run:1:iter:0:task:score:1", "child")
        for _ in range(200):
            try:
                events = await temporal.client.get_workflow_handle(child_id).query("events", args=[0, 100])
                if any(e["event_type"] == "task.started" for e in events):
                    break
            except Exception:
                pass
            await asyncio.sleep(0.05)
        await handle.signal("cancel", "stop the family")
        await handle.cancel()
        for _ in range(200):
            child_status = (await temporal.client.get_workflow_handle(child_id).describe()).status
            if child_status != WorkflowExecutionStatus.RUNNING:
                break
            await asyncio.sleep(0.05)
        assert child_status == WorkflowExecutionStatus.CANCELED
        child_events = await temporal.client.get_workflow_handle(child_id).query("events", args=[0, 500])
        assert "execution.cancelled" in [e["event_type"] for e in child_events]
        assert (await handle.describe()).status == WorkflowExecutionStatus.CANCELED


async def test_recursion_depth_is_capped_with_a_clear_error(temporal, task_queue, tmp_path):
    me = """
    apiVersion: noetl.io/v2
    kind: Playbook
    metadata: {name: me}
    workflow:
      - step: again
        tool: {kind: playbook, path: parent.yaml}
    """
    (tmp_path / "parent.yaml").write_text(textwrap.dedent(me))
    playbook = load_playbook(tmp_path / "parent.yaml").playbook
    report = await run_with_client(temporal.client, playbook, task_queue=task_queue,
                                   source=str(tmp_path / "parent.yaml"), execution_timeout_s=120)
    assert report.state == "FAILED"
    assert "nesting deeper than 16" in report.error or "nesting deeper than 16" in str(report.summary)


async def test_missing_child_is_a_clear_task_error(run_yaml):
    report = await run_yaml("""
    workflow:
      - step: s
        tool: {kind: playbook, path: does/not/exist}
    """)
    assert report.state == "FAILED"
    message = report.summary["failed_steps"][0]["message"]
    # an inline parent has no file to resolve a relative path against: the catalog only
    assert message.startswith("s.tool.s_task.path: sub-playbook 'does/not/exist' not found"), message
    assert "has no file location" in message and "no catalog entry 'does/not/exist'" in message, message


async def test_cancel_without_cascade_leaves_the_child_running(temporal, task_queue, tmp_path):
    from noetl_temporal.client.control import cancel

    child = CHILD.replace('raise RuntimeError("child was told to fail")', "import time; time.sleep(3)")
    playbook, source = write(tmp_path, child=child)
    async with build_worker(temporal.client, task_queue=task_queue):
        handle = await start_execution(temporal.client, playbook, task_queue=task_queue, source=source,
                                       payload={"fail": True, "items": [2]}, execution_timeout_s=60)
        child_id = child_execution_id(handle.id, "each:run:1:iter:0:task:score:1", "child")
        for _ in range(200):
            try:
                await temporal.client.get_workflow_handle(child_id).describe()
                break
            except Exception:
                await asyncio.sleep(0.05)
        result = await cancel(temporal.client, handle.id, reason="parent only", cascade=False)
        assert result["state"] == "CANCELLED"
        child_handle = temporal.client.get_workflow_handle(child_id)
        output = await asyncio.wait_for(child_handle.result(), timeout=30)
        assert output["state"] == "COMPLETED"      # the child finished on its own
