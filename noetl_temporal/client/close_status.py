"""Temporal's close status -> the execution state: one function for every reader.

Seed 000: only the playbook lifecycle decides an execution's state. The state the
lifecycle recorded (its terminal event, or the workflow's output, which carries the same
state) always wins; Temporal's close status is only a fallback, and a state taken from it
is *inferred*. A workflow that Temporal reports COMPLETED but whose lifecycle recorded no
state is FAILED (inferred): success is only ever reported from ``playbook.finished``.
The table is printed in ``docs/status.md``.
"""

from __future__ import annotations

from temporalio.client import WorkflowExecutionStatus

from ..engine.status_layers import TERMINAL, ExecutionStatus

__all__ = ["OPEN_STATUSES", "TERMINAL_STATES", "WITH_OUTPUT", "execution_state", "normalized_state"]

_T, _E = WorkflowExecutionStatus, ExecutionStatus

#: the execution states that never change again (str-compatible: ``"FAILED" in TERMINAL_STATES``)
TERMINAL_STATES: frozenset[ExecutionStatus] = frozenset(ExecutionStatus(s) for s in TERMINAL["execution"])

#: Temporal statuses of a workflow that is still running (a continued-as-new run goes on)
OPEN_STATUSES = frozenset({_T.RUNNING, _T.CONTINUED_AS_NEW})

#: Temporal statuses of a closed workflow that may carry the playbook's output: COMPLETED
#: (its result) and FAILED (a ``PlaybookFailed`` failure's details, playbook_result.py)
WITH_OUTPUT = frozenset({_T.COMPLETED, _T.FAILED})

# Closed without a recorded state: why Temporal closed it is all we know.
_INFERRED = {
    _T.CANCELED: _E.CANCELLED,
    _T.TERMINATED: _E.CANCELLED,   # stopped by an operator
    _T.TIMED_OUT: _E.FAILED,       # execution timeout
    _T.FAILED: _E.FAILED,          # engine error
    _T.COMPLETED: _E.FAILED,       # completed without a lifecycle state: not trusted
}


def execution_state(status: WorkflowExecutionStatus | None,
                    recorded: str | None = None) -> tuple[str, bool]:
    """``(state, completion_inferred)`` from Temporal's status and the recorded state.

    ``status`` None means Temporal has not started the workflow (PENDING); an open
    workflow is RUNNING (live readers ask the workflow itself for more). ``recorded``:
    the state of the terminal lifecycle event or of the workflow's output, if any.
    """
    if status is None:
        return _E.PENDING.value, False
    if status in OPEN_STATUSES:
        return _E.RUNNING.value, False
    if recorded:
        return recorded, False
    return _INFERRED.get(status, _E.FAILED).value, True


def normalized_state(status: WorkflowExecutionStatus | None, result_state: str | None = None) -> str:
    """The execution state (see :func:`execution_state`); ``result_state``: the state the
    workflow's output recorded, read for COMPLETED workflows."""
    return execution_state(status, result_state)[0]
