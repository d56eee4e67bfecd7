"""The other side: what an expert writes by hand with the Temporal Python SDK.

One activity per body (the same source text the playbook side runs, see ``bodies``),
workflows that call them the idiomatic way: ``execute_activity`` in sequence,
``asyncio.gather`` for fan-out, an ``asyncio.Semaphore`` for a bounded parallel loop,
``execute_local_activity`` where the playbook's fast path is compared, and a
``RetryPolicy`` with ``ApplicationError(next_retry_delay=...)`` for retries.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from temporalio import activity, workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from . import bodies

__all__ = ["WORKFLOWS", "ACTIVITIES"]

TIMEOUT = timedelta(seconds=60)
RETRY_DELAY = timedelta(seconds=1)

_STEP = bodies.compile_body(bodies.STEP)
_JOIN = bodies.compile_body(bodies.JOIN)
_PRODUCE = bodies.compile_body(bodies.PRODUCE)
_CONSUME = bodies.compile_body(bodies.CONSUME)
_FLAKY = bodies.compile_body(bodies.FLAKY)


@activity.defn(name="bench.step")
async def step(params: dict) -> dict:
    return _STEP(**params)


@activity.defn(name="bench.join")
async def join(params: dict) -> dict:
    return _JOIN(**params)


@activity.defn(name="bench.produce")
async def produce(params: dict) -> dict:
    return _PRODUCE(**params)


@activity.defn(name="bench.consume")
async def consume(params: dict) -> dict:
    return _CONSUME(**params)


@activity.defn(name="bench.flaky")
async def flaky(params: dict) -> dict:
    try:
        return _FLAKY(**params)
    except RuntimeError as exc:  # the body's own failure: retry after the fixed delay
        raise ApplicationError(str(exc), next_retry_delay=RETRY_DELAY) from None


ACTIVITIES = [step, join, produce, consume, flaky]


async def _call(fn: Any, params: dict, local: bool = False) -> dict:
    if local:
        return await workflow.execute_local_activity(fn, params, start_to_close_timeout=TIMEOUT)
    return await workflow.execute_activity(fn, params, start_to_close_timeout=TIMEOUT)


@workflow.defn(name="BenchChain")
class Chain:
    """``n`` steps in sequence, each fed the previous result."""

    @workflow.run
    async def run(self, spec: dict) -> dict:
        value = {"i": 0}
        for _ in range(spec["n"]):
            value = await _call(step, value, spec.get("local", False))
        return value


@workflow.defn(name="BenchSequentialLoop")
class SequentialLoop:
    @workflow.run
    async def run(self, spec: dict) -> list:
        return [await _call(step, {"i": i}) for i in range(spec["n"])]


@workflow.defn(name="BenchBranches")
class Branches:
    """One step, ``n`` parallel branches after it, then a join over their results."""

    @workflow.run
    async def run(self, spec: dict) -> dict:
        first = await _call(step, {"i": 0})
        results = await asyncio.gather(*(_call(step, {"i": first["i"] + k}) for k in range(spec["n"])))
        return await _call(join, {"values": [r["i"] for r in results]})


@workflow.defn(name="BenchParallelLoop")
class ParallelLoop:
    """``n`` items, at most ``max_in_flight`` activities outstanding."""

    @workflow.run
    async def run(self, spec: dict) -> list:
        gate = asyncio.Semaphore(spec["max_in_flight"])

        async def one(i: int) -> dict:
            async with gate:
                return await _call(step, {"i": i})

        return await asyncio.gather(*(one(i) for i in range(spec["n"])))


@workflow.defn(name="BenchHandoff")
class Handoff:
    """A large result from one step passed whole to the next."""

    @workflow.run
    async def run(self, spec: dict) -> dict:
        made = await _call(produce, {"size": spec["size"]})
        return await _call(consume, {"made": made})


@workflow.defn(name="BenchRetry")
class Retry:
    @workflow.run
    async def run(self, spec: dict) -> dict:
        return await workflow.execute_activity(
            flaky, {"counter": spec["counter"]}, start_to_close_timeout=TIMEOUT,
            retry_policy=RetryPolicy(initial_interval=RETRY_DELAY, maximum_attempts=5))


WORKFLOWS = [Chain, SequentialLoop, Branches, ParallelLoop, Handoff, Retry]
