"""Engine behaviour changes that would replay differently, each switched on per execution.

A workflow replays its history through the engine; a fix that changes which commands or
events the engine gives for the same inputs would break the replay of executions started
before it. So each such change has a name here, and an execution runs with the names its
*input* lists: ``start_execution`` (CLI, API, runner) puts :data:`CURRENT` in the workflow
input, a sub-playbook inherits its parent's, and an input without the list (recorded before
the list existed, or built by hand) gets none, which is the behaviour of before. The input is
the first event of the history, so a replay always sees the same list, and it costs no
history event (a ``workflow.patched`` marker costs two per execution: the marker and the
``TemporalChangeVersion`` search attribute). The engine keeps the list in its state (and
snapshot), so continue-as-new keeps it too.
"""

from __future__ import annotations

__all__ = ["LOOP_FAIL_FAST_FAILS_STEP", "CURRENT", "of_input"]

#: A loop iteration failing under ``fail_fast`` stops the loop's other iterations and the
#: loop step *fails* (routing sees ``step.failed``; unhandled, fail_fast stops the run).
#: Before: the loop's step run was marked cancelled, so the step ended CANCELLED as a
#: handled failure and the execution could end COMPLETED.
LOOP_FAIL_FAST_FAILS_STEP = "loop-fail-fast-fails-step"

#: what a new execution gets
CURRENT: tuple[str, ...] = (LOOP_FAIL_FAST_FAILS_STEP,)


def of_input(names: list[str] | None) -> list[str]:
    """The behaviours an execution runs with, from its workflow input (``None``: none)."""
    return list(names or [])
