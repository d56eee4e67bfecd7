"""A user's own activities and workflow, called by ``user_calls.yaml`` and ``user_cancel.yaml``
(``kind: activity``, ``kind: workflow``) while ``record`` records its history, on the queue ``USER_QUEUE``.
Replaying needs none of them: their results are in the history."""

from __future__ import annotations

import asyncio
from typing import Any

from temporalio import activity, workflow
from temporalio.exceptions import ApplicationError

__all__ = ["USER_QUEUE", "ACTIVITIES", "WORKFLOWS"]

USER_QUEUE = "history-user-code"


@activity.defn(name="history_charge")
async def charge(amount: int, currency: str) -> dict[str, Any]:
    return {"charged": amount, "currency": currency}


@activity.defn(name="history_refuse")
async def refuse(order: dict[str, Any]) -> None:
    raise ApplicationError(f"order {order['id']} refused", type="Bad", non_retryable=True)


@activity.defn(name="history_wait")
async def wait() -> None:
    """Heartbeats until cancelled (``user_cancel.yaml``)."""
    while True:
        activity.heartbeat()
        await asyncio.sleep(0.2)


@workflow.defn(name="HistoryGreet", sandboxed=False)
class Greet:
    @workflow.run
    async def run(self, request: dict[str, Any]) -> str:
        return f"hello {request['who']}"


ACTIVITIES = [charge, refuse, wait]
WORKFLOWS = [Greet]
