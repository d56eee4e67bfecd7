"""Our own metrics, beside the SDK's: made through the Temporal runtime's meter, so they
are served wherever the runtime serves metrics (``--metrics-port``, see :mod:`.runtime`)
and cost nothing when it serves none.

============================================  =========  ==================================
name (Prometheus)                             labels     counts
============================================  =========  ==================================
``noetl_executions_total``                    state      executions started (``RUNNING``)
                                                         and closed (``COMPLETED``,
                                                         ``FAILED``, ``CANCELLED``)
``noetl_task_attempts_total``                 kind,      tool task attempts (``noetl.run_task``
                                              outcome    activity runs): ``ok``, ``error``,
                                                         ``retry``, ``cancelled``
``noetl_loop_iterations_total``               outcome    loop iterations ``done``/``failed``
``noetl_event_store_write_seconds``           (none)     histogram: one event-store batch write
============================================  =========  ==================================

The SDK adds its own labels (namespace, task_queue, workflow or activity type). Execution
counts come from the workflow (``workflow.metric_meter()`` is silent during replay, so a
worker restart does not count a run twice); task attempts from an activity interceptor;
loop iterations and store latency from the event-persistence activity, which sees each
event once.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from temporalio import activity
from temporalio.common import MetricMeter
from temporalio.worker import ActivityInboundInterceptor, ExecuteActivityInput, Interceptor

from .types import RUN_TASK_ACTIVITY

__all__ = ["EXECUTIONS", "TASK_ATTEMPTS", "LOOP_ITERATIONS", "EVENT_STORE_WRITE", "MetricsInterceptor",
           "count_execution", "record_events_written"]

EXECUTIONS = "noetl_executions"
TASK_ATTEMPTS = "noetl_task_attempts"
LOOP_ITERATIONS = "noetl_loop_iterations"
EVENT_STORE_WRITE = "noetl_event_store_write_seconds"

_LOOP_OUTCOMES = {"loop.iteration.done": "done", "loop.iteration.failed": "failed"}


def count_execution(meter: MetricMeter, state: str) -> None:
    """One execution reached ``state`` (called by the workflow with its replay-safe meter)."""
    meter.create_counter(EXECUTIONS, "executions by normalized state").add(1, {"state": state})


def record_events_written(meter: MetricMeter, events: list[dict[str, Any]], took: timedelta) -> None:
    """After one event-store write: its latency, and the loop iterations it recorded."""
    meter.create_histogram_timedelta(EVENT_STORE_WRITE, "event store batch write latency").record(took)
    counts: dict[str, int] = {}
    for event in events:
        outcome = _LOOP_OUTCOMES.get(event.get("event_type", ""))
        if outcome:
            counts[outcome] = counts.get(outcome, 0) + 1
    if counts:
        counter = meter.create_counter(LOOP_ITERATIONS, "loop iterations by outcome")
        for outcome, n in counts.items():
            counter.add(n, {"outcome": outcome})


class MetricsInterceptor(Interceptor):
    """Counts tool task attempts by kind and outcome (every worker installs it)."""

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _TaskAttempts(next)


class _TaskAttempts(ActivityInboundInterceptor):
    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        if activity.info().activity_type != RUN_TASK_ACTIVITY:
            return await self.next.execute_activity(input)
        meter = activity.metric_meter()
        # perf: counting attempts nobody reads — benchmark: probes.activity_cpu
        if meter is MetricMeter.noop:  # the runtime serves no metrics: nothing to count
            return await self.next.execute_activity(input)
        kind = str(getattr(input.args[0], "kind", None) or "unknown") if input.args else "unknown"
        outcome = "error"
        try:
            result = await self.next.execute_activity(input)
            outcome = str(((result or {}).get("outcome") or {}).get("status") or "ok")
            return result
        except asyncio.CancelledError:
            outcome = "cancelled"
            raise
        except Exception as exc:
            # a policy asked for another attempt (PolicyRetry): Temporal retries it
            outcome = "retry" if getattr(exc, "type", None) == "PolicyRetry" else "error"
            raise
        finally:
            meter.create_counter(TASK_ATTEMPTS, "tool task attempts by kind and outcome") \
                .add(1, {"kind": kind, "outcome": outcome})
