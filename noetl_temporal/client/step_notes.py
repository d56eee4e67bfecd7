"""For ``status``: the steps an operator skipped, with who and why (docs/approvals.md).

A skipped step ends SKIPPED (behaviour ``skipped-step-status``, ``engine/skips.py``); its
record says so with ``skipped: {by, reason}``. ``status`` keeps the minimal model for every
other execution: the list is added only when a step was skipped. Read cheaply: an open
execution's ``status`` query (no step results), a closed one's output (read once per run
and kept); a cancelled or terminated run has no output and is not asked (its ``events``
still say it: ``step.skipped``).
"""

from __future__ import annotations

from typing import Any

from temporalio.client import WorkflowExecutionStatus
from temporalio.service import RPCError

from ..engine.skips import skipped_steps as skipped_of
from ..errors import NotFound
from .close_status import WITH_OUTPUT
from .control import QUERY_TIMEOUT, describe, run_output

__all__ = ["skipped_steps"]


async def skipped_steps(client: Any, execution_id: str, *, ask_workflow: bool = True) -> dict[str, Any] | None:
    """``{"skipped_steps": {step: {by, reason}}}``, or None when no step was skipped or it
    cannot be told cheaply. ``ask_workflow=False``: no worker polls, so an open execution is
    not asked (the query would only wait out its timeout)."""
    try:
        info = await describe(client, execution_id)
    except (RPCError, NotFound):   # unknown to Temporal (its events may still be stored)
        return None
    if info.closed:
        if WorkflowExecutionStatus[info.temporal_status] not in WITH_OUTPUT:
            return None
        output = await run_output(client, execution_id, info.run_id)
        skipped = skipped_of(output.steps) if output is not None else {}
    elif not ask_workflow:
        return None
    else:
        try:
            live = await client.get_workflow_handle(execution_id).query("status", rpc_timeout=QUERY_TIMEOUT)
        except Exception:   # no worker answered in time: the status itself says so
            return None
        skipped = live.get("skipped_steps") or {} if isinstance(live, dict) else {}
    return {"skipped_steps": skipped} if skipped else None
