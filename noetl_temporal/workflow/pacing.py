"""Ending a workflow activation on purpose.

The engine caps the inline work of one input (``engine/budget.py``) and asks, with a
``Yield`` command, to go on later. Nothing in a workflow ends an activation except
waiting on something outside it, so the shell waits on this local activity, which
returns at once: one marker in history and a few milliseconds per ``Yield``, and each
activation stays far below the deadlock detector's 2 s.

A local activity ends the activation but not the *workflow task*: the SDK keeps the task
open while local activities run (heartbeating it at 80% of the task timeout), so all the
yields of a 10,000-step noop chain ran in one task of 5-8 s (``TMPRL1104``, over 5 s).
Executions started with ``behaviours.PACED_WORKFLOW_TASKS`` run the same activity as a
*normal* activity at every ``YIELDS_PER_TASK``-th yield, which ends the task (scheduling it
is a command the task must send; its result comes in a new task): six history events and
10-90 ms per break. A 1 ms timer did the same but fired 0.6-0.7 s late on the dev server,
which made a 30,000-item noop loop 3.3 times slower (18 s, 60 s). Counted in yields, never
time, so a replay breaks at the same points.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import activity

__all__ = ["YIELD_ACTIVITY", "YIELDS_PER_TASK", "TASK_BREAK", "yield_activation", "ends_task"]

YIELD_ACTIVITY = "noetl.yield"
# An activation of paced executions is 0.05-0.3 s of inline work (``engine/budget.py``,
# ``PACED_WORK_BUDGET``), up to about 0.7 s on a loaded machine (load average 7-10 on 2 cores):
# four stay under the 5 s a task should take. Every break costs a round trip to the server
# (with a timer as the break, two yields per task made a 10,000-step chain twice as slow).
YIELDS_PER_TASK = 4
TASK_BREAK = timedelta(seconds=30)   # the break's activity: its start-to-close timeout


def ends_task(yields: int, first_breaks: bool = False) -> bool:
    """The run's ``yields``-th yield (from 1) waits on a normal activity, ending the workflow task.

    ``first_breaks`` (executions started with ``behaviours.BOUNDED_RUN_WORK``): the first
    yield of a run ends its task too, then every ``YIELDS_PER_TASK``-th after it. A run's
    first task also builds the playbook (a new execution) or restores the snapshot (a run
    that took over): under five busy processes it reached 5.4 s with four yields in it."""
    if first_breaks:
        return yields % YIELDS_PER_TASK == 1
    return yields % YIELDS_PER_TASK == 0


@activity.defn(name=YIELD_ACTIVITY)
async def yield_activation() -> None:
    return None
