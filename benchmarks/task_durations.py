"""The workflow tasks of a run, read from its history.

A workflow task lasts from its ``WorkflowTaskStarted`` to its ``WorkflowTaskCompleted``
(or ``Failed``/``TimedOut``) event: the span the SDK's ``TMPRL1104`` warning (over 5 s)
measures, across every activation and local activity inside it. Temporal's deadlock
detector (``TMPRL1101``) cuts a single *activation* at 2 s, which history does not show.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from temporalio.api.enums.v1 import EventType

__all__ = ["run_histories", "task_durations", "describe"]

_ENDS = {EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED, EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED,
         EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT}


async def run_histories(client: Any, workflow_id: str, run_id: str | None = None) -> AsyncIterator[Any]:
    """The history of every run of an execution from ``run_id`` on (default: its first run),
    in order (continue-as-new chains them: ``bounded-run-work`` hands inline work to a fresh
    run every 16 yields)."""
    if run_id is None:
        latest = await client.get_workflow_handle(workflow_id).fetch_history()
        run_id = latest.events[0].workflow_execution_started_event_attributes.first_execution_run_id
    while run_id:
        history = await client.get_workflow_handle(workflow_id, run_id=run_id).fetch_history()
        yield history
        last = history.events[-1]
        run_id = last.workflow_execution_continued_as_new_event_attributes.new_execution_run_id \
            if last.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW else ""


async def task_durations(client: Any, workflow_id: str) -> tuple[list[float], int, int, int]:
    """Seconds of each workflow task, the history's length and its failed or timed-out tasks
    over every run, and the number of runs."""
    spans: list[float] = []
    events = failed = runs = 0
    async for history in run_histories(client, workflow_id):
        runs += 1
        started: float | None = None
        for event in history.events:
            events += 1
            at = event.event_time.ToMicroseconds() / 1e6
            if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED:
                started = at
            elif event.event_type in _ENDS and started is not None:
                spans.append(at - started)
                started = None
                failed += event.event_type != EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED
    return spans, events, failed, runs


def describe(spans: list[float]) -> str:
    """``tasks, longest, first`` as a table cell."""
    if not spans:
        return "-"
    return f"{len(spans)} tasks, longest {max(spans):.2f} s, first {spans[0]:.2f} s"


class ActivationClock:
    """Times every workflow activation this process runs, and the garbage collector's share
    of each: what the deadlock detector's 2 s applies to. A diagnostic that wraps the SDK's
    private ``_RunningWorkflow.activate`` (only here, in the benchmark)."""

    def __init__(self) -> None:
        self.spans: list[tuple[float, float, str]] = []   # (seconds, of it GC, jobs)
        self._gc = 0.0
        self._gc_start = 0.0

    def _on_gc(self, phase: str, info: dict[str, Any]) -> None:
        import time
        if phase == "start":
            self._gc_start = time.perf_counter()
        else:
            self._gc += time.perf_counter() - self._gc_start

    def __enter__(self) -> ActivationClock:
        import gc
        import time

        from temporalio.worker import _workflow

        self._cls = _workflow._RunningWorkflow
        self._real = real = self._cls.activate
        clock = self

        def activate(wf: Any, act: Any) -> Any:
            gc_before = clock._gc
            started = time.perf_counter()
            try:
                return real(wf, act)
            finally:
                jobs = ",".join(sorted({j.WhichOneof("variant") or "?" for j in act.jobs}))
                clock.spans.append((time.perf_counter() - started, clock._gc - gc_before, jobs))

        self._cls.activate = activate  # type: ignore[method-assign]
        gc.callbacks.append(self._on_gc)
        return self

    def __exit__(self, *exc: Any) -> None:
        import gc
        self._cls.activate = self._real  # type: ignore[method-assign]
        gc.callbacks.remove(self._on_gc)

    def describe(self) -> str:
        if not self.spans:
            return "-"
        longest = max(self.spans)
        gc_total = sum(s[1] for s in self.spans)
        return (f"{len(self.spans)}, longest {longest[0] * 1e3:.0f} ms (GC {longest[1] * 1e3:.0f} ms, "
                f"{longest[2]}), GC in all {gc_total:.1f} s")
