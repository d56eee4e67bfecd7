"""Engine state to JSON and back, for continue-as-new.

A long execution hands its state to a fresh workflow run before Temporal's history grows
too large. The snapshot holds the marking (tokens, joins), every running step (its
pipelines, loop progress, in-flight task ids), ctx, results and counters. The event list
itself is not carried: earlier events are in the event store, and the log continues its
``seq`` from where it stopped (``EventLog.base``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..dsl.models import Playbook
from ..status import ExecutionStatus, StepStatus, WorkflowStatus
from .events import EventLog
from .graph import StepGraph
from .state import ExecutionState, LoopRun, PipelineRun, StepRun, Token

__all__ = ["snapshot", "restore"]

_SKIP = {"playbook", "graph", "log", "tokens", "join_buffers", "step_runs", "pipelines"}


def _pipe(data: dict[str, Any]) -> PipelineRun:
    return PipelineRun(**data)


def _step_run(data: dict[str, Any]) -> StepRun:
    data = dict(data)
    data["status"] = StepStatus(data["status"])
    data["main"] = _pipe(data["main"]) if data.get("main") else None
    if data.get("loop"):
        loop = dict(data["loop"])
        loop["running"] = set(loop["running"])
        data["loop"] = LoopRun(**loop)
    data["iterations"] = {int(k): _pipe(v) for k, v in (data.get("iterations") or {}).items()}
    return StepRun(**data)


def _plain_run(run: StepRun) -> dict[str, Any]:
    data = dataclasses.asdict(run)
    data["status"] = run.status.value
    if run.loop is not None:
        data["loop"]["running"] = sorted(run.loop.running)
    data["iterations"] = {str(k): v for k, v in data["iterations"].items()}
    return data


def snapshot(state: ExecutionState) -> dict[str, Any]:
    """Everything ``restore`` needs, as JSON values."""
    fields = {f.name: getattr(state, f.name) for f in dataclasses.fields(state) if f.name not in _SKIP}
    fields["status"] = state.status.value
    fields["workflow_status"] = state.workflow_status.value
    return {
        "fields": fields,
        "log": {"base": state.log.seq, "parent_execution_id": state.log.parent_execution_id},
        "tokens": [dataclasses.asdict(t) for t in state.tokens],
        "join_buffers": {k: [dataclasses.asdict(t) for t in v] for k, v in state.join_buffers.items()},
        "step_runs": {k: _plain_run(r) for k, r in state.step_runs.items()},
        # in-flight task -> which pipeline waits for it (resolved back to the same objects)
        "pipelines": {task_id: [pipe.step_run_id, pipe.iteration] for task_id, pipe in state.pipelines.items()},
    }


def restore(playbook: Playbook, data: dict[str, Any]) -> ExecutionState:
    fields = dict(data["fields"])
    fields["status"] = ExecutionStatus(fields["status"])
    fields["workflow_status"] = WorkflowStatus(fields["workflow_status"])
    log = EventLog(fields["execution_id"])
    log.base = int(data["log"]["base"])
    log.parent_execution_id = data["log"].get("parent_execution_id")
    entry = playbook.executor.spec.entry_step or playbook.workflow[0].step
    state = ExecutionState(playbook=playbook, graph=StepGraph(playbook, entry), log=log, **fields)
    state.tokens = [Token(**t) for t in data["tokens"]]
    state.join_buffers = {k: [Token(**t) for t in v] for k, v in data["join_buffers"].items()}
    state.step_runs = {k: _step_run(v) for k, v in data["step_runs"].items()}
    for task_id, (run_id, iteration) in data["pipelines"].items():
        run = state.step_runs[run_id]
        state.pipelines[task_id] = run.main if iteration is None else run.iterations[int(iteration)]
    return state
