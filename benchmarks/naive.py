"""A naive hand-written Temporal port of a playbook: one activity per step, in a loop.

This is what a team would write without noetl-temporal: each step becomes an activity
call with a fresh HTTP client, no inline steps, no connection reuse.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from temporalio import activity, workflow

with workflow.unsafe.imports_passed_through():
    import httpx


@activity.defn(name="naive.http_get")
async def http_get(url: str) -> dict:
    async with httpx.AsyncClient() as client:
        response = await client.get(url)
        return {"status": response.status_code, "data": response.json()}


@activity.defn(name="naive.noop")
async def noop(step: int) -> int:
    return step


@workflow.defn(name="NaiveChain")
class NaiveChain:
    @workflow.run
    async def run(self, spec: dict) -> int:
        timeout = timedelta(seconds=30)
        if spec["kind"] == "http":
            for _ in range(spec["n"]):
                await workflow.execute_activity("naive.http_get", spec["url"], start_to_close_timeout=timeout)
        elif spec["kind"] == "noop":
            for i in range(spec["n"]):
                await workflow.execute_activity("naive.noop", i, start_to_close_timeout=timeout)
        else:  # parallel fan-out, bounded like the playbook's max_in_flight
            sem = asyncio.Semaphore(spec["max_in_flight"])

            async def one() -> None:
                async with sem:
                    await workflow.execute_activity("naive.http_get", spec["url"], start_to_close_timeout=timeout)

            await asyncio.gather(*(one() for _ in range(spec["n"])))
        return spec["n"]
