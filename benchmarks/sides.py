"""Running one execution (or a batch) on either side, and counting its history.

Both sides are driven from the benchmark process through a client of their own: the
playbook side's with the claim-check converter its worker uses, the hand-written side's
with the SDK's default. A side's worker runs in a subprocess (``WorkerProcess``).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import time
import uuid
from datetime import timedelta
from pathlib import Path

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from noetl_temporal.client.connect import start_execution
from noetl_temporal.conversion.playbook_result import workflow_output
from noetl_temporal.dsl.models import Playbook

from .task_durations import run_histories
from .workloads import Workload

__all__ = ["WorkerProcess", "Side", "PlaybookSide", "HandwrittenSide", "BenchError", "history"]

EXECUTION_TIMEOUT = timedelta(minutes=10)  # a stuck run fails the workload instead of hanging
ROOT = Path(__file__).resolve().parents[1]


class BenchError(Exception):
    """A side did not complete a workload correctly."""


class WorkerProcess:
    """``python -m benchmarks.worker SIDE ADDRESS QUEUE`` as a child; stopped by closing its stdin."""

    def __init__(self, side: str, address: str, queue: str) -> None:
        self.side, self.address, self.queue = side, address, queue
        self.proc: subprocess.Popen | None = None

    async def start(self, timeout: float = 60.0) -> int:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.worker", self.side, self.address, self.queue],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=ROOT, env=env)
        line = await asyncio.wait_for(asyncio.to_thread(self.proc.stdout.readline), timeout)
        if line.strip() != b"ready":
            self.stop()
            raise BenchError(f"the {self.side} worker did not start (exit code {self.proc.returncode})")
        return self.proc.pid

    def stop(self) -> None:
        if self.proc is None:
            return
        with contextlib.suppress(OSError):
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()  # our own child, by its pid
            self.proc.wait()


async def history(client: Client, workflow_id: str, run_id: str | None) -> tuple[int, int]:
    """(events, runs) of one execution, across continue-as-new runs."""
    events = runs = 0
    async for hist in run_histories(client, workflow_id, run_id):
        events += len(hist.events)
        runs += 1
    return events, runs


async def scheduled_activities(client: Client, workflow_id: str, run_id: str | None) -> int:
    """Normal (not local) activities scheduled by the first run of an execution."""
    hist = await client.get_workflow_handle(workflow_id, run_id=run_id).fetch_history()
    return sum(1 for e in hist.events if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)


class Side:
    name: str
    client: Client
    queue: str

    async def run_once(self, workload: Workload, scratch: Path) -> tuple[str, str | None]:
        raise NotImplementedError

    async def timed(self, workload: Workload, scratch: Path) -> tuple[float, tuple[str, str | None]]:
        """Seconds for ``workload.executions`` executions started at once; one (id, run id) back."""
        t0 = time.perf_counter()
        ids = await asyncio.gather(*(self.run_once(workload, scratch) for _ in range(workload.executions)))
        return time.perf_counter() - t0, ids[0]


class HandwrittenSide(Side):
    """Either hand-written anchor: ``handwritten`` (activities in the worker) or
    ``isolated`` (a process per activity, ``benchmarks.isolated``); same workflows."""

    def __init__(self, client: Client, queue: str, name: str = "handwritten") -> None:
        self.client, self.queue, self.name = client, queue, name

    async def run_once(self, workload: Workload, scratch: Path) -> tuple[str, str | None]:
        arg = dict(workload.arg, **(workload.per_run(scratch) if workload.per_run else {}))
        handle = await self.client.start_workflow(workload.workflow, arg, id=f"hw-{uuid.uuid4().hex[:12]}",
                                                  task_queue=self.queue, execution_timeout=EXECUTION_TIMEOUT)
        await handle.result()  # raises if the workflow failed
        return handle.id, handle.first_execution_run_id


class PlaybookSide(Side):
    name = "playbook"

    def __init__(self, client: Client, queue: str, playbooks: dict[str, Playbook],
                 persist_events: bool = True) -> None:
        self.client, self.queue, self.playbooks = client, queue, playbooks
        self.persist_events = persist_events   # False: --no-event-store (a diagnostic)

    async def run_once(self, workload: Workload, scratch: Path) -> tuple[str, str | None]:
        payload = workload.per_run(scratch) if workload.per_run else {}
        if workload.queue_in_payload:   # `kind: activity` calls the activities on this worker's queue
            payload["queue"] = self.queue
        playbook = self.playbooks[workload.playbook["metadata"]["name"]]  # loaded before any timing
        handle = await start_execution(self.client, playbook, payload=payload,
                                       task_queue=self.queue, persist_events=self.persist_events,
                                       execution_timeout_s=EXECUTION_TIMEOUT.total_seconds())
        out = await workflow_output(handle)   # a FAILED playbook's output is in its failure
        if out.get("state") != "COMPLETED":
            reason = (out.get("result") or {}).get("reason") or out.get("state")
            raise BenchError(f"playbook {workload.key} ended {out.get('state')}: {reason}")
        return handle.id, handle.first_execution_run_id
