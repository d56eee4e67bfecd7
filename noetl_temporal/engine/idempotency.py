"""The idempotency key a tool task can read to make its own side effects safe
(docs/tools.md, "Idempotency key"; docs/operations.md, "Side effects of a rerun step").

One key per task invocation: ``<origin execution id>/<task run id>``, where the task run id
is ``<step>:run:<n>[:iter:<i>]:task:<task>:<count>`` (``pipeline.py``). It is the same on
every attempt of the invocation (a policy retry, a Temporal retry after a lost worker), so
an ``INSERT ... ON CONFLICT (key) DO NOTHING`` that an earlier attempt committed does nothing
on the next. It differs between steps, step runs, loop iterations and tasks.

The origin is the execution itself, except in a redrive: there it is the execution the
redrive chain started from (the plan's ``key_origin``, ``redrive.plan``), so a failed step
that reruns in a redrive (or a redrive of a redrive) gets the key its failed run had.

Templates read it as ``_idempotency_key``; like ``_attempt`` they render in the task's
activity, never in the workflow, so it never changes a history. The workflow hands the
origin to the activity only in a redrive (:data:`ORIGIN`, in the command's
``secret_context``), whose plan has a ``key_origin``: every other command is as before.
"""

from __future__ import annotations

from ..templates import reads_name

__all__ = ["KEY_NAME", "ORIGIN", "idempotency_key", "reads_key", "origin_of_plan"]

#: the template name
KEY_NAME = "_idempotency_key"
#: the ``secret_context`` entry carrying a redrive's key origin to the activity
ORIGIN = "_idempotency_origin"

reads_key = reads_name(KEY_NAME)


def idempotency_key(execution_id: str, task_run_id: str, context: dict[str, object] | None = None) -> str:
    """The key of one task invocation; ``context``: the command's ``secret_context``."""
    origin = (context or {}).get(ORIGIN)
    return f"{origin if isinstance(origin, str) and origin else execution_id}/{task_run_id}"


def origin_of_plan(old_execution_id: str, old_plan: dict[str, object] | None) -> str:
    """A redrive's key origin: the old execution's own origin when it was a redrive with one,
    else the old execution."""
    origin = (old_plan or {}).get("key_origin")
    return origin if isinstance(origin, str) and origin else old_execution_id
