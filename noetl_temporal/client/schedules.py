"""Schedules of playbooks, as Temporal Schedules: create, list, describe, pause, trigger,
backfill, delete. The CLI (``noetl-temporal schedule``) and the API (``/schedules``) call
these functions and only translate the typed errors:

* :class:`~noetl_temporal.errors.NotFound`   no schedule of that name (HTTP 404)
* :class:`ScheduleExists`                      the name is taken (HTTP 409)
* :class:`ScheduleInvalid`                     a bad cron expression, duration, overlap or time (HTTP 422)

Why Temporal Schedules and not a table polled by a process of ours: the server keeps the
spec, the overlap policy, the catch-up window and the jitter durably, shows them on the
Temporal UI's schedules page, and starts the runs itself (no process of ours must be up).

What a schedule starts is exactly what a normal start sends: its action is built by
``starts.execution_start`` (the same input with every current behaviour, summary,
details, memo, search attributes and execution timeout). One action starts every run, so
its input's execution id is :data:`~.types.EXECUTION_ID_FROM_WORKFLOW` and each run takes
its workflow id, ``<schedule>-<scheduled time>``. The playbook travels in the action: a
schedule is pinned to the definition it was created with, like an execution
(docs/schedules.md).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

from temporalio.client import (
    Client,
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleAlreadyRunningError,
    ScheduleBackfill,
    ScheduleHandle,
    ScheduleIntervalSpec,
    ScheduleOverlapPolicy,
    SchedulePolicy,
    ScheduleSpec,
    ScheduleState,
)
from temporalio.service import RPCError, RPCStatusCode

from ..dsl.models import Playbook, playbook_definition
from ..engine.payload_size import PAYLOAD_FIX, payload_refusal
from ..errors import NoetlError, NotFound, PayloadTooLarge
from ..workflow import labels
from ..workflow.starts import execution_start
from ..workflow.subplaybooks import located_source
from ..workflow.types import DEFAULT_TASK_QUEUE, EXECUTION_ID_FROM_WORKFLOW, WORKFLOW_NAME, RunInput
from .control import search_attributes_available
from .redact import redact

__all__ = ["ScheduleExists", "ScheduleInvalid", "OVERLAP_POLICIES", "parse_duration", "parse_time",
           "check_name", "create_schedule", "list_schedules", "describe_schedule", "pause_schedule",
           "unpause_schedule", "trigger_schedule", "backfill_schedule", "delete_schedule", "scheduled_runs"]

RPC_TIMEOUT = timedelta(seconds=10)
#: the shortest interval: Temporal Schedules work at second granularity, and a shorter one
#: would only start executions faster than anything could use them
MIN_INTERVAL = timedelta(seconds=1)

#: the CLI's and the API's spelling -> Temporal's policy (docs/schedules.md says what each does)
OVERLAP_POLICIES: dict[str, ScheduleOverlapPolicy] = {
    "skip": ScheduleOverlapPolicy.SKIP,
    "buffer_one": ScheduleOverlapPolicy.BUFFER_ONE,
    "buffer_all": ScheduleOverlapPolicy.BUFFER_ALL,
    "cancel_other": ScheduleOverlapPolicy.CANCEL_OTHER,
    "terminate_other": ScheduleOverlapPolicy.TERMINATE_OTHER,
    "allow_all": ScheduleOverlapPolicy.ALLOW_ALL,
}
_OVERLAP_NAMES = {policy: name for name, policy in OVERLAP_POLICIES.items()}

#: the schedule's own memo: what it runs, for ``list`` and ``describe`` without decoding the action
_MEMO = "noetl.schedule"

#: a schedule name is its Temporal schedule id and a URL path segment: kept plain
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$")
_DURATION = re.compile(r"^\s*(?:(\d+(?:\.\d+)?)\s*d)?\s*(?:(\d+(?:\.\d+)?)\s*h)?\s*(?:(\d+(?:\.\d+)?)\s*m(?!s))?"
                       r"\s*(?:(\d+(?:\.\d+)?)\s*s)?\s*(?:(\d+(?:\.\d+)?)\s*ms)?\s*$")


class ScheduleExists(NoetlError):
    """A schedule of that name exists already (HTTP 409)."""


class ScheduleInvalid(NoetlError):
    """A schedule's spec or request cannot be used: a bad cron expression, duration, overlap
    policy, time or name (HTTP 422)."""


def check_name(name: str) -> str:
    if not _NAME.match(name):
        raise ScheduleInvalid(f"schedule name {name!r} is not usable",
                              fix="use letters, digits, '.', '_' and '-' (at most 200, starting with a letter "
                                  "or digit)")
    return name


def parse_duration(text: str | float | int, what: str = "duration") -> timedelta:
    """``90``, ``90s``, ``1.5s``, ``500ms``, ``10m``, ``2h``, ``1d``, ``1h30m``: a positive duration."""
    if isinstance(text, int | float) and not isinstance(text, bool):
        seconds = float(text)
    else:
        raw = str(text).strip()
        match = _DURATION.match(raw) if raw else None
        if raw.replace(".", "", 1).isdigit():
            seconds = float(raw)
        elif match and any(match.groups()):
            d, h, m, s, ms = (float(g) if g else 0.0 for g in match.groups())
            seconds = d * 86400 + h * 3600 + m * 60 + s + ms / 1000
        else:
            raise ScheduleInvalid(f"{what} {text!r} is not a duration",
                                  fix="write it like 30s, 500ms, 10m, 2h, 1d or 1h30m (a bare number is seconds)")
    if seconds <= 0:
        raise ScheduleInvalid(f"{what} {text!r} must be positive", fix="give a duration above zero, e.g. 1s")
    return timedelta(seconds=seconds)


def parse_time(text: str | datetime, what: str = "time") -> datetime:
    """An RFC 3339 time (no offset: UTC)."""
    if isinstance(text, datetime):
        when = text
    else:
        try:
            when = datetime.fromisoformat(str(text).strip().replace("z", "Z"))
        except ValueError:
            raise ScheduleInvalid(f"{what} {text!r} is not a time",
                                  fix="write it as RFC 3339, e.g. 2026-01-31T12:00:00Z") from None
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)


def _overlap(name: str | None, default: str = "skip") -> ScheduleOverlapPolicy:
    key = (name or default).strip().lower().replace("-", "_")
    if key not in OVERLAP_POLICIES:
        raise ScheduleInvalid(f"unknown overlap policy {name!r}", fix=f"use one of {', '.join(OVERLAP_POLICIES)}")
    return OVERLAP_POLICIES[key]


def _iso(value: datetime | None) -> str | None:
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z") if value else None


def _seconds(value: timedelta | None) -> float | None:
    return value.total_seconds() if value is not None else None


def _not_found(name: str) -> NotFound:
    return NotFound(f"no schedule {name!r}", fix="`noetl-temporal schedule list` (GET /schedules) lists them")


async def create_schedule(client: Client, name: str, playbook: Playbook, *, cron: list[str] | None = None,
                          every: timedelta | None = None, payload: dict[str, Any] | None = None,
                          task_queue: str = DEFAULT_TASK_QUEUE, source: str | None = None,
                          version: int | None = None, overlap: str | None = None,
                          catchup_window: timedelta | None = None, jitter: timedelta | None = None,
                          paused: bool = False, note: str | None = None, search_attributes: bool | None = None,
                          execution_timeout_s: float | None = None, heartbeat_timeout_s: float = 30.0,
                          definition: dict[str, Any] | None = None, digest: str | None = None,
                          time_zone: str | None = None) -> dict[str, Any]:
    """Create schedule ``name`` running ``playbook`` (validated by the caller) on ``cron``
    expressions and/or ``every`` interval; its description. ``search_attributes=None``: set
    ours on each run when the namespace has them registered."""
    check_name(name)
    if not cron and every is None:
        raise ScheduleInvalid(f"schedule {name!r} has no times", fix="give a cron expression (--cron) or an "
                                                                     "interval (--every)")
    if every is not None and every < MIN_INTERVAL:
        raise ScheduleInvalid(f"interval {every.total_seconds():g}s of schedule {name!r} is shorter than "
                              f"{MIN_INTERVAL.total_seconds():g}s", fix="give --every 1s or more")
    refused = payload_refusal(payload)
    if refused is not None:
        raise PayloadTooLarge(refused, fix=PAYLOAD_FIX)
    policy = _overlap(overlap)
    source = located_source(source)
    definition = definition if definition is not None else playbook_definition(playbook)
    digest = digest or labels.definition_hash(definition)
    if search_attributes is None:
        search_attributes = await search_attributes_available(client)
    plan = execution_start(definition, execution_id=EXECUTION_ID_FROM_WORKFLOW, payload=payload, source=source,
                           search_attributes=search_attributes,
                           timeout_s=execution_timeout_s or playbook.executor.spec.timeout_s,
                           digest=digest, version=version, heartbeat_timeout_s=heartbeat_timeout_s)
    options = dict(plan.options)
    options["id"] = name   # Temporal appends "-<scheduled time>" for each run
    if "search_attributes" in options:
        options["typed_search_attributes"] = options.pop("search_attributes")
    action = ScheduleActionStartWorkflow(WORKFLOW_NAME, plan.input, task_queue=task_queue, **options)
    spec = ScheduleSpec(cron_expressions=list(cron or []),
                        intervals=[ScheduleIntervalSpec(every=every)] if every is not None else [],
                        jitter=jitter, time_zone_name=time_zone)
    pb_name, path = labels.playbook_label(definition, source)
    memo = {_MEMO: {"playbook_name": pb_name, "playbook_path": path, "source": source,
                    "playbook_version": labels.playbook_version(definition, version), "playbook_sha256": digest}}
    schedule = Schedule(action=action, spec=spec,
                        policy=SchedulePolicy(overlap=policy, catchup_window=catchup_window),
                        state=ScheduleState(paused=paused, note=note))
    try:
        await client.create_schedule(name, schedule, memo=memo, rpc_timeout=RPC_TIMEOUT)
    except ScheduleAlreadyRunningError:
        raise ScheduleExists(f"a schedule named {name!r} exists already",
                             fix=f"pick another name, or delete it first (`noetl-temporal schedule delete {name}`)"
                             ) from None
    except RPCError as exc:
        if exc.status == RPCStatusCode.INVALID_ARGUMENT:
            raise ScheduleInvalid(f"Temporal refused schedule {name!r}: {exc.message}",
                                  fix="check the cron expression (five fields, e.g. '*/5 * * * *', or "
                                      "@hourly/@daily) and the durations") from None
        raise
    return await describe_schedule(client, name)


def _handle(client: Client, name: str) -> ScheduleHandle:
    return client.get_schedule_handle(name)


async def _call(name: str, coro: Any) -> Any:
    """An RPC on one schedule: NOT_FOUND becomes :class:`NotFound`."""
    try:
        return await coro
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND:
            raise _not_found(name) from None
        if exc.status == RPCStatusCode.INVALID_ARGUMENT:
            raise ScheduleInvalid(f"Temporal refused the request for schedule {name!r}: {exc.message}") from None
        raise


def _spec_view(spec: ScheduleSpec) -> dict[str, Any]:
    return {"cron": list(spec.cron_expressions),
            "every_s": [_seconds(i.every) for i in spec.intervals],
            "jitter_s": _seconds(spec.jitter), "time_zone": spec.time_zone_name or None}


async def describe_schedule(client: Client, name: str) -> dict[str, Any]:
    """What the schedule runs, when, its policies, state, recent runs and next times."""
    check_name(name)
    desc = await _call(name, _handle(client, name).describe(rpc_timeout=RPC_TIMEOUT))
    action = desc.schedule.action
    if not isinstance(action, ScheduleActionStartWorkflow) or action.workflow != WORKFLOW_NAME:
        raise _not_found(name)   # someone else's schedule: not a playbook's
    memo = await desc.memo_value(_MEMO, {})
    payload: dict[str, Any] | None = None
    try:
        [inp] = await client.data_converter.decode(action.args, [RunInput])
        payload = redact(inp.payload)   # shown as /variables shows a workload: secrets masked
    except Exception:   # an action we cannot read (another codec): the memo still names it
        pass
    info, state = desc.info, desc.schedule.state
    return {
        "name": name, **{key: memo.get(key) for key in ("playbook_name", "playbook_path", "playbook_version",
                                                       "playbook_sha256", "source")},
        "payload": payload, "task_queue": action.task_queue, **_spec_view(desc.schedule.spec),
        "overlap": _OVERLAP_NAMES.get(desc.schedule.policy.overlap, str(desc.schedule.policy.overlap)),
        "catchup_window_s": _seconds(desc.schedule.policy.catchup_window),
        "paused": state.paused, "note": state.note or None,
        "actions": info.num_actions, "skipped_overlap": info.num_actions_skipped_overlap,
        "missed_catchup_window": info.num_actions_missed_catchup_window,
        "running": [r.workflow_id for r in info.running_actions],
        "recent": [{"execution_id": getattr(r.action, "workflow_id", None), "scheduled_at": _iso(r.scheduled_at),
                    "started_at": _iso(r.started_at)} for r in info.recent_actions],
        "next": [_iso(t) for t in info.next_action_times],
        "created_at": _iso(info.created_at),
    }


async def list_schedules(client: Client) -> list[dict[str, Any]]:
    """Every playbook schedule of the namespace (others' schedules are left out), by name.

    Read from visibility: a schedule created a moment ago can take a moment to appear."""
    out = []
    async for entry in await client.list_schedules(rpc_timeout=RPC_TIMEOUT):
        sched = entry.schedule
        if sched is None or getattr(sched.action, "workflow", None) != WORKFLOW_NAME:
            continue
        memo = await entry.memo_value(_MEMO, {})
        out.append({"name": entry.id, "playbook_name": memo.get("playbook_name"),
                    "playbook_path": memo.get("playbook_path"), "playbook_version": memo.get("playbook_version"),
                    **_spec_view(sched.spec), "paused": sched.state.paused, "note": sched.state.note or None,
                    "recent": [_iso(r.scheduled_at) for r in (entry.info.recent_actions if entry.info else [])],
                    "next": [_iso(t) for t in (entry.info.next_action_times if entry.info else [])]})
    return sorted(out, key=lambda item: item["name"])


async def _ours(client: Client, name: str) -> ScheduleHandle:
    await describe_schedule(client, name)   # NotFound for an unknown name or someone else's schedule
    return _handle(client, name)


async def pause_schedule(client: Client, name: str, note: str | None = None) -> dict[str, Any]:
    handle = await _ours(client, name)
    await _call(name, handle.pause(note=note or "paused by noetl-temporal", rpc_timeout=RPC_TIMEOUT))
    return await describe_schedule(client, name)


async def unpause_schedule(client: Client, name: str, note: str | None = None) -> dict[str, Any]:
    handle = await _ours(client, name)
    await _call(name, handle.unpause(note=note or "unpaused by noetl-temporal", rpc_timeout=RPC_TIMEOUT))
    return await describe_schedule(client, name)


async def trigger_schedule(client: Client, name: str, overlap: str | None = None) -> None:
    """Start one run now; ``overlap``: default the schedule's own policy."""
    handle = await _ours(client, name)
    policy = _overlap(overlap) if overlap else None
    await _call(name, handle.trigger(overlap=policy, rpc_timeout=RPC_TIMEOUT))


async def backfill_schedule(client: Client, name: str, start: datetime, end: datetime,
                            overlap: str | None = "allow_all") -> None:
    """Start the runs the schedule would have started between ``start`` and ``end``.
    ``overlap``: default ``allow_all`` (a backfill's runs are started together, so under
    ``skip`` all but the first would be skipped)."""
    if end <= start:
        raise ScheduleInvalid(f"backfill end {_iso(end)} is not after its start {_iso(start)}",
                              fix="give --start before --end")
    handle = await _ours(client, name)
    await _call(name, handle.backfill(ScheduleBackfill(start_at=start, end_at=end, overlap=_overlap(overlap)),
                                      rpc_timeout=RPC_TIMEOUT))


async def delete_schedule(client: Client, name: str) -> None:
    """Delete the schedule; the runs it started go on."""
    handle = await _ours(client, name)
    await _call(name, handle.delete(rpc_timeout=RPC_TIMEOUT))


async def scheduled_runs(client: Client, name: str, *, limit: int = 100) -> list[str]:
    """Execution ids of the runs schedule ``name`` started (visibility: eventually consistent)."""
    check_name(name)
    ids: list[str] = []
    query = f"TemporalScheduledById = '{name}' AND WorkflowType = '{WORKFLOW_NAME}'"
    async for wf in client.list_workflows(query, page_size=limit, rpc_timeout=RPC_TIMEOUT):
        ids.append(wf.id)
        if len(ids) >= limit:
            break
    return ids
