"""The per-step controls a running execution offers now, for its page (docs/approvals.md,
"On the execution page"): the workflow's ``step_controls`` query, given what Temporal holds
(its pending activities, as the ``retry_step`` validator is given them), answers with the
validators' own rule (``engine/step_offers.py``).
"""

from __future__ import annotations

from typing import Any

from temporalio.client import Client

from .control import QUERY_TIMEOUT
from .step_retries import _pending

__all__ = ["offered_controls", "QUERY_NAME"]

#: the workflow query that answers (workflow/playbook_workflow.py)
QUERY_NAME = "step_controls"


async def offered_controls(client: Client, execution_id: str) -> list[dict[str, Any]] | None:
    """``[{step, iteration, paused, controls}]``; None when Temporal or no worker answered in
    time (a worker that predates the query too): the page then offers none."""
    try:
        pending = await _pending(client, execution_id)
        seen = {activity: held["seen"] for activity, held in pending.items()}
        offers = await client.get_workflow_handle(execution_id).query(QUERY_NAME, seen, rpc_timeout=QUERY_TIMEOUT)
    except Exception:   # no worker answered, or the run closed meanwhile: no controls, as for a finished run
        return None
    return list(offers) if isinstance(offers, list) else None
