"""Values that cross the workflow boundary (inputs, outputs, signal/update payloads).

Dataclasses of JSON values: Temporal's default converter stores them as JSON in history,
readable in the Temporal UI.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["RunInput", "EXECUTION_ID_FROM_WORKFLOW", "WORKFLOW_NAME", "RUN_TASK_ACTIVITY", "RUN_TASK_LOCAL_ACTIVITY", "DEFAULT_TASK_QUEUE"]

WORKFLOW_NAME = "NoetlPlaybook"
RUN_TASK_ACTIVITY = "noetl.run_task"
RUN_TASK_LOCAL_ACTIVITY = "noetl.run_task_local"  # the fast path (spec.local): a local activity
DEFAULT_TASK_QUEUE = "noetl-playbooks"
#: ``RunInput.execution_id`` of a schedule's action: one input starts every run, so each run
#: takes its workflow id (``<schedule>-<time>``) as its execution id (docs/schedules.md)
EXECUTION_ID_FROM_WORKFLOW = ""


@dataclass
class RunInput:
    """One execution: the normalized playbook travels with it, pinning the definition."""

    execution_id: str
    playbook: dict[str, Any]
    payload: dict[str, Any] = field(default_factory=dict)
    source: str | None = None
    parent_execution_id: str | None = None
    # Infra retries added on top of policy attempts (worker lost, activity timeouts). One
    # worker crash can cost a task two attempts: the one it was running, and one Temporal
    # handed to the dead worker's last poll before noticing it was gone (measured in
    # tests/chaos). Ten survives several crashes in a row; see docs/durability.md.
    infra_attempts: int = 10
    heartbeat_timeout_s: float = 30.0
    # Write events to the worker's event store as the run progresses (local activity).
    persist_events: bool = True
    depth: int = 0                  # sub-playbook nesting level (0 = top)
    # Continue-as-new once history reaches this many events (0: when Temporal suggests it,
    # around 4,096 events). Long executions thus never hit Temporal's history limits.
    continue_as_new_after_events: int = 0
    # At most this many tasks in flight per execution (0: 1,500, under Temporal's 2,000).
    max_pending: int = 0
    # Engine behaviour changes this execution runs with (engine/behaviours.py): start_execution
    # sets all current ones; None (an input from before the list existed) means none of them.
    behaviours: list[str] | None = None
    # Set by a run that continued as new: the engine state and the work to restart.
    resume: dict[str, Any] | None = None
    # A redrive of an earlier execution (engine/redrive.py, docs/operations.md): its id and the
    # recorded step results to reuse. None: a normal start. A worker that predates the field
    # cannot decode such an input: upgrade workers before clients redrive.
    redrive: dict[str, Any] | None = None
    # ``noetl-temporal test --temporal`` only: workflow timers wait a fraction of their time and
    # events read virtual time (workflow/test_clock.py, docs/testing-playbooks.md). Off for
    # every other start, and for recorded inputs, which lack it.
    test_clock: bool = False
