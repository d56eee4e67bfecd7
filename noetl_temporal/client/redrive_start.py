"""Redrive: start a new execution that reuses what a failed or cancelled one recorded.

The CLI (``noetl-temporal redrive``) and the API (``POST /executions/{id}/redrive``) call
:func:`redrive`. Where the recorded results come from, and why, is in docs/operations.md: the
old execution's own Temporal history, read through this client and so through the
deployment's data converter (its input: the pinned playbook definition and the payload; its
output: each step's status, run count and result, the output a Failed workflow carries in its
failure, or, for a cancelled one, the workflow's ``detail`` query answered by a worker). The
event store is not the source: it may be off, it caps event payloads, and it is written after
the fact.

The plan (``engine/redrive.py``) goes into the new execution's input; the engine reuses the
results it holds and reruns the rest. Refusals are typed: :class:`NotFound` (no such
execution), :class:`StillRunning` (it has not ended), :class:`Rejected` (an unknown step, a
playbook that cannot be found or used, nothing to rerun, results that cannot be read).
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from temporalio.client import Client
from temporalio.service import RPCError

from ..dsl.models import Playbook, playbook_definition, playbook_from_definition
from ..engine import redrive as plans
from ..engine.idempotency import origin_of_plan
from ..engine.machine import step_graph
from ..engine.payload_size import PAYLOAD_FIX, payload_refusal
from ..errors import NoetlError, PayloadTooLarge, PlaybookInvalid
from ..store.event_store import EventStore
from .connect import start_execution
from .control import NotFound, Rejected, describe, read_detail, read_input

__all__ = ["redrive", "redrive_summary", "StillRunning", "Rejected", "NotFound", "MEMO_KEY"]

#: the memo entry naming the execution a redrive recovers (``starts.py`` sets it)
MEMO_KEY = "noetl.redriven_from"


class StillRunning(NoetlError):
    """temporal.redrive: the execution has not ended, so it cannot be redriven (HTTP 409)."""

    def __init__(self, execution_id: str) -> None:
        super().__init__(f"execution {execution_id} is still running: only an ended (FAILED, CANCELLED or "
                         "COMPLETED) execution can be redriven",
                         fix=f"wait for it to end, or cancel it first: noetl-temporal cancel {execution_id}")
        self.execution_id = execution_id


async def redrive(client: Client, execution_id: str, *, from_step: str | None = None,
                  playbook: Playbook | None = None, latest: bool = False, playbook_source: str | None = None,
                  task_queue: str | None = None, search_attributes: bool = False,
                  event_store: EventStore | None = None, api_url: str | None = None) -> dict[str, Any]:
    """Start the redrive of ``execution_id``; what it reuses and reruns.

    ``playbook``: a newer definition to run (``--playbook FILE``; ``playbook_source`` names
    it); ``latest``: the playbook file the old execution was started from, as it is now;
    neither: the definition the old execution started with. ``from_step``: rerun from there
    even if it completed. ``event_store``: where the old execution's events are, to append
    ``execution.redriven`` to them (skipped when it holds none).
    """
    info = await describe(client, execution_id)
    if not info.closed:
        raise StillRunning(execution_id)
    old_input = await read_input(client, execution_id)
    _, detail = await read_detail(client, execution_id)
    old_steps = detail.get("steps")
    if not isinstance(old_steps, dict):
        raise Rejected(f"cannot read what execution {execution_id} recorded ({info.state}): a cancelled or "
                       "terminated execution's steps are read through a query, which a worker answers; "
                       "start a worker on its task queue and redrive again")
    old_playbook = playbook_from_definition(old_input.playbook)
    definition_name = "original"
    source = old_input.source
    if playbook is None and latest:
        playbook, source = _latest(execution_id, old_input.source), old_input.source
        definition_name = "latest"
    elif playbook is not None:
        definition_name, source = "file", playbook_source or old_input.source
    new_playbook = playbook or old_playbook
    graph = step_graph(new_playbook)
    if from_step is not None and from_step not in graph.steps:
        raise Rejected(f"unknown step {from_step!r} for --from: the playbook's steps are "
                       f"{', '.join(sorted(graph.steps))}")
    if info.state == "COMPLETED" and from_step is None and definition_name == "original":
        raise Rejected(f"execution {execution_id} COMPLETED: nothing failed, so a redrive would rerun nothing; "
                       "pass --from STEP to rerun from a step")
    plan = plans.plan(old_execution_id=execution_id, old_steps=old_steps, old_playbook=old_playbook,
                      new_playbook=new_playbook, new_graph=graph, from_step=from_step,
                      definition=definition_name, key_origin=origin_of_plan(execution_id, old_input.redrive))
    children = await _child_plans(client, execution_id, plans.child_tasks(
        old_steps=old_steps, old_playbook=old_playbook, new_playbook=new_playbook, new_graph=graph,
        from_step=from_step, iterations=plan["iterations"]), depth=1)
    if children:
        plan["children"] = children
    refused = payload_refusal(plan, where="the recorded results a redrive reuses")
    if refused is not None:
        raise PayloadTooLarge(refused, fix="redrive with --from an earlier step, so fewer results travel in "
                                           "the input; " + PAYLOAD_FIX)
    definition = old_input.playbook if playbook is None else playbook_definition(new_playbook)
    handle = await start_execution(client, new_playbook, payload=old_input.payload, source=source,
                                   task_queue=task_queue or info.task_queue or "noetl-playbooks",
                                   search_attributes=search_attributes, definition=definition,
                                   api_url=api_url, redrive=plan)
    reused = sorted(plan["reuse"])
    noted = _note_on_old_stream(event_store, execution_id, handle.id, plan, reused)
    return {"execution_id": handle.id, "redriven_from": execution_id, "from_step": from_step,
            "definition": definition_name, "reused_steps": reused,
            "rerun_steps": sorted(set(graph.steps) - set(reused)), "changed_steps": plan["changed"],
            "redriven_children": {plans.child_label(key): child["from_execution_id"]
                                  for key, child in sorted(children.items())},
            "old_stream_noted": noted}


#: sub-playbooks redriven inside a redrive, at most this deep (the engine's own limit is larger)
MAX_CHILD_DEPTH = 8
#: attempts of a sub-playbook task searched for its last child
MAX_CHILD_ATTEMPTS = 100


async def _child_plans(client: Client, parent_id: str, keys: list[str], *, depth: int) -> dict[str, Any]:
    """The redrive plans of the old children of the tasks ``keys`` names (``plans.child_tasks``,
    ``plans.child_key``). A child is found in the old parent's history (the children it started:
    their ids are derived from the parent's id and the task run id, ``naming.child_execution_id``);
    one that cannot be found or read, or has not ended, runs whole, as before."""
    if not keys or depth > MAX_CHILD_DEPTH:
        return {}
    started = await _started_children(client, parent_id)
    # by the digest that ends a readable child id, and whole (ids from before the patch):
    # a loop of many items started many children, each looked up per attempt
    by_id = {**{c.rpartition("-")[2]: c for c in started}, **{c: c for c in started}}
    out: dict[str, Any] = {}
    for key in keys:
        found = None
        for attempt in range(1, MAX_CHILD_ATTEMPTS + 1):   # the last attempt's child: the one that failed last
            task_run_id = f"{key}:{attempt}"
            digest = hashlib.sha256(f"{parent_id}/{task_run_id}".encode()).hexdigest()[:12]
            found = by_id.get(digest) or by_id.get(f"{parent_id}/{task_run_id}") or found
        if found is None:
            continue
        try:
            child = await _child_plan(client, found, depth=depth)
        except NoetlError:
            continue
        if child is not None:
            out[key] = child
    return out


#: runs of a parent (it continued as new) searched for the children it started, newest first
MAX_PARENT_RUNS = 64


async def _started_children(client: Client, parent_id: str) -> list[str]:
    """The ids of the children the parent started, in its latest run and the runs before it
    (a parent that continued as new after starting a child has it in an earlier run's history),
    at most :data:`MAX_PARENT_RUNS` runs back."""
    from temporalio.api.enums.v1 import EventType

    ids: list[str] = []
    run_id: str | None = None   # None: the latest run
    for _ in range(MAX_PARENT_RUNS):
        previous = ""
        async for event in client.get_workflow_handle(parent_id, run_id=run_id).fetch_history_events():
            if event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
                previous = event.workflow_execution_started_event_attributes.continued_execution_run_id
            elif event.event_type == EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED:
                ids.append(event.start_child_workflow_execution_initiated_event_attributes.workflow_id)
        if not previous:
            break
        run_id = previous
    return ids


async def _child_plan(client: Client, execution_id: str, *, depth: int) -> dict[str, Any] | None:
    """The plan of an old child that failed or was cancelled, on its own definition."""
    info = await describe(client, execution_id)
    if not info.closed or info.state not in ("FAILED", "CANCELLED"):
        return None
    child_input = await read_input(client, execution_id)
    _, detail = await read_detail(client, execution_id)
    old_steps = detail.get("steps")
    if not isinstance(old_steps, dict):
        return None
    playbook = playbook_from_definition(child_input.playbook)
    graph = step_graph(playbook)
    plan = plans.plan(old_execution_id=execution_id, old_steps=old_steps, old_playbook=playbook,
                      new_playbook=playbook, new_graph=graph,
                      key_origin=origin_of_plan(execution_id, child_input.redrive))
    children = await _child_plans(client, execution_id, plans.child_tasks(
        old_steps=old_steps, old_playbook=playbook, new_playbook=playbook, new_graph=graph,
        iterations=plan["iterations"]), depth=depth + 1)
    if children:
        plan["children"] = children
    # the new child is redriven only if it gets the same input (child_runs.py): a loop's
    # iteration renders its `loop.in` again, and a template may render differently
    plan["payload_sha256"] = plans.payload_digest(child_input.payload)
    return plan


async def redrive_summary(client: Client, execution_id: str, *, ask_workflow: bool = True) -> dict[str, Any] | None:
    """For ``status``: the execution a redrive recovers, the steps whose recorded results it
    reused (no tool ran) and the steps that ran again, so far; None for an execution that is
    no redrive. ``ask_workflow=False``: no worker polls, so an open execution's steps are not
    asked for (the query would only wait out its timeout) and read as none yet."""
    try:
        description = await client.get_workflow_handle(execution_id).describe()
    except RPCError:   # unknown to Temporal (its events may still be stored): no redrive to tell of
        return None
    old = (await description.memo()).get(MEMO_KEY)
    if not old:
        return None
    _, detail = await read_detail(client, execution_id, ask_workflow=ask_workflow)
    steps: dict[str, Any] = detail["steps"] if isinstance(detail.get("steps"), dict) else {}
    records = [(name, record) for name, record in steps.items() if isinstance(record, dict)]
    return {"redriven_from": str(old),
            "reused_steps": [name for name, record in records if record.get("reused")],
            "rerun_steps": [name for name, record in records if not record.get("reused") and record.get("runs")]}


def _latest(execution_id: str, source: str | None) -> Playbook:
    """The playbook file the old execution came from, as it is now (validated)."""
    from ..dsl import load_playbook

    if not source or source.startswith(("catalog:", "inline")) or not Path(source).is_file():
        raise Rejected(f"--latest reads the playbook file execution {execution_id} was started from, and its "
                       f"source is {source or 'unknown'!r}: pass the playbook with --playbook FILE instead")
    try:
        return load_playbook(source).playbook
    except PlaybookInvalid as exc:
        first = next((d for d in exc.diagnostics if d.is_error), None)
        raise Rejected(f"the latest {source} is not a valid playbook: {first}") from None


def _note_on_old_stream(store: EventStore | None, old_id: str, new_id: str, plan: dict[str, Any],
                        reused: list[str]) -> bool:
    """Append ``execution.redriven`` to the old execution's events where they are stored."""
    if store is None:
        return False
    try:
        last = store.last_seq(old_id)
        if last is None:
            return False   # its events are not in this store: nothing to append to
        now = datetime.now(UTC).isoformat().replace("+00:00", "Z")
        event = plans.redriven_event(old_execution_id=old_id, last_seq=last, now=now, new_execution_id=new_id,
                                     from_step=plan.get("from_step"), definition=str(plan.get("definition")),
                                     reused=reused)
        store.write([event])
        return True
    except Exception:   # the store is read-only or gone: the new execution's own events still link them
        return False

