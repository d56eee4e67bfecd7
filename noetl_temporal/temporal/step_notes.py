"""For ``status``: the steps an operator skipped, with who and why (docs/approvals.md).

A skipped step ends SKIPPED (behaviour ``skipped-step-status``, ``engine/skips.py``); its
record in the execution's detail says so with ``skipped: {by, reason}``. ``status`` keeps the
minimal model for every other execution: the list is added only when a step was skipped.
"""

from __future__ import annotations

from typing import Any

from temporalio.client import Client
from temporalio.service import RPCError

from ..engine.status_layers import StepStatus
from ..errors import NotFound
from .control import read_detail

__all__ = ["skipped_steps"]


async def skipped_steps(client: Client, execution_id: str, *, ask_workflow: bool = True) -> dict[str, Any] | None:
    """``{"skipped_steps": {step: {by, reason}}}``, or None when no step was skipped (or the
    execution is unknown to Temporal). ``ask_workflow=False``: no worker polls, so an open
    execution's steps are not asked for (the query would only wait out its timeout)."""
    try:
        _, detail = await read_detail(client, execution_id, ask_workflow=ask_workflow)
    except (RPCError, NotFound):   # its events may still be stored: nothing to add
        return None
    steps: dict[str, Any] = detail["steps"] if isinstance(detail.get("steps"), dict) else {}
    skipped = {name: record.get("skipped") or {} for name, record in steps.items()
               if isinstance(record, dict) and record.get("status") == StepStatus.SKIPPED.value}
    return {"skipped_steps": skipped} if skipped else None
