"""What a workflow hands to its own worker's local activities never enters history, so the
claim check leaves it inline: nothing of it is left behind in the payload store.

Before, every batch of events on its way to the event store (500 events, ~250 KB) and
every large fast-path task went through the claim check, and each left a file in the
payload store that nothing ever read again or deleted."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from noetl_temporal.conversion.claimcheck import DEFAULT_THRESHOLD, default_payload_store
from noetl_temporal.store.event_store import open_event_store
from tests.support.history import claim_check_keys

pytestmark = pytest.mark.temporal


def _stored() -> set[str]:
    root = Path(default_payload_store())
    return {p.name for p in root.rglob("*") if p.is_file()} if root.exists() else set()


async def _referenced(temporal, execution_id: str) -> set[str]:
    """The payload-store keys this execution's history refers to."""
    history = await temporal.client.get_workflow_handle(execution_id).fetch_history()
    return claim_check_keys(json.loads(history.to_json()))


async def test_event_batches_leave_nothing_in_the_payload_store(run_yaml, temporal):
    before = _stored()
    report = await run_yaml("""
    workflow:
      - step: items
        loop: {in: "{{ range(400) | list }}", iterator: i}
        tool: {kind: noop, result: {i: "{{ i }}", pad: "some text that makes each event a little longer"}}
    """)
    assert report.state == "COMPLETED", report.error
    events = open_event_store().read(report.execution_id, limit=100_000)
    assert [e["seq"] for e in events] == list(range(1, report.events[-1]["seq"] + 1))  # all stored
    sizes = [len(str(e)) for e in events[:500]]
    assert sum(sizes) > DEFAULT_THRESHOLD  # a batch is over the claim-check threshold
    left = _stored() - before
    assert left <= await _referenced(temporal, report.execution_id), \
        f"{len(left)} payload(s) in the store that the history never refers to"


async def test_a_large_fast_path_task_leaves_nothing_in_the_payload_store(run_yaml, temporal):
    before = _stored()
    report = await run_yaml("""
    workflow:
      - step: big
        spec: {local: true}
        tool:
          kind: python
          input: {s: "{{ 'x' * 300000 }}"}
          code: "result = len(s)"
    """)
    assert report.state == "COMPLETED", report.error
    assert report.steps["big"]["result"] == 300_000
    left = _stored() - before
    assert left <= await _referenced(temporal, report.execution_id), \
        f"{len(left)} payload(s) in the store that the history never refers to"
    assert os.environ["NOETL_STORE"]  # the tests' own store (tests/conftest.py)
