"""One mapping from Temporal's close status to the execution state, for every reader.

``client/connect.py`` (control, API listings: the workflow's output state) and
``client/observe.py`` (status reads: the terminal lifecycle event) must give the same answer,
and docs/status.md must print it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.client import WorkflowExecutionStatus

from noetl_temporal.client import control
from noetl_temporal.client.close_status import OPEN_STATUSES, TERMINAL_STATES, execution_state
from noetl_temporal.client.connect import normalized_state
from noetl_temporal.client.observe import state_from_close
from noetl_temporal.engine.status_layers import ExecutionStatus

DOCS = (Path(__file__).resolve().parents[2] / "docs" / "status.md").read_text()
CLOSED = [s for s in WorkflowExecutionStatus if s not in OPEN_STATUSES]


def _terminal(state: str | None) -> dict | None:
    """The terminal lifecycle event that records ``state``."""
    if state is None:
        return None
    if state == "CANCELLED":
        return {"event_type": "execution.cancelled", "status": "error", "payload": {}}
    return {"event_type": "playbook.finished", "status": "success" if state == "COMPLETED" else "error",
            "payload": {"meta": {"status": state}}}


@pytest.mark.parametrize("status", CLOSED, ids=lambda s: s.name)
@pytest.mark.parametrize("recorded", [None, "COMPLETED", "FAILED", "CANCELLED"])
def test_client_and_observe_agree(status, recorded):
    assert normalized_state(status, recorded) == state_from_close(status, _terminal(recorded))[0]


def test_a_completed_workflow_without_a_recorded_state_is_an_inferred_failure():
    completed = WorkflowExecutionStatus.COMPLETED
    assert execution_state(completed) == ("FAILED", True)
    assert normalized_state(completed) == "FAILED"
    assert state_from_close(completed, None) == ("FAILED", True)
    assert state_from_close(completed, _terminal("COMPLETED")) == ("COMPLETED", False)


def test_open_and_unknown_workflows():
    for status in OPEN_STATUSES:
        assert execution_state(status) == ("RUNNING", False)
        assert normalized_state(status, None) == "RUNNING"
    assert execution_state(None) == ("PENDING", False)


def test_one_set_of_terminal_states():
    assert control.TERMINAL_STATES is TERMINAL_STATES
    assert set(TERMINAL_STATES) == {ExecutionStatus.COMPLETED, ExecutionStatus.FAILED, ExecutionStatus.CANCELLED}
    assert "FAILED" in TERMINAL_STATES and "RUNNING" not in TERMINAL_STATES  # plain strings compare
    for status in CLOSED:
        assert execution_state(status)[0] in TERMINAL_STATES


def test_docs_print_every_inferred_state():
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in DOCS.splitlines()
            if line.startswith("| ") and line.rstrip().endswith("| true |")]
    documented = {row[0]: row[2].split()[0] for row in rows}
    for status in CLOSED:
        assert documented.get(status.name) == execution_state(status)[0], status.name
