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
import sys
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from ..dsl import load_playbook
from ..errors import RunFailed
from .connect import Target
from .end_to_end import ProgressPrinter, RunReport, run_playbook

__all__ = ["run", "run_async", "outcome", "RUNTIMES", "NOETL_TIME_FORMAT"]

# ExecutionStatus -> the envelope's `status` (NoETL says "ok" for a run that completed).
_STATUS = {"COMPLETED": "ok", "FAILED": "error", "CANCELLED": "cancelled"}


#: NoETL's ``runtime=`` values. Where a run happens here is ``address=`` (a cluster) or,
#: without one, an embedded dev server, whatever ``runtime`` says (docs/migrating-from-noetl.md).
RUNTIMES = ("local", "distributed", "auto")


def run(playbook: str | os.PathLike[str], *, runtime: str = "local", variables: dict[str, Any] | None = None,
        target: str | None = None, verbose: bool = False, quiet: bool = True,
        facts_out: str | os.PathLike[str] | None = None, raise_on_failure: bool = False,
        address: str | None = None, namespace: str = "default", task_queue: str | None = None) -> dict[str, Any]:
    """Run ``playbook`` to its end and return NoETL's outcome envelope.

    NoETL's signature (``noetl.run`` of NoETL 5.3.2), then this project's keywords:

    * ``variables`` are deep-merged over the playbook's ``workload`` (NoETL's ``--set``), kept
      as the JSON values they are (NoETL stringifies them).
    * ``target`` starts at that step (NoETL's ``--target``).
    * ``quiet`` (default True, as NoETL's): no progress; ``quiet=False`` prints the progress
      lines of ``noetl-temporal run`` on stderr, ``verbose=True`` every event with its payload.
    * ``runtime``: accepted for NoETL's calls (``"local"``, ``"distributed"``, ``"auto"``) and
      otherwise ignored: ``address`` says where it runs. Another value raises ``ValueError``.
    * ``facts_out``: accepted and ignored: it collects NoETL's ``kind: provider`` facts, a
      tool kind this project does not run, so there are none to write.
    * ``raise_on_failure``: NoETL's ``noetl.run`` raises ``RuntimeError`` when the run fails;
      with True so does this call (:class:`~noetl_temporal.errors.RunFailed`, a
      ``RuntimeError`` carrying the envelope as ``outcome``). By default a run that fails
      returns ``status: "error"`` with ``error`` set.

    ``address`` runs on that Temporal cluster with an in-process worker; without it an
    embedded dev server is started for the run. An invalid playbook raises
    :class:`~noetl_temporal.errors.PlaybookInvalid` (its located diagnostics). Inside an
    event loop, await :func:`run_async` instead.
    """
    return asyncio.run(run_async(playbook, runtime=runtime, variables=variables, target=target, verbose=verbose,
                                 quiet=quiet, facts_out=facts_out, raise_on_failure=raise_on_failure,
                                 address=address, namespace=namespace, task_queue=task_queue))


async def run_async(playbook: str | os.PathLike[str], *, runtime: str = "local",
                    variables: dict[str, Any] | None = None, target: str | None = None, verbose: bool = False,
                    quiet: bool = True, facts_out: str | os.PathLike[str] | None = None,
                    raise_on_failure: bool = False, address: str | None = None, namespace: str = "default",
                    task_queue: str | None = None) -> dict[str, Any]:
    del facts_out   # NoETL's provider facts: no kind here emits them (see run)
    if runtime not in RUNTIMES:
        raise ValueError(f"runtime={runtime!r} is not one of NoETL's runtimes ({', '.join(RUNTIMES)}); here it "
                         "does not choose where the run happens: pass address='HOST:PORT' for a Temporal "
                         "cluster, or nothing for an embedded dev server")
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
    printer = ProgressPrinter(sys.stderr, verbose=True) if verbose else \
        None if quiet else ProgressPrinter(sys.stderr)
    report = await run_playbook(loaded, target=where, payload=dict(variables or {}), source=path, on_event=printer)
    envelope = outcome(report, playbook_name=loaded.metadata.name or loaded.metadata.path or "", playbook_path=path)
    if raise_on_failure and report.state != "COMPLETED":
        raise RunFailed(f"playbook {path} ended {report.state}: {report.error}", outcome=envelope)
    return envelope


def outcome(report: RunReport, *, playbook_name: str, playbook_path: str) -> dict[str, Any]:
    """NoETL's outcome envelope for a finished run, plus this project's ``execution_id`` and
    ``state`` (the execution state of docs/status.md)."""
    started, completed = _time(report, "playbook.started"), _time(report, "playbook.finished",
                                                                   "execution.cancelled")
    failed = report.state != "COMPLETED"
    executed = _executed_steps(report)
    results = {name: report.steps[name].get("result") for name in executed}
    return {
        "status": _STATUS.get(report.state, report.state.lower()),
        "playbook_name": playbook_name,
        "playbook_path": playbook_path,
        "started_at": _noetl_time(started),
        "completed_at": _noetl_time(completed),
        "duration_seconds": _seconds(started, completed),
        "executed_steps": executed,
        "step_results": results,
        "final_result": results[executed[-1]] if executed else None,
        # NoETL's envelope has `error` only when the run failed
        **({"error": report.error} if failed else {}),
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


#: NoETL's envelope times: UTC to the second, ``Z`` (``2026-11-27T14:50:13Z``)
NOETL_TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


def _noetl_time(timestamp: str | None) -> str | None:
    """An event's time (milliseconds) as NoETL writes the envelope's: to the second, cut, not
    rounded, so ``started_at`` never moves past the event. ``duration_seconds`` keeps the
    events' precision."""
    return _parse(timestamp).astimezone(UTC).strftime(NOETL_TIME_FORMAT) if timestamp else None


def _parse(timestamp: str) -> datetime:
    return datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
