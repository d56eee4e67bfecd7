"""Ending a workflow activation on purpose.

The engine caps the inline work of one input (``engine/budget.py``) and asks, with a
``Yield`` command, to go on later. Nothing in a workflow ends an activation except
waiting on something outside it, so the shell waits on this local activity, which
returns at once: one marker in history and a few milliseconds per ``Yield``, and each
activation stays far below the deadlock detector's 2 s.
"""

from __future__ import annotations

from temporalio import activity

__all__ = ["YIELD_ACTIVITY", "yield_activation"]

YIELD_ACTIVITY = "noetl.yield"


@activity.defn(name=YIELD_ACTIVITY)
async def yield_activation() -> None:
    return None
