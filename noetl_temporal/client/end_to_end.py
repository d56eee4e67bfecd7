"""Run one playbook end to end: the engine behind ``noetl-temporal run``.

With no Temporal address it starts the embedded dev server (with its UI) and an
in-process worker, runs the playbook, and shuts both down. With an address it uses
that cluster, still with an in-process worker unless ``worker=False`` (your own workers
serve the task queue then).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TextIO

from temporalio.client import Client, WorkflowFailureError, WorkflowHandle, WorkflowQueryFailedError
from temporalio.service import RPCError

from ..conversion.playbook_result import workflow_output
from ..dsl.models import Playbook, playbook_definition
from ..engine.envelopes import RunOutput
from ..engine.status_layers import ExecutionStatus
from ..errors import NoetlError
from ..hosting.lifecycle import hosted_worker
from ..store.event_store import EventStore, open_event_store
from ..workflow.definitions import prepare_playbook
from .connect import Target, connect, start_execution
from .devserver import EmbeddedTemporal
from .observe import QUERY_PAGE, read_events
from .oneline import one_line

__all__ = ["RunReport", "run_playbook", "run_with_client", "ProgressPrinter"]

# Events a person following a run wants to see, one line each.
_PROGRESS = {"step.started", "step.done", "step.failed", "loop.started", "loop.done",
             "task.attempt.failed", "execution.cancelled", "playbook.paused"}


@dataclass
class RunReport:
    execution_id: str
    workflow_id: str
    state: str
    ctx: dict[str, Any] = field(default_factory=dict)
    steps: dict[str, Any] = field(default_factory=dict)
    summary: dict[str, Any] | None = None
    error: str | None = None
    events: list[dict[str, Any]] = field(default_factory=list)
    ui_url: str | None = None
    event_count: int = 0             # events the execution logged (``events`` may hold fewer)
    events_truncated: bool = False   # ``events`` is the first ``len(events)`` of ``event_count``

    def to_json(self) -> dict[str, Any]:
        return {
            "execution_id": self.execution_id,
            "workflow_id": self.workflow_id,
            "state": self.state,
            "ctx": self.ctx,
            "steps": self.steps,
            "summary": self.summary,
            "error": self.error,
            "event_count": self.event_count,
            "events_truncated": self.events_truncated,
            "events": self.events,
        }


class ProgressPrinter:
    """Turns canonical events into short progress lines on a stream (stderr)."""

    def __init__(self, stream: TextIO | None = None,
                 locate: Callable[[str], str] | None = None, *, verbose: bool = False) -> None:
        self.stream = stream or sys.stderr
        self.locate = locate or (lambda message: message)  # an engine `where` -> file:line:col
        # verbose (NoETL's `run -v`): every event, a finished task or step with its result
        self.verbose = verbose

    def __call__(self, event: dict[str, Any]) -> None:
        kind = event["event_type"]
        for warning in (event.get("payload") or {}).get("warnings") or []:
            # a template rendered an undefined value: never silent (docs/semantics.md)
            print(f"[{event['seq']:>4}] warning: {self.locate(str(warning.get('message')))}",
                  file=self.stream, flush=True)
        if kind not in _PROGRESS and not self.verbose:
            return
        where = event.get("entity_id") or ""
        extra = ""
        if kind == "step.failed" or kind == "task.attempt.failed":
            error = (event.get("payload") or {}).get("error") or \
                ((event.get("payload") or {}).get("outcome") or {}).get("error") or {}
            extra = f"  {error.get('kind', '')}: {one_line(error.get('message'))}".rstrip()
            if (event.get("payload") or {}).get("handled"):
                extra += "  (handled)"
            if kind == "task.attempt.failed":
                where = f"{where} attempt {event.get('attempt')}"
        elif kind == "loop.started":
            extra = f"  {((event.get('payload') or {}).get('meta') or {}).get('count', '?')} items"
        elif self.verbose and event.get("payload"):
            extra = "  " + one_line(json.dumps(event["payload"], default=str), limit=200)
        print(f"[{event['seq']:>4}] {kind:<20} {where}{extra}", file=self.stream, flush=True)


async def _follow(client: Client, execution_id: str, store: EventStore | None,
                  on_event: Callable[[dict[str, Any]], None], done: asyncio.Event) -> int:
    """Hand events over in ``seq`` order until ``done`` (the run has closed), then drain.

    The cursor is the last ``seq`` handed over, never a count: the workflow forgets events
    once they are stored, and ``read_events`` reads those from the store and the tail from
    the workflow. After the close only the store is read (a query to a closed workflow makes
    a worker replay its whole history). A failed read never ends the run: the next poll
    tries again, and the drain reads the store.
    """
    cursor = 0
    while True:
        finished = done.is_set()
        try:
            batch = await read_events(client, execution_id, store=store, after_seq=cursor, limit=QUERY_PAGE,
                                      live=False if finished else None)
        except (RPCError, WorkflowQueryFailedError, NoetlError):
            batch = []
        for event in batch:
            on_event(event)
            cursor = event["seq"]
        if len(batch) == QUERY_PAGE:
            continue
        if finished:
            return cursor
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(done.wait(), timeout=0.2)


async def _execute(client: Client, playbook: Playbook, *, task_queue: str, address: str | None,
                   payload: dict[str, Any],
                   source: str | None, on_event: Callable[[dict[str, Any]], None] | None,
                   search_attributes: bool, execution_id: str | None,
                   heartbeat_timeout_s: float = 30.0, execution_timeout_s: float | None = None,
                   continue_as_new_after_events: int = 0, events_limit: int | None = None,
                   on_start: Callable[[str, str | None], None] | None = None, test_clock: bool = False) -> RunReport:
    handle = await start_execution(client, playbook, payload=payload, task_queue=task_queue,
                                   source=source, search_attributes=search_attributes,
                                   execution_id=execution_id, heartbeat_timeout_s=heartbeat_timeout_s,
                                   execution_timeout_s=execution_timeout_s,
                                   continue_as_new_after_events=continue_as_new_after_events,
                                   test_clock=test_clock)
    if on_start:   # now, not at the end: a run waiting at a gate is controlled from elsewhere
        on_start(handle.id, address)
    # Queries go to the latest run: a long execution continues as new.
    handle = client.get_workflow_handle(handle.id)
    store = _local_store()
    done = asyncio.Event()
    follower = asyncio.ensure_future(_follow(client, handle.id, store, on_event, done)) if on_event else None
    error: str | None = None
    output: RunOutput | None = None
    try:
        output = RunOutput.from_dict(await workflow_output(handle))
    except WorkflowFailureError as exc:
        error = str(exc.cause or exc)
    except asyncio.CancelledError:
        with contextlib.suppress(Exception):
            await handle.signal("cancel", "interrupted (Ctrl-C)")
            await handle.cancel(reason="interrupted (Ctrl-C)")
        raise
    finally:
        done.set()
        if follower is not None:
            await follower
    try:
        events = await _all_events(client, handle.id, store, events_limit)
        logged = await _event_count(client, handle.id, store, events)
    finally:
        if store is not None:
            store.close()
    if output is not None:
        state = output.state
    else:  # the workflow failed or was cancelled: what it holds comes from its `detail` query
        detail = await _safe_query(handle, "detail")
        output = RunOutput.from_dict(detail) if detail else None
        state = ExecutionStatus.CANCELLED if "cancel" in (error or "").lower() else ExecutionStatus.FAILED
    result = dict(output.result or {}) if output is not None else {}
    event_count = max(logged, output.event_count if output is not None else 0)
    if error is None and state == ExecutionStatus.FAILED:
        error = result.get("reason")
    return RunReport(execution_id=handle.id, workflow_id=handle.id, state=state.value,
                     ctx=dict(output.ctx) if output is not None else {},
                     steps=dict(output.steps) if output is not None else {}, summary=result or None,
                     error=error, events=events, event_count=event_count,
                     events_truncated=event_count > len(events))


async def _safe_query(handle: WorkflowHandle[Any, Any], name: str) -> Any:
    try:
        return await handle.query(name)
    except Exception:
        return None


def _local_store() -> EventStore | None:
    """The event store this machine's worker writes to, None if it cannot be opened (the
    workflow's memory still answers)."""
    try:
        return open_event_store()
    except Exception:
        return None


async def _all_events(client: Client, execution_id: str, store: EventStore | None,
                      limit: int | None = None) -> list[dict[str, Any]]:
    """The log from its start, at most ``limit`` events (all if None), through the same
    reader as ``noetl-temporal events``: the event store (complete across continue-as-new
    runs), then the workflow for anything not stored."""
    events: list[dict[str, Any]] = []
    while limit is None or len(events) < limit:
        page = QUERY_PAGE if limit is None else min(QUERY_PAGE, limit - len(events))
        after = events[-1]["seq"] if events else 0
        try:
            batch = await read_events(client, execution_id, store=store, after_seq=after, limit=page)
        except (RPCError, WorkflowQueryFailedError, NoetlError):
            break  # what was read so far; ``event_count`` tells how many there are
        events.extend(batch)
        if len(batch) < page:
            break
    return events


async def _event_count(client: Client, execution_id: str, store: EventStore | None,
                       events: list[dict[str, Any]]) -> int:
    """How many events the execution logged: its last ``seq``."""
    last = events[-1]["seq"] if events else 0
    if store is not None:
        stored = await asyncio.to_thread(store.last_seq, execution_id)
        last = max(last, stored or 0)
    return last


async def run_playbook(playbook: Playbook, *, target: Target, payload: dict[str, Any] | None = None,
                       source: str | None = None, worker: bool = True,
                       on_event: Callable[[dict[str, Any]], None] | None = None,
                       on_ready: Callable[[str | None], None] | None = None,
                       on_start: Callable[[str, str | None], None] | None = None,
                       execution_id: str | None = None, events_limit: int | None = None) -> RunReport:
    """Run to the end and report. ``on_ready(ui_url)`` is called once Temporal is up,
    ``on_start(execution_id, temporal_address)`` once the execution has started; the report
    holds the first ``events_limit`` events (all if None) and ``event_count``."""
    payload = payload or {}
    if target.address is None:
        from ..conversion.converter import configured_data_converter

        async with EmbeddedTemporal(ui=True, namespace=target.namespace,
                                    data_converter=configured_data_converter(target.codec)) as embedded:
            if on_ready:
                on_ready(embedded.ui_url)
            report = await _with_worker(embedded.client, playbook, task_queue=target.task_queue,
                                        address=embedded.address, owns_tools=True,
                                        source=source, payload=payload, worker=True, on_event=on_event,
                                        search_attributes=True, execution_id=execution_id,
                                        events_limit=events_limit, on_start=on_start)
            report.ui_url = embedded.ui_url
        gc.collect()  # release the worker's runtime before the interpreter exits
        return report
    client = await connect(target)
    if on_ready:
        on_ready(None)
    # Ours, as the embedded server's runs and the API's starts have them (the UI's and
    # `temporal workflow list --query` filters, the API's ?playbook_path=). A namespace that
    # has not registered them starts the run without them and logs how to register them.
    return await _with_worker(client, playbook, task_queue=target.task_queue, address=target.address,
                              owns_tools=True, payload=payload, source=source,
                              worker=worker, on_event=on_event, search_attributes=True,
                              execution_id=execution_id, events_limit=events_limit, on_start=on_start)


async def _with_worker(client: Client, playbook: Playbook, *, worker: bool, owns_tools: bool,
                       task_queue: str, **kwargs: Any) -> RunReport:
    """Run, hosting a worker on ``task_queue`` unless ``worker`` is False. ``owns_tools``: the
    worker closes its loop's tool resources when done (a CLI run); on a client the caller
    connected (tests, embedding) other workers of the caller's loop may share them."""
    if not worker:
        return await _execute(client, playbook, task_queue=task_queue, **kwargs)
    # The worker's playbook cache, filled now rather than in the run's first activation
    # (a 10,000-step playbook: 0.3-2 s, against the deadlock detector's 2 s).
    with contextlib.suppress(Exception):   # (a definition it refuses fails the run, clearly, as before)
        await asyncio.to_thread(prepare_playbook, playbook_definition(playbook))
    async with hosted_worker(client, task_queue=task_queue, owns_tools=owns_tools):
        return await _execute(client, playbook, task_queue=task_queue, **kwargs)


async def run_with_client(client: Client, playbook: Playbook, *, task_queue: str,
                          payload: dict[str, Any] | None = None, worker: bool = True,
                          on_event: Callable[[dict[str, Any]], None] | None = None,
                          source: str | None = None, search_attributes: bool = False,
                          execution_id: str | None = None, heartbeat_timeout_s: float = 30.0,
                          execution_timeout_s: float | None = None,
                          continue_as_new_after_events: int = 0, events_limit: int | None = None,
                          test_clock: bool = False) -> RunReport:
    """Run on an already connected client (tests, embedding); the report holds the first
    ``events_limit`` events (all if None). ``test_clock``: ``noetl-temporal test --temporal``
    only (workflow/test_clock.py)."""
    return await _with_worker(client, playbook, task_queue=task_queue, address=None, owns_tools=False,
                              payload=payload or {}, source=source,
                              worker=worker, on_event=on_event, search_attributes=search_attributes,
                              execution_id=execution_id, heartbeat_timeout_s=heartbeat_timeout_s,
                              execution_timeout_s=execution_timeout_s,
                              continue_as_new_after_events=continue_as_new_after_events,
                              events_limit=events_limit, test_clock=test_clock)
