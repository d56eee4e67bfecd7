"""Execution control the API and the CLI share: describe, list, cancel, pause, resume, patch ctx.

Why one module: the REST service and the command line must agree on what "cancel" or
"finished" means, so both call these functions and only translate the typed errors
(HTTP status codes, exit codes):

* :class:`NotFound`           no playbook execution has that id (HTTP 404)
* :class:`ExecutionFinished`  it already ended; carries its ``state`` (HTTP 409)
* :class:`Rejected`           the workflow refused a ctx patch (update validator; HTTP 422)

Status and events are *read* in ``noetl_temporal.client.observe``; this module writes.
Cancel is the workflow's ``cancel`` signal (the reason) followed by a Temporal cancel
request, so an API cancel and a cancel from the Temporal UI end the same way: in-flight
activities are cancelled, ``execution.cancelled`` is emitted, the state is CANCELLED.
"""

from __future__ import annotations

import asyncio
import weakref
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, replace
from datetime import datetime, timedelta
from typing import Any, TypeVar

from temporalio.client import (
    Client,
    WorkflowExecutionDescription,
    WorkflowExecutionStatus,
    WorkflowHandle,
    WorkflowUpdateFailedError,
)
from temporalio.service import RPCError, RPCStatusCode

from ..conversion.playbook_result import workflow_output
from ..engine.envelopes import RunOutput
from ..errors import NoetlError, NotFound
from ..workflow import labels
from ..workflow.search_attributes import (
    PLAYBOOK_HASH,
    PLAYBOOK_NAME,
    PLAYBOOK_PATH,
    PLAYBOOK_VERSION,
    search_attributes_available,
)
from ..workflow.types import WORKFLOW_NAME, RunInput
from .close_status import TERMINAL_STATES, WITH_OUTPUT, normalized_state

__all__ = ["NotFound", "ExecutionFinished", "Rejected", "ExecutionInfo", "TERMINAL_STATES",
           "describe", "cancel", "pause", "resume", "patch_ctx", "list_executions", "read_input",
           "read_detail", "waiting_approvals", "run_output", "shared", "search_attributes_available", "visibility_query",
           "pinned_playbook"]

_T = TypeVar("_T")

#: bound on calls that need a worker (queries of closed executions): never hang a request
QUERY_TIMEOUT = timedelta(seconds=3)
RPC_TIMEOUT = timedelta(seconds=10)


class ExecutionFinished(NoetlError):
    """The execution already ended; ``state`` says how."""

    def __init__(self, execution_id: str, state: str, action: str) -> None:
        super().__init__(f"execution {execution_id} is already {state}: cannot {action} it")
        self.execution_id, self.state, self.action = execution_id, state, action


class Rejected(NoetlError):
    """The workflow rejected a request (a ctx patch failed the update validator)."""


@dataclass
class ExecutionInfo:
    """What Temporal knows about one execution, with the normalized state."""

    execution_id: str
    run_id: str | None
    state: str
    temporal_status: str
    started_at: str | None
    ended_at: str | None
    playbook_path: str | None
    task_queue: str | None

    @property
    def closed(self) -> bool:
        return self.temporal_status != "RUNNING"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _iso(value: datetime | None) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value else None


def _handle(client: Client, execution_id: str) -> WorkflowHandle[Any, Any]:
    return client.get_workflow_handle(execution_id)


def _not_found(execution_id: str) -> NotFound:
    return NotFound(f"no execution {execution_id!r}", fix="GET /executions (or the Temporal UI) lists executions")


#: how many closed runs' output states, outputs and inputs are kept (see :class:`_Kept`)
KEPT_STATES, KEPT_OUTPUTS, KEPT_INPUTS = 8192, 128, 128


class _Kept:
    """What a closed run keeps forever, read from Temporal once per run; and calls in flight, shared.

    Why: a list page reads the output of each closed execution on it (COMPLETED and FAILED
    are told apart by it), and a detail its output and input, each a history read. A
    closed run never changes, so its answer is kept (keyed by namespace, id and run id;
    a bounded LRU per kind: states are small, outputs and inputs may not be). And a
    thousand clients reading the same page or execution at once must not send a thousand
    identical calls: a call with the same key as one in flight on the same event loop
    awaits that one (``shared``). Nothing that may still change is kept after its call
    returns. docs/performance.md ("The API under a burst") has the figures.
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self.values: OrderedDict[tuple[Any, ...], Any] = OrderedDict()

    def get(self, key: tuple[Any, ...]) -> Any:
        value = self.values.get(key)
        if value is not None:
            self.values.move_to_end(key)
        return value

    def put(self, key: tuple[Any, ...], value: Any) -> None:
        self.values[key] = value
        self.values.move_to_end(key)
        while len(self.values) > self.size:
            self.values.popitem(last=False)


_STATES, _OUTPUTS, _INPUTS = _Kept(KEPT_STATES), _Kept(KEPT_OUTPUTS), _Kept(KEPT_INPUTS)
#: calls in flight per event loop (a task is awaited on its own loop only)
_IN_FLIGHT: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[Any, ...], asyncio.Future[Any]]] = \
    weakref.WeakKeyDictionary()


async def shared(key: tuple[Any, ...], call: Callable[[], Awaitable[_T]]) -> _T:
    """``await call()``, or, while a call with the same ``key`` is in flight on this loop, its
    result (or its exception). A caller that gives up (cancelled) does not cancel the others'."""
    flights = _IN_FLIGHT.setdefault(asyncio.get_running_loop(), {})
    future = flights.get(key)
    if future is None:
        future = asyncio.ensure_future(call())
        flights[key] = future
        future.add_done_callback(lambda done: flights.pop(key, None) if flights.get(key) is done else None)
    return await asyncio.shield(future)


def _run_key(client: Client, execution_id: str, run_id: str | None) -> tuple[str, str, str] | None:
    return (client.namespace, execution_id, run_id) if run_id else None


async def _result_state(client: Client, execution_id: str, run_id: str | None = None,
                        *, with_output: bool = True) -> tuple[str | None, RunOutput | None]:
    """The state the workflow's output records (a Temporal COMPLETED playbook started before
    ``behaviours.FAILED_PLAYBOOK_FAILS_WORKFLOW`` may still be FAILED; a Failed one carries
    its output in the failure). Called for closed runs only: with their ``run_id`` the answer
    is read once and kept (``with_output=False``: only the state is wanted)."""
    key = _run_key(client, execution_id, run_id)
    if key is not None:
        output = _OUTPUTS.get(key)
        if output is not None:
            return output.state.value, output
        state = _STATES.get(key)
        if state is not None and not with_output:
            return state, None

    async def read() -> tuple[str | None, RunOutput | None]:
        handle = client.get_workflow_handle(execution_id, run_id=run_id)
        try:
            raw = await workflow_output(handle, follow_runs=False, rpc_timeout=RPC_TIMEOUT)
            output = RunOutput.from_dict(raw)
        except Exception:   # no result (yet), or not a playbook's output: not kept
            return None, None
        if key is not None:
            _STATES.put(key, output.state.value)
            _OUTPUTS.put(key, output)
        return output.state.value, output

    return await shared(("output", client.namespace, execution_id, run_id), read)


async def run_output(client: Client, execution_id: str, run_id: str | None) -> RunOutput | None:
    """A closed run's output (kept per run once read), or None when it has none."""
    _, output = await _result_state(client, execution_id, run_id)
    return output


async def describe(client: Client, execution_id: str,
                   description: WorkflowExecutionDescription | None = None) -> ExecutionInfo:
    """Temporal's description of a playbook execution; :class:`NotFound` for any other id.
    ``description``: one the caller already has (then Temporal is not asked again)."""
    desc = description
    if desc is None:
        try:
            desc = await _handle(client, execution_id).describe(rpc_timeout=RPC_TIMEOUT)
        except RPCError as exc:
            if exc.status in (RPCStatusCode.NOT_FOUND, RPCStatusCode.INVALID_ARGUMENT):
                raise _not_found(execution_id) from None
            raise
    if desc.workflow_type != WORKFLOW_NAME:
        raise _not_found(execution_id)
    status = desc.status or WorkflowExecutionStatus.RUNNING
    result_state = None
    if status in WITH_OUTPUT:
        result_state, _ = await _result_state(client, execution_id, desc.run_id)
    path = desc.typed_search_attributes.get(PLAYBOOK_PATH)
    return ExecutionInfo(execution_id=execution_id, run_id=desc.run_id,
                         state=normalized_state(status, result_state), temporal_status=status.name,
                         started_at=_iso(desc.start_time), ended_at=_iso(desc.close_time),
                         playbook_path=path, task_queue=desc.task_queue)


async def _running(client: Client, execution_id: str, action: str) -> WorkflowHandle[Any, Any]:
    info = await describe(client, execution_id)
    if info.closed:
        raise ExecutionFinished(execution_id, info.state, action)
    return _handle(client, execution_id)


async def _closed_meanwhile(client: Client, execution_id: str, action: str, exc: RPCError) -> Exception:
    """A signal/update raced the end of the run: report the final state, not a gRPC error."""
    if exc.status != RPCStatusCode.NOT_FOUND:
        return exc
    info = await describe(client, execution_id)
    return ExecutionFinished(execution_id, info.state, action)


async def cancel(client: Client, execution_id: str, *, reason: str | None = None, cascade: bool = True,
                 wait_s: float = 5.0) -> dict[str, Any]:
    """Cancel: reason signal, then a Temporal cancel request; wait up to ``wait_s`` for the end.

    Idempotent: cancelling a CANCELLED execution answers its state again. A COMPLETED or
    FAILED execution raises :class:`ExecutionFinished`. Running sub-playbooks (child
    workflows) are cancelled too unless ``cascade`` is false.
    """
    reason = reason or "cancelled through the API"
    info = await describe(client, execution_id)
    if info.closed:
        if info.state == "CANCELLED":
            return {"execution_id": execution_id, "state": "CANCELLED", "cancel_requested": True}
        raise ExecutionFinished(execution_id, info.state, "cancel")
    handle = _handle(client, execution_id)
    try:
        await handle.signal("cancel", args=[reason, cascade], rpc_timeout=RPC_TIMEOUT)
        await handle.cancel(reason=reason, rpc_timeout=RPC_TIMEOUT)
    except RPCError as exc:
        error = await _closed_meanwhile(client, execution_id, "cancel", exc)
        if isinstance(error, ExecutionFinished) and error.state == "CANCELLED":
            return {"execution_id": execution_id, "state": "CANCELLED", "cancel_requested": True}
        raise error from None
    state = "RUNNING"
    deadline = asyncio.get_running_loop().time() + max(wait_s, 0.0)
    while wait_s > 0:
        info = await describe(client, execution_id)
        state = info.state
        if info.closed or asyncio.get_running_loop().time() >= deadline:
            break
        await asyncio.sleep(0.1)
    return {"execution_id": execution_id, "state": state, "cancel_requested": True}


async def pause(client: Client, execution_id: str, *, reason: str | None = None) -> dict[str, Any]:
    """Stop admitting new tokens; in-flight work finishes (``playbook.paused``)."""
    handle = await _running(client, execution_id, "pause")
    try:
        await handle.signal("pause", reason, rpc_timeout=RPC_TIMEOUT)
    except RPCError as exc:
        raise (await _closed_meanwhile(client, execution_id, "pause", exc)) from None
    return {"execution_id": execution_id, "state": "RUNNING", "paused": True}


async def resume(client: Client, execution_id: str) -> dict[str, Any]:
    """Admit tokens again after :func:`pause`."""
    handle = await _running(client, execution_id, "resume")
    try:
        await handle.signal("resume", rpc_timeout=RPC_TIMEOUT)
    except RPCError as exc:
        raise (await _closed_meanwhile(client, execution_id, "resume", exc)) from None
    return {"execution_id": execution_id, "state": "RUNNING", "paused": False}


async def patch_ctx(client: Client, execution_id: str, patch: dict[str, Any]) -> dict[str, Any]:
    """Merge ``patch`` into ctx (a Temporal update); pending admission is re-evaluated.

    Returns the new ctx. A patch the workflow's validator refuses raises :class:`Rejected`.
    """
    handle = await _running(client, execution_id, "patch the ctx of")
    try:
        ctx: dict[str, Any] = await handle.execute_update("patch_ctx", patch, rpc_timeout=RPC_TIMEOUT)
        return ctx
    except WorkflowUpdateFailedError as exc:
        cause = exc.cause
        message = getattr(cause, "message", None) or str(cause or exc)
        if "not running" in message:
            info = await describe(client, execution_id)
            raise ExecutionFinished(execution_id, info.state, "patch the ctx of") from None
        raise Rejected(f"ctx patch rejected: {message}") from None
    except RPCError as exc:
        raise (await _closed_meanwhile(client, execution_id, "patch the ctx of", exc)) from None


# ------------------------------------------------------------------ listing

_STATE_QUERY = {
    "RUNNING": "ExecutionStatus = 'Running'",
    "PENDING": "ExecutionStatus = 'Running'",
    "COMPLETED": "ExecutionStatus = 'Completed'",
    # a playbook that ends FAILED closes Failed; one started before that change completed
    # normally with a FAILED output, so Completed ones are read too (and filtered by output)
    "FAILED": "(ExecutionStatus = 'Failed' OR ExecutionStatus = 'TimedOut' OR ExecutionStatus = 'Completed')",
    "CANCELLED": "(ExecutionStatus = 'Canceled' OR ExecutionStatus = 'Terminated')",
}


def _quote(value: str) -> str:
    if "'" in value or "\\" in value or any(ord(c) < 0x20 or ord(c) == 0x7f for c in value):
        raise ValueError(f"{value!r}: quotes, backslashes and control characters are not allowed in a filter")
    return f"'{value}'"


def visibility_query(*, state: str | None = None, playbook_path: str | None = None,
                     started_after: datetime | None = None, started_before: datetime | None = None,
                     with_path_attribute: bool = True, playbook_version: str | None = None,
                     playbook_hash: str | None = None, schedule: str | None = None) -> str:
    """The Temporal visibility query for a filter (only playbook executions).
    ``with_path_attribute``: the namespace has all our search attributes registered."""
    parts = [f"WorkflowType = {_quote(WORKFLOW_NAME)}"]
    if state:
        if state not in _STATE_QUERY:
            raise ValueError(f"unknown state {state!r}: use one of {', '.join(_STATE_QUERY)}")
        parts.append(_STATE_QUERY[state])
    for key, value in ((PLAYBOOK_PATH, playbook_path), (PLAYBOOK_VERSION, playbook_version),
                       (PLAYBOOK_HASH, playbook_hash)):
        if not value:
            continue
        if not with_path_attribute:
            raise ValueError(f"filtering by {key.name} needs our search attributes on this Temporal server: "
                             "register them with `noetl-temporal setup` (or temporal operator search-attribute "
                             f"create --name {key.name} --type Keyword)")
        parts.append(f"{key.name} = {_quote(value)}")
    if schedule:   # Temporal's own attribute on the runs a schedule starts (docs/schedules.md)
        parts.append(f"TemporalScheduledById = {_quote(schedule)}")
    for op, when in ((">=", started_after), ("<=", started_before)):
        if when is not None:
            if when.tzinfo is None:
                raise ValueError("give times with a timezone, e.g. 2025-01-31T12:00:00Z")
            parts.append(f"StartTime {op} {_quote(when.isoformat())}")
    return " AND ".join(parts)


async def list_executions(client: Client, *, state: str | None = None, playbook_path: str | None = None,
                          started_after: datetime | None = None, started_before: datetime | None = None,
                          page_size: int = 20, page_token: bytes | None = None,
                          with_path_attribute: bool = True, playbook_version: str | None = None,
                          playbook_hash: str | None = None,
                          schedule: str | None = None) -> tuple[list[dict[str, Any]], bytes | None]:
    """One page of executions, newest first, and the token of the next page (or None).

    Uses Temporal visibility (eventually consistent: a just-started execution can take
    a moment to appear). COMPLETED/FAILED are told apart by the workflow's output, so a
    page filtered by one of them can hold fewer than ``page_size`` items.
    """
    query = visibility_query(state=state, playbook_path=playbook_path, started_after=started_after,
                             started_before=started_before, with_path_attribute=with_path_attribute,
                             playbook_version=playbook_version, playbook_hash=playbook_hash, schedule=schedule)

    async def fetch() -> tuple[list[Any], bytes | None]:
        iterator = client.list_workflows(query, page_size=page_size, next_page_token=page_token,
                                         rpc_timeout=RPC_TIMEOUT)
        await iterator.fetch_next_page()
        return list(iterator.current_page or []), iterator.next_page_token

    # the same page asked for while it is being read: one visibility call (it is eventually
    # consistent anyway); nothing is kept once it returns
    page, next_token = await shared(("list", client.namespace, query, page_size, page_token), fetch)
    gate = asyncio.Semaphore(8)

    async def item(wf: Any) -> dict[str, Any]:
        status = wf.status or WorkflowExecutionStatus.RUNNING
        result_state = None
        if status in WITH_OUTPUT:
            async with gate:
                result_state, _ = await _result_state(client, wf.id, wf.run_id, with_output=False)
        return {"execution_id": wf.id, "state": normalized_state(status, result_state),
                "temporal_status": status.name, "started_at": _iso(wf.start_time),
                "ended_at": _iso(wf.close_time), "playbook_path": wf.typed_search_attributes.get(PLAYBOOK_PATH),
                "playbook_name": wf.typed_search_attributes.get(PLAYBOOK_NAME),
                "playbook_version": wf.typed_search_attributes.get(PLAYBOOK_VERSION),
                "playbook_sha256": wf.typed_search_attributes.get(PLAYBOOK_HASH)}

    items = await asyncio.gather(*(item(wf) for wf in page))
    if state in ("COMPLETED", "FAILED"):
        items = [i for i in items if i["state"] == state]
    return list(items), next_token


# ------------------------------------------------------------------ reading what an execution holds

async def read_input(client: Client, execution_id: str, run_id: str | None = None) -> RunInput:
    """The workflow input (pinned playbook, payload, source) from the first history event.
    With ``run_id`` (a run's input never changes) it is read once per run and kept."""
    key = _run_key(client, execution_id, run_id)
    kept = _INPUTS.get(key) if key else None
    if kept is not None:
        return kept  # type: ignore[no-any-return]  # _Kept holds values of any type

    async def read() -> RunInput:
        handle = client.get_workflow_handle(execution_id, run_id=run_id)
        try:
            async for event in handle.fetch_history_events(page_size=1, rpc_timeout=RPC_TIMEOUT):
                attrs = event.workflow_execution_started_event_attributes
                values = await client.data_converter.decode(attrs.input.payloads, [RunInput])
                run_input: RunInput = values[0]
                if key is not None:
                    _INPUTS.put(key, run_input)
                return run_input
        except RPCError as exc:
            if exc.status in (RPCStatusCode.NOT_FOUND, RPCStatusCode.INVALID_ARGUMENT):
                raise _not_found(execution_id) from None
            raise
        raise _not_found(execution_id)

    return await shared(("input", client.namespace, execution_id, run_id), read)


def pinned_playbook(inp: RunInput) -> dict[str, Any]:
    """The definition an execution runs, from its input: the one it started with, whatever
    happened to the file or the catalog since (docs/schedules.md, "Versions")."""
    definition = inp.playbook or {}
    meta = definition.get("metadata") or {}
    catalog_version = None
    if inp.source and inp.source.startswith("catalog:") and "@" in inp.source:
        tail = inp.source.rsplit("@", 1)[1]
        catalog_version = int(tail) if tail.isdigit() else None
    return {"name": meta.get("name"), "path": meta.get("path") or meta.get("name"), "source": inp.source,
            "catalog_version": catalog_version, "version": labels.playbook_version(definition, catalog_version),
            "sha256": labels.definition_hash(definition)}


async def waiting_approvals(client: Client, execution_id: str) -> list[dict[str, Any]] | None:
    """The approve tasks waiting for a person, from the workflow's ``status`` query; None when
    it does not answer in time (docs/approvals.md)."""
    try:
        status = await _handle(client, execution_id).query("status", rpc_timeout=QUERY_TIMEOUT)
    except Exception:   # no worker answered: the page draws no form, as for a finished run
        return None
    waiting = status.get("waiting")
    return list(waiting) if waiting else None


def shown_state(info: ExecutionInfo, detail: dict[str, Any]) -> str:
    """The state the API shows: Temporal's reading once closed, the workflow's own while open."""
    return info.state if info.closed else str(detail.get("state") or "RUNNING")


async def read_detail(client: Client, execution_id: str, *, ask_workflow: bool = True,
                      description: WorkflowExecutionDescription | None = None) -> tuple[ExecutionInfo, dict[str, Any]]:
    """Temporal's description plus the workflow's own ``detail`` (ctx, steps, result, timing).

    Live executions answer the ``detail`` query. A completed one answers from its output.
    Other closed ones need a worker to answer queries; without one the detail is empty
    (``{}``) and callers fall back to the description. ``ask_workflow=False``: no worker
    polls (``liveness``), so no query is sent (it would only wait out its timeout).
    ``description``: Temporal's, when the caller already has it (read once per request).
    """
    info = await describe(client, execution_id, description)
    handle = _handle(client, execution_id)
    if WorkflowExecutionStatus[info.temporal_status] in WITH_OUTPUT:
        _, output = await _result_state(client, execution_id, info.run_id)
        if output is not None:
            return info, replace(output, paused=False).to_dict()
    if not ask_workflow:
        return info, {}
    try:
        # short either way: a live worker answers in milliseconds, a lost one never does
        detail = await handle.query("detail", rpc_timeout=QUERY_TIMEOUT)
    except Exception:
        detail = {}
    return info, detail or {}
