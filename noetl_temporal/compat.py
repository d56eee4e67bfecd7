"""NoETL's Python entry point, here: ``noetl_temporal.run(path, variables=...)``.

NoETL's package (PyPI ``noetl``) runs a playbook with ``noetl.run("p.yaml", variables={...})``
and returns an outcome envelope: ``status``, ``playbook_name``, ``playbook_path``,
``started_at``, ``completed_at``, ``duration_seconds``, ``executed_steps``,
``step_results``, ``final_result`` and ``error``. This module gives a NoETL user the same
call and the same keys, run on Temporal (an embedded dev server unless ``address`` is
given); docs/migrating-from-noetl.md says what differs and why.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import replace
from datetime import datetime
from typing import Any

from .dsl import load_playbook
from .runner import RunReport, run_playbook
from .temporal.client import Target

__all__ = ["run", "run_async", "outcome"]

# ExecutionStatus -> the envelope's `status` (NoETL says "ok" for a run that completed).
_STATUS = {"COMPLETED": "ok", "FAILED": "error", "CANCELLED": "cancelled"}


def run(playbook: str | os.PathLike[str], *, variables: dict[str, Any] | None = None,
        target: str | None = None, address: str | None = None, namespace: str = "default",
        task_queue: str | None = None) -> dict[str, Any]:
    """Run ``playbook`` to its end and return NoETL's outcome envelope.

    ``variables`` are deep-merged over the playbook's ``workload`` (NoETL's ``--set``), kept
    as the JSON values they are. ``target`` starts at that step (NoETL's ``--target``).
    ``address`` runs on that Temporal cluster with an in-process worker; without it an
    embedded dev server is started for the run. An invalid playbook raises
    :class:`~noetl_temporal.errors.PlaybookInvalid` (its located diagnostics); a run that
    fails returns ``status: "error"`` with ``error`` set. Inside an event loop, await
    :func:`run_async` instead.
    """
    return asyncio.run(run_async(playbook, variables=variables, target=target, address=address,
                                 namespace=namespace, task_queue=task_queue))


async def run_async(playbook: str | os.PathLike[str], *, variables: dict[str, Any] | None = None,
                    target: str | None = None, address: str | None = None, namespace: str = "default",
                    task_queue: str | None = None) -> dict[str, Any]:
    path = os.fspath(playbook)
    loaded = load_playbook(path).playbook
    if target is not None:
        names = [s.step for s in loaded.workflow]
        if target not in names:
            raise ValueError(f"target {target!r} is not a step of {path} (steps: {', '.join(names)})")
        loaded = loaded.model_copy(deep=True)
        loaded.executor.spec.entry_step = target
    where = Target(address=address, namespace=namespace)
    if task_queue:
        where = replace(where, task_queue=task_queue)
    report = await run_playbook(loaded, target=where, payload=dict(variables or {}), source=path)
    return outcome(report, playbook_name=loaded.metadata.name or loaded.metadata.path or "", playbook_path=path)


def outcome(report: RunReport, *, playbook_name: str, playbook_path: str) -> dict[str, Any]:
    """NoETL's outcome envelope for a finished run, plus this project's ``execution_id`` and
    ``state`` (the execution state of docs/status.md)."""
    started, completed = _time(report, "playbook.started"), _time(report, "playbook.finished",
                                                                   "execution.cancelled")
    executed = _executed_steps(report)
    results = {name: report.steps[name].get("result") for name in executed}
    return {
        "status": _STATUS.get(report.state, report.state.lower()),
        "playbook_name": playbook_name,
        "playbook_path": playbook_path,
        "started_at": started,
        "completed_at": completed,
        "duration_seconds": _seconds(started, completed),
        "executed_steps": executed,
        "step_results": results,
        "final_result": results[executed[-1]] if executed else None,
        "error": report.error if report.state != "COMPLETED" else None,
        "execution_id": report.execution_id,
        "state": report.state,
    }


def _executed_steps(report: RunReport) -> list[str]:
    """Steps in the order they first ended (done or failed); a step that ran twice is listed once."""
    order: list[str] = []
    for event in report.events:
        if event["event_type"] in ("step.done", "step.failed") and event["entity_id"] not in order \
                and event["entity_id"] in report.steps:
            order.append(event["entity_id"])
    return order


def _time(report: RunReport, *types: str) -> str | None:
    return next((e["timestamp"] for e in report.events if e["event_type"] in types), None)


def _seconds(start: str | None, end: str | None) -> float | None:
    if not start or not end:
        return None
    return (_parse(end) - _parse(start)).total_seconds()


def _parse(timestamp: str) -> datetime:
    return datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
