"""What goes into the engine (inputs) and what comes out (commands).

Plain dataclasses of JSON values, so the Temporal shell can log, replay and test them;
a task's outcome arrives typed (:class:`~.envelopes.Outcome`).
Every input carries ``now`` (RFC 3339, workflow time): the engine never reads a clock.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .behaviours import CURRENT
from .envelopes import TaskResult

__all__ = [
    "Start", "TaskFinished", "PageFetched", "Answer", "SkipStep", "HoldStep", "RetryStep", "PatchCtx", "Pause",
    "Resume", "Cancel", "StepTimedOut", "Proceed",
    "RunTask", "FetchPage", "CancelTasks", "StartTimer", "Yield", "Finish", "Input", "Command",
]


# ----------------------------------------------------------------------------- inputs

@dataclass
class Start:
    execution_id: str
    now: str
    payload: dict[str, Any] = field(default_factory=dict)
    parent_execution_id: str | None = None
    source: str | None = None
    # Behaviour changes this execution runs with (``behaviours.py``): all of them for a new
    # one; the workflow passes only those its history has (replay of older executions).
    behaviours: list[str] = field(default_factory=lambda: list(CURRENT))
    # A redrive's plan (``redrive.plan``): the recorded results it reuses, by step; None: a
    # normal start, which runs exactly as before redrive existed.
    redrive: dict[str, Any] | None = None


@dataclass
class TaskFinished:
    """A task invocation ended (all its attempts): the :class:`~.envelopes.TaskResult` it
    reported, as it is (no copy of its fields). ``result.rule_index``/``action`` are the
    policy decision the activity took on the final outcome (``decided=False`` when the
    activity could not decide, e.g. it was cancelled: the engine decides then).

    The engine keeps the result's typed outcome to the end of the step; it becomes JSON
    again only in event payloads and snapshots (``Outcome.to_dict`` writes back exactly the
    object the activity returned)."""

    task_run_id: str
    now: str
    result: TaskResult


@dataclass
class PageFetched(TaskFinished):
    """A cursor loop's page arrived: the outcome of its ``FetchPage`` (the SQL tool's, whose
    ``rows`` are the page); ``engine/loops.py`` makes them the loop's next iterations."""


@dataclass
class PatchCtx:
    now: str
    patch: dict[str, Any]


@dataclass
class Pause:
    now: str
    reason: str | None = None


@dataclass
class Resume:
    now: str


@dataclass
class Cancel:
    now: str
    reason: str | None = None


@dataclass
class StepTimedOut:
    now: str
    step_run_id: str


@dataclass
class Proceed:
    """Go on with the work a ``Yield`` left over (the shell feeds it on a later activation)."""

    now: str


@dataclass
class Answer:
    """A person answered a waiting ``kind: approve`` task (the ``answer`` update), or its
    timeout fired (``timed_out``): ``engine/approvals.py`` makes it the task's end."""

    now: str
    task_run_id: str
    values: dict[str, Any] = field(default_factory=dict)
    by: str | None = None
    reason: str | None = None
    timed_out: bool = False


@dataclass
class SkipStep:
    """An operator skipped a running step (the ``skip_step`` update; ``engine/skips.py``):
    its waiting task is cancelled and the step ends as a success with ``result``."""

    now: str
    step: str
    reason: str
    result: Any = None
    by: str | None = None
    iteration: int | None = None


@dataclass
class HoldStep:
    """An operator pauses one step (``hold=True``: no new run of it starts; the rest of the
    execution goes on) or resumes it (the ``pause_step``/``resume_step`` updates; ``engine/skips.py``)."""

    now: str
    step: str
    hold: bool = True
    reason: str | None = None
    by: str | None = None


@dataclass
class RetryStep:
    """An operator asked a step's retrying task to retry now (``action="now"``) or changed
    its retry policy (``"policy"``: ``attempts``, ``delay``): the ``retry_step`` update;
    ``engine/retries.py``. Temporal carries the action out; the engine records it."""

    now: str
    step: str
    action: str
    task_run_id: str
    reason: str | None = None
    by: str | None = None
    iteration: int | None = None
    attempts: int | None = None
    delay: float | None = None


Input = (Start | TaskFinished | PageFetched | PatchCtx | Pause | Resume | Cancel | StepTimedOut | Proceed | Answer | SkipStep
         | HoldStep | RetryStep)


# ----------------------------------------------------------------------------- commands

@dataclass
class RunTask:
    """Run one tool task as an activity (its retries are Temporal retries)."""

    task_run_id: str
    execution_id: str
    step: str
    step_run_id: str
    task: str
    kind: str
    config: dict[str, Any]
    rules: list[dict[str, Any]] = field(default_factory=list)
    policy_context: dict[str, Any] = field(default_factory=dict)
    max_attempts: int = 1
    timeout: float | None = None
    iteration: int | None = None
    # Strings of ``config`` that read ``keychain`` or ``_attempt`` stay unrendered templates:
    # the activity renders them with the resolved secrets and this attempt's number plus
    # ``secret_context`` (the other names they read), so no secret value ever enters
    # workflow history and ``_attempt`` is right on every attempt.
    secret_context: dict[str, Any] = field(default_factory=dict)
    keychain: list[dict[str, Any]] = field(default_factory=list)
    # ``task.spec.result`` (inline_max_bytes, store, select, preview): reference-first results.
    result_spec: dict[str, Any] = field(default_factory=dict)
    # Layered tool knobs: kind defaults < executor.spec < step.spec < loop.spec < task.spec.
    spec: dict[str, Any] = field(default_factory=dict)
    source: str | None = None       # the playbook file, for sub-playbook paths
    on_unmatched: str | None = None  # the policy's action when no rule matches (None: the default)


@dataclass
class FetchPage(RunTask):
    """Run a cursor loop's ``claim`` once (a postgres or duckdb task, the keychain as for any
    SQL task) and feed its outcome back as ``PageFetched``, not ``TaskFinished``: the page
    belongs to the loop, not to an iteration's pipeline (docs/semantics.md, "Cursor loops")."""


@dataclass
class CancelTasks:
    task_run_ids: list[str]
    reason: str


@dataclass
class StartTimer:
    timer_id: str
    seconds: float
    step_run_id: str


@dataclass
class Finish:
    status: str
    result: dict[str, Any]


@dataclass
class Yield:
    """The input used up its work budget with inline work left (a long noop chain, a large
    loop): end this workflow activation and feed ``Proceed`` on the next one. Keeps every
    activation short, far below Temporal's deadlock detector (2 s)."""


Command = RunTask | FetchPage | CancelTasks | StartTimer | Yield | Finish
