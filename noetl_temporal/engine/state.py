"""The engine's state: the Petri-net marking plus what each running step is doing.

Owned by exactly one ``step()`` caller at a time and mutated in place (copying a large
marking per event would cost more than the work it describes).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..dsl.models import Playbook
from .envelopes import ErrorInfo, Outcome
from .event_log import EventLog
from .graph import StepGraph
from .state_machines import LoopState, PipelineState, TokenState
from .status_layers import ExecutionStatus, StepStatus, WorkflowStatus
from .task_plans import TaskPlan

__all__ = ["Token", "PipelineRun", "LoopRun", "StepRun", "StepRecord", "Failure", "ExecutionState"]


@dataclass(eq=False)
class Token:
    """A unit of control ready to run ``step`` (docs/semantics.md, "Entry, tokens, admission").

    Compared by identity, as the entity it is (ids are unique): the engine looks tokens up
    in and removes them from ``state.tokens``, and field-by-field equality made that
    quadratic in Python code (a 2,000-way fan-out spent seconds in one activation)."""

    id: str
    step: str
    args: dict[str, Any] = field(default_factory=dict)
    source: str | None = None          # the step whose arc produced it
    state: TokenState = TokenState.READY   # moves only by the "token" table (state_machines.py)
    evaluated_ctx_version: int = -1
    joined: bool = False               # already passed its join barrier
    final: bool = False                # the once-after-quiescence final_step token
    join: dict[str, Any] | None = None  # a joined token: its sources and conflicting keys

    @property
    def denied(self) -> bool:
        """Admission said no; re-evaluated when ctx changes."""
        return self.state is TokenState.DENIED

    @property
    def in_hand(self) -> bool:
        """Still in ``state.tokens``: every way out of that list moves the token on (buffered
        at a join, admitted, discarded, absorbed, dropped), so its state says where it is."""
        return self.state is TokenState.READY or self.state is TokenState.DENIED


@dataclass
class PipelineRun:
    """One run of a step's task list: the whole step, or one loop iteration."""

    key: str
    step_run_id: str
    iteration: int | None = None
    iter_scope: dict[str, Any] | None = None
    pc: int = 0
    vars: dict[str, Any] = field(default_factory=dict)
    prev: Any = None
    last_outcome: Outcome | None = None   # the last task's, typed (JSON only in snapshots)
    jumps: int = 0
    runs: dict[str, int] = field(default_factory=dict)
    in_flight: str | None = None       # task_run_id of the running task
    state: PipelineState = PipelineState.RUNNING   # moves only by the "pipeline" table
    error: ErrorInfo | None = None
    reused: bool = False   # a redrive's iteration: the old execution's recorded result, no task

    @property
    def finished(self) -> bool:
        return self.state in (PipelineState.COMPLETED, PipelineState.FAILED, PipelineState.CANCELLED)

    @property
    def failed(self) -> bool:
        return self.state in (PipelineState.FAILED, PipelineState.CANCELLED)

    @property
    def cancelled(self) -> bool:
        return self.state is PipelineState.CANCELLED


@dataclass
class LoopRun:
    items: list[Any]
    iterator: str
    parallel: bool
    max_in_flight: int
    next_index: int = 0
    running: set[int] = field(default_factory=set)
    results: list[Any] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)
    done_count: int = 0
    state: LoopState = LoopState.FILLING   # moves only by the "loop" table (state_machines.py)
    halted: bool = False   # fail_fast: an iteration failed, start no more (the step will fail)
    # A cursor loop (docs/semantics.md, "Cursor loops"): ``items`` holds the current page only,
    # whose first row is iteration ``page_base``; ``results`` stays empty (counts only).
    cursor: bool = False
    page_base: int = 0
    pages: int = 0
    rows: int = 0                    # rows read so far (``__cursor_offset``)
    fetching: str | None = None      # the FetchPage task run id in flight
    exhausted: bool = False          # a claim returned no row (or failed): no more pages
    fetch_error: dict[str, Any] | None = None


@dataclass
class StepRun:
    id: str
    step: str
    args: dict[str, Any]
    status: StepStatus = StepStatus.PENDING
    started_at: str | None = None
    main: PipelineRun | None = None
    loop: LoopRun | None = None
    iterations: dict[int, PipelineRun] = field(default_factory=dict)
    final: bool = False
    cancelled: bool = False
    timed_out: bool = False
    reused: bool = False   # a redrive finished it with the old execution's recorded result
    skipped: dict[str, Any] | None = None   # an operator's skip ({by, reason}), ending it SKIPPED


@dataclass(slots=True)
class StepRecord:
    """A step as the run's output reports it: the status its last run ended with, how many
    runs ended, and the last one's result. JSON (the output, snapshots): ``to_dict``."""

    status: str | None = None
    runs: int = 0
    result: Any = None
    # A redrive ended its last run with the old execution's recorded result (no tool ran).
    # In the JSON only when true, so every other output reads as it always did.
    reused: bool = False
    # An operator skipped its last run: who and why (``{by, reason}``); in the JSON only when set.
    skipped: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"status": self.status, "runs": self.runs, "result": self.result}
        if self.reused:
            data["reused"] = True
        if self.skipped is not None:
            data["skipped"] = self.skipped
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StepRecord:
        skipped = data.get("skipped")
        return cls(status=data.get("status"), runs=int(data.get("runs") or 0), result=data.get("result"),
                   reused=bool(data.get("reused")), skipped=dict(skipped) if isinstance(skipped, dict) else None)


@dataclass(slots=True)
class Failure:
    """A failure the run recorded (a step's, a template's, a limit's ...): ``handled`` when
    an arc recovered from it; the unhandled ones fail the execution. ``final_step`` marks the
    final step's own failure. JSON (the run's ``failed_steps``, snapshots): ``to_dict``."""

    step: str
    step_run_id: str | None
    handled: bool
    kind: str | None
    message: str | None
    final_step: bool = False

    def to_dict(self) -> dict[str, Any]:
        data = {"step": self.step, "step_run_id": self.step_run_id, "handled": self.handled,
                "kind": self.kind, "message": self.message}
        if self.final_step:
            data["final_step"] = True
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Failure:
        return cls(step=data["step"], step_run_id=data.get("step_run_id"), handled=bool(data.get("handled")),
                   kind=data.get("kind"), message=data.get("message"), final_step=bool(data.get("final_step")))


@dataclass
class ExecutionState:
    playbook: Playbook
    graph: StepGraph
    execution_id: str
    log: EventLog
    now: str = ""
    parent_execution_id: str | None = None
    source: str | None = None          # the playbook file (sub-playbook paths are relative to it)
    behaviours: list[str] = field(default_factory=list)   # switched-on changes (behaviours.py)
    status: ExecutionStatus = ExecutionStatus.PENDING
    workflow_status: WorkflowStatus = WorkflowStatus.PENDING
    workload: dict[str, Any] = field(default_factory=dict)
    ctx: dict[str, Any] = field(default_factory=dict)
    ctx_version: int = 0
    tokens: list[Token] = field(default_factory=list)
    join_buffers: dict[str, list[Token]] = field(default_factory=dict)
    step_runs: dict[str, StepRun] = field(default_factory=dict)
    pipelines: dict[str, PipelineRun] = field(default_factory=dict)   # in-flight task -> pipeline
    # ``kind: approve`` tasks waiting for an answer: task run id -> what they ask (approvals.py)
    approvals: dict[str, dict[str, Any]] = field(default_factory=dict)
    run_counts: dict[str, int] = field(default_factory=dict)
    total_step_runs: int = 0
    token_counter: int = 0
    step_results: dict[str, Any] = field(default_factory=dict)
    # A task list step's results by task name, for ``{{ step.results.<task> }}`` (NoETL's task
    # sequence result, ``envelope_data.py``): kept only for steps whose templates read it.
    task_results: dict[str, dict[str, Any]] = field(default_factory=dict)
    steps: dict[str, StepRecord] = field(default_factory=dict)
    failures: list[Failure] = field(default_factory=list)
    absorbed_final_tokens: int = 0
    discarded_steps: list[str] = field(default_factory=list)   # tokens dropped by on_deny: discard
    paused: bool = False
    # steps an operator paused: no new run of them starts until resumed (skips.py)
    paused_steps: list[str] = field(default_factory=list)
    stopping: str | None = None        # 'fail_fast' | 'limit' | 'timeout': no new work
    stopping_reason: str | None = None
    final_started: bool = False
    current_step: str | None = None
    started_at: str | None = None
    ended_at: str | None = None
    terminal_event: str | None = None
    result: dict[str, Any] | None = None
    # Work budget of the current input (see ``budget.py``); work past it is parked here
    # and picked up by ``Proceed``.
    budget: int = 0
    parked_pipelines: list[list[Any]] = field(default_factory=list)   # [step_run_id, iteration]
    parked_loops: list[str] = field(default_factory=list)             # loop step runs to refill
    yield_requested: bool = False
    # A redrive (``redrive.py``): the old execution's id and the recorded results, by step,
    # that runs still to start reuse (each once).
    redriven_from: str | None = None
    reuse: dict[str, Any] = field(default_factory=dict)
    # ... and a failed loop step's completed iterations: {step: {count, results: {index: result}}},
    # moved to the key of its step run when the loop starts (``loops.py``).
    reuse_iterations: dict[str, Any] = field(default_factory=dict)
    # Derived from the playbook, never snapshotted: each task's invariants by (step, task),
    # built on its first invocation (``task_plans.py``).
    task_plans: dict[tuple[str, str], TaskPlan] = field(default_factory=dict, repr=False, compare=False)
    # Derived, never snapshotted (``restore`` rebuilds it from ``steps``): the steps whose run an
    # operator skipped, in the order they ended, so the current details name them without
    # reading every step record (``progress.py``). A name stays when the step runs again.
    skipped_names: list[str] = field(default_factory=list, repr=False, compare=False)

    @property
    def finished(self) -> bool:
        return self.result is not None
