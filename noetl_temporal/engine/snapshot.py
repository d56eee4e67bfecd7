"""Engine state to JSON and back, for continue-as-new.

A long execution hands its state to a fresh workflow run before Temporal's history grows
too large. The snapshot holds the marking (tokens, joins), every running step (its
pipelines, loop progress, in-flight task ids), ctx, results and counters. The event list
itself is not carried: earlier events are in the event store, and the log continues its
``seq`` from where it stopped (``EventLog.base``).
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

from ..dsl.models import Playbook
from .envelopes import ErrorInfo, Outcome
from .event_log import EventLog
from .graph import StepGraph
from .state import ExecutionState, Failure, LoopRun, PipelineRun, StepRecord, StepRun, Token
from .state_machines import LoopState, PipelineState, TokenState
from .status_layers import ExecutionStatus, StepStatus, WorkflowStatus

__all__ = ["snapshot", "restore"]

_SKIP = {"playbook", "graph", "log", "tokens", "join_buffers", "step_runs", "pipelines",
         "task_plans", "skipped_names"}   # derived: rebuilt on first use, or by restore


def _pipe(data: dict[str, Any], parked: bool = False) -> PipelineRun:
    data = dict(data)
    if data.get("last_outcome") is not None:
        data["last_outcome"] = Outcome.from_dict(data["last_outcome"])
    if data.get("error") is not None:
        data["error"] = ErrorInfo.from_dict(data["error"])
    if "state" in data:
        data["state"] = PipelineState(data["state"])
    else:  # a snapshot written before pipelines had a state: its three flags say it
        finished, failed, cancelled = (data.pop(k, False) for k in ("finished", "failed", "cancelled"))
        data["state"] = _legacy_pipe_state(finished, failed, cancelled, data.get("in_flight"), parked)
    return PipelineRun(**data)


def _legacy_pipe_state(finished: bool, failed: bool, cancelled: bool, in_flight: str | None,
                       parked: bool) -> PipelineState:
    if finished and not failed:
        return PipelineState.COMPLETED
    if finished:
        return PipelineState.CANCELLED if cancelled else PipelineState.FAILED
    if in_flight:
        return PipelineState.WAITING
    return PipelineState.PARKED if parked else PipelineState.RUNNING


def _token(data: dict[str, Any]) -> Token:
    data = dict(data)
    if "state" in data:
        data["state"] = TokenState(data["state"])
    else:  # written before tokens had a state
        data["state"] = TokenState.DENIED if data.pop("denied", False) else TokenState.READY
    return Token(**data)


def _loop(data: dict[str, Any], parked: bool) -> LoopRun:
    loop = dict(data)
    loop["running"] = set(loop["running"])
    if "state" in loop:
        loop["state"] = LoopState(loop["state"])
    else:  # written before loops had a state (between inputs a loop never is mid-fill)
        loop.pop("filling", None)
        loop["state"] = LoopState.PARKED if parked else LoopState.WAITING
    return LoopRun(**loop)


def _step_run(data: dict[str, Any], parked_pipes: set[tuple[str, int | None]],
              parked_loops: set[str]) -> StepRun:
    data = dict(data)
    run_id = data["id"]
    data["status"] = StepStatus(data["status"])
    data["main"] = _pipe(data["main"], (run_id, None) in parked_pipes) if data.get("main") else None
    if data.get("loop"):
        data["loop"] = _loop(data["loop"], run_id in parked_loops)
    data["iterations"] = {int(k): _pipe(v, (run_id, int(k)) in parked_pipes)
                          for k, v in (data.get("iterations") or {}).items()}
    return StepRun(**data)


def _plain_run(run: StepRun) -> dict[str, Any]:
    data = _fields(run)
    data["args"] = copy.deepcopy(run.args)
    data["status"] = run.status.value
    data["main"] = _plain_pipe(run.main) if run.main is not None else None
    data["iterations"] = {str(k): _plain_pipe(p) for k, p in run.iterations.items()}
    if run.loop is not None:
        data["loop"] = _plain_loop(run.loop)
    return data


def _fields(obj: Any) -> dict[str, Any]:
    """A dataclass's fields, not copied (``asdict`` deep-copies, item by item: 0.3-1 s for a
    100,000-item loop's items and results, at every hand-over to the next run)."""
    return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}


def _plain_pipe(pipe: PipelineRun) -> dict[str, Any]:
    data = _fields(pipe)
    # the envelopes' JSON (their fields would be written, not the objects they read), copied
    # once by ``_json``: not deep-copied as objects first
    data.update(state=pipe.state.value, last_outcome=None, error=None)
    data = copy.deepcopy(data)
    data["last_outcome"] = _json(pipe.last_outcome)
    data["error"] = _json(pipe.error)
    return data


def _plain_loop(loop: LoopRun) -> dict[str, Any]:
    data = _fields(loop)
    data["items"] = _copied(loop.items)
    data["results"] = _copied(loop.results)
    data["failed"] = list(loop.failed)
    data["state"] = loop.state.value
    data["running"] = sorted(loop.running)
    return data


_SCALARS = (str, int, float, bool, type(None))


def _copied(values: list[Any]) -> list[Any]:
    """An independent copy: shallow where every value is immutable (the common loop of
    numbers or strings, a C-speed check), deep otherwise."""
    if all(isinstance(v, _SCALARS) for v in values):
        return list(values)
    return copy.deepcopy(values)


def _json(envelope: Outcome | ErrorInfo | None) -> dict[str, Any] | None:
    return copy.deepcopy(envelope.to_dict()) if envelope is not None else None


def _plain_token(token: Token) -> dict[str, Any]:
    data = dataclasses.asdict(token)
    data["state"] = token.state.value
    return data


def snapshot(state: ExecutionState) -> dict[str, Any]:
    """Everything ``restore`` needs, as JSON values."""
    fields = {f.name: getattr(state, f.name) for f in dataclasses.fields(state) if f.name not in _SKIP}
    fields["status"] = state.status.value
    fields["workflow_status"] = state.workflow_status.value
    fields["steps"] = {name: record.to_dict() for name, record in state.steps.items()}
    fields["failures"] = [failure.to_dict() for failure in state.failures]
    # operator state, and a task list's results: snapshots without them stay as they were
    for name in ("approvals", "paused_steps", "task_results"):
        if not fields[name]:
            del fields[name]
    return {
        "fields": fields,
        "log": {"base": state.log.seq, "parent_execution_id": state.log.parent_execution_id},
        "tokens": [_plain_token(t) for t in state.tokens],
        "join_buffers": {k: [_plain_token(t) for t in v] for k, v in state.join_buffers.items()},
        "step_runs": {k: _plain_run(r) for k, r in state.step_runs.items()},
        # in-flight task -> which pipeline waits for it (resolved back to the same objects)
        "pipelines": {task_id: [pipe.step_run_id, pipe.iteration] for task_id, pipe in state.pipelines.items()},
    }


def restore(playbook: Playbook, data: dict[str, Any], graph: StepGraph | None = None) -> ExecutionState:
    fields = dict(data["fields"])
    fields["status"] = ExecutionStatus(fields["status"])
    fields["workflow_status"] = WorkflowStatus(fields["workflow_status"])
    fields["steps"] = {name: StepRecord.from_dict(record) for name, record in fields.get("steps", {}).items()}
    fields["failures"] = [Failure.from_dict(failure) for failure in fields.get("failures", [])]
    log = EventLog(fields["execution_id"])
    log.base = int(data["log"]["base"])
    log.parent_execution_id = data["log"].get("parent_execution_id")
    if graph is None:
        entry = playbook.executor.spec.entry_step or playbook.workflow[0].step
        graph = StepGraph(playbook, entry)
    state = ExecutionState(playbook=playbook, graph=graph, log=log, **fields)
    state.skipped_names = [name for name, record in state.steps.items() if record.skipped is not None]
    state.tokens = [_token(t) for t in data["tokens"]]
    state.join_buffers = {k: [_token(t) for t in v] for k, v in data["join_buffers"].items()}
    parked_pipes = {(run_id, None if it is None else int(it)) for run_id, it in state.parked_pipelines}
    parked_loops = set(state.parked_loops)
    state.step_runs = {k: _step_run(v, parked_pipes, parked_loops) for k, v in data["step_runs"].items()}
    for task_id, (run_id, iteration) in data["pipelines"].items():
        run = state.step_runs[run_id]
        pipe = run.main if iteration is None else run.iterations[int(iteration)]
        assert pipe is not None, f"in-flight task {task_id} without its pipeline"
        state.pipelines[task_id] = pipe
    return state
