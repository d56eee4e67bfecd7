"""A playbook's output, however its workflow closed.

A playbook that ends FAILED closes its workflow as Temporal *Failed* (since
``behaviours.FAILED_PLAYBOOK_FAILS_WORKFLOW``), so that the Temporal UI, ``temporal
workflow list``, the SDK's ``workflow_failed`` metric and an operator's alerts see the
failure. The failure is a non-retryable ``ApplicationError`` of type :data:`PLAYBOOK_FAILED`
whose first detail is the same :class:`~noetl_temporal.engine.envelopes.RunOutput` JSON a
completed workflow returns (state, ctx, steps, the result's summary and error), so every
reader gets the output the same way: :func:`workflow_output` for a client, :func:`output_in`
for a parent workflow reading its child.

Executions started before that behaviour complete normally with a FAILED output; readers
accept both. A CANCELLED playbook closes as Temporal *Canceled* (a cancel request is the only
way to cancel one); its output is read with the ``detail`` query or from the events.
"""

from __future__ import annotations

from typing import Any

from temporalio.client import WorkflowFailureError, WorkflowHandle
from temporalio.exceptions import ApplicationError

from ..engine.envelopes import RunOutput

__all__ = ["PLAYBOOK_FAILED", "playbook_failed", "output_in", "workflow_output"]

#: the ``ApplicationError`` type of a playbook that ended FAILED (stable: alerts may match it)
PLAYBOOK_FAILED = "PlaybookFailed"

_REASON_CHARS = 500   # the failure message is a headline; the whole output is in the details


def playbook_failed(output: RunOutput) -> ApplicationError:
    """The error a workflow raises to close as Failed, carrying its output."""
    reason = str(output.reason or output.state.value)
    if len(reason) > _REASON_CHARS:
        reason = reason[:_REASON_CHARS] + "…"
    return ApplicationError(f"playbook ended {output.state.value}: {reason}", output.to_dict(),
                            type=PLAYBOOK_FAILED, non_retryable=True)


def output_in(err: BaseException | None) -> dict[str, Any] | None:
    """The playbook output a :data:`PLAYBOOK_FAILED` failure carries, found anywhere in the
    chain of causes (a child workflow's failure wraps it); None for any other failure."""
    seen = 0
    while err is not None and seen < 10:
        if isinstance(err, ApplicationError) and err.type == PLAYBOOK_FAILED:
            details = err.details
            return details[0] if details and isinstance(details[0], dict) else None
        err, seen = getattr(err, "cause", None) or err.__cause__, seen + 1
    return None


async def workflow_output(handle: WorkflowHandle[Any, Any], **kwargs: Any) -> dict[str, Any]:
    """The workflow's output whether the playbook completed or failed (``handle.result``'s
    keyword arguments pass through); any other failure (cancelled, timed out, terminated,
    an engine error) raises ``WorkflowFailureError`` as ``handle.result`` does."""
    try:
        result: dict[str, Any] = await handle.result(**kwargs)
    except WorkflowFailureError as exc:
        output = output_in(exc.cause)
        if output is None:
            raise
        return output
    return result
