"""Large playbooks on the dev server: long inline chains and big loops never hold the
workflow thread long enough for Temporal's deadlock detector (2 s per activation)."""

from __future__ import annotations

import pytest

from noetl_temporal.dsl import load_playbook_text
from noetl_temporal.runner import run_with_client
from noetl_temporal.temporal.pacing import YIELD_ACTIVITY

pytestmark = pytest.mark.temporal


def chain_playbook(n: int) -> str:
    """``s0 -> s1 -> ... -> s<n-1>``, every step a noop (the shape issue 15 reported)."""
    lines = ["apiVersion: noetl.io/v2", "kind: Playbook", f"metadata: {{name: chain_{n}}}", "workflow:"]
    for i in range(n):
        nxt = f"\n    next: {{arcs: [{{step: s{i + 1}}}]}}" if i < n - 1 else ""
        lines.append(f"  - step: s{i}\n    tool: {{kind: noop, result: {i}}}{nxt}")
    return "\n".join(lines) + "\n"


async def _history_facts(client, workflow_id: str) -> dict[str, int]:
    facts = {"events": 0, "yields": 0, "task_failures": 0}
    async for event in client.get_workflow_handle(workflow_id).fetch_history_events():
        facts["events"] += 1
        if event.HasField("marker_recorded_event_attributes"):
            details = event.marker_recorded_event_attributes.details
            if "data" in details and YIELD_ACTIVITY.encode() in details["data"].payloads[0].data:
                facts["yields"] += 1
        if event.HasField("workflow_task_failed_event_attributes"):
            facts["task_failures"] += 1
    return facts


async def test_a_5000_step_noop_chain_completes_in_short_activations(temporal, task_queue):
    playbook = load_playbook_text(chain_playbook(5000), source="<chain>").playbook
    report = await run_with_client(temporal.client, playbook, task_queue=task_queue, execution_timeout_s=120)
    assert report.state == "COMPLETED", report.error
    assert len(report.steps) == 5000
    assert report.steps["s4999"]["result"] == 4999
    facts = await _history_facts(temporal.client, report.workflow_id)
    # No workflow task failed (a deadlock-detector hit fails the task and retries it).
    assert facts["task_failures"] == 0, facts
    # The work was split into several activations by the engine's budget.
    assert facts["yields"] >= 5, facts
