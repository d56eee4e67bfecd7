"""Engine behaviour changes that would replay differently, each switched on per execution.

A workflow replays its history through the engine; a fix that changes which commands the
engine gives for the same inputs would break the replay of executions started before it.
So each such change has a name here: the workflow asks ``workflow.patched("noetl-<name>")``
once, before ``Start``, and passes the names that are on in ``Start.behaviours``. A new
execution gets all of them; an execution recorded before a change replays without it. The
engine keeps the list in its state (and snapshot), so continue-as-new keeps it too.
"""

from __future__ import annotations

__all__ = ["LOOP_FAIL_FAST_FAILS_STEP", "CURRENT", "patch_id"]

#: A loop iteration failing under ``fail_fast`` stops the loop's other iterations and the
#: loop step *fails* (routing sees ``step.failed``; unhandled, fail_fast stops the run).
#: Before: the loop's step run was marked cancelled, so the step ended CANCELLED as a
#: handled failure and the execution could end COMPLETED.
LOOP_FAIL_FAST_FAILS_STEP = "loop-fail-fast-fails-step"

#: what a new execution gets
CURRENT: tuple[str, ...] = (LOOP_FAIL_FAST_FAILS_STEP,)


def patch_id(behaviour: str) -> str:
    """The ``workflow.patched`` id of a behaviour."""
    return f"noetl-{behaviour}"
