"""Run a playbook from your own Temporal workflow, as its child workflow.

::

    from temporalio import workflow
    import noetl_temporal.workflow as noetl

    @workflow.defn
    class Nightly:
        @workflow.run
        async def run(self, region: str) -> dict:
            output = await noetl.execute_playbook("etl/nightly", payload={"region": region})
            return output["steps"]["load"]["result"]

Workflow code, safe in the SDK's sandbox (this module passes its imports through). The
child gets the typed input and the labels of any execution (``workflow/starts.py``, the
builder ``start_execution`` uses too): every current engine behaviour, the summary, details,
memo and, where the namespace has them registered, our search attributes. The playbook is
loaded and validated by an activity (``noetl.resolve_playbook``, on the child's task queue,
which a worker from ``build_worker`` serves): an invalid one fails this call at once with a
non-retryable ``ApplicationError`` of type ``PlaybookInvalid`` listing its located
diagnostics, and no child starts. docs/deployment.md, "Embedding", step 8.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from ..dsl.models import Playbook, playbook_definition
    from .labels import playbook_label
    from .naming import slug
    from .starts import execution_start
    from .subplaybooks import RESOLVE_PLAYBOOK_ACTIVITY, RESOLVE_RETRIES, RESOLVE_TIMEOUT
    from .types import WORKFLOW_NAME

__all__ = ["execute_playbook"]


async def execute_playbook(playbook: Playbook | dict[str, Any] | str, *, payload: dict[str, Any] | None = None,
                           id: str | None = None, task_queue: str | None = None,
                           version: int | None = None, source: str | None = None,
                           execution_timeout: timedelta | None = None, search_attributes: bool | None = None,
                           summary: str | None = None, **child_options: Any) -> dict[str, Any]:
    """Run ``playbook`` as a child workflow of the calling workflow and return its output
    (``state``, ``result``, ``steps``: each step's ``status`` and ``result``, ``ctx``).

    ``playbook``: a loaded :class:`~noetl_temporal.dsl.models.Playbook`; a mapping (the YAML
    document as data); a YAML text (a string with a line break); or a path: a playbook file
    (absolute, or relative to ``source``, the file the caller's playbooks sit next to) or a
    catalog path (latest version, or ``version``) as the worker's catalog has it.
    ``id``: the child's workflow id (default ``<playbook name>-<12 hex>``, from the workflow's
    deterministic random); ``task_queue``: where playbook workers poll (default this
    workflow's); ``execution_timeout``: default the playbook's ``executor.spec.timeout_s``;
    ``search_attributes``: ours on the child (default: when the namespace has them);
    ``summary``: the Temporal UI's one line (default ``NoETL playbook NAME (PATH)``);
    ``child_options``: any other ``workflow.execute_child_workflow`` argument
    (``parent_close_policy``, ``cancellation_type``, ``retry_policy``, ...).

    A FAILED playbook fails the child (``ChildWorkflowError``, its output in the cause's
    details), as a cancelled or timed-out one does.
    """
    queue = task_queue or workflow.info().task_queue
    loaded = await _load(playbook, version=version, source=source, task_queue=queue,
                         ask_attributes=search_attributes is None)
    definition = loaded["playbook"]
    child_id = id or f"{slug(playbook_label(definition)[0])}-{workflow.uuid4().hex[:12]}"
    parent = workflow.info().workflow_id
    start = execution_start(definition, execution_id=child_id, payload=payload, source=loaded.get("source"),
                            search_attributes=bool(loaded.get("search_attributes")) if search_attributes is None
                            else search_attributes,
                            timeout_s=execution_timeout.total_seconds() if execution_timeout else None,
                            version=loaded.get("version"), parent=parent, summary=summary)
    output: dict[str, Any] = await workflow.execute_child_workflow(
        WORKFLOW_NAME, start.input, task_queue=queue, **start.options, **child_options)
    return output


async def _load(playbook: Any, *, version: int | None, source: str | None, task_queue: str,
                ask_attributes: bool) -> dict[str, Any]:
    """The normalized definition (and where it came from), loaded and validated by an activity."""
    request: dict[str, Any] = {"search_attributes": ask_attributes}
    if isinstance(playbook, Playbook):
        request.update(definition=playbook_definition(playbook), normalized=True, source=source)
    elif isinstance(playbook, dict):
        request.update(definition=playbook, source=source)
    elif isinstance(playbook, str) and "\n" in playbook:
        request.update(text=playbook, source=source)
    elif isinstance(playbook, str) and playbook.strip():
        request.update(path=playbook.strip(), version=version, parent_source=source)
    else:
        raise ApplicationError(f"execute_playbook takes a Playbook, a mapping, a YAML text or a path, "
                               f"not {type(playbook).__name__}", type="PlaybookInvalid", non_retryable=True)
    try:
        answer: dict[str, Any] = await workflow.execute_activity(
            RESOLVE_PLAYBOOK_ACTIVITY, request, task_queue=task_queue,
            start_to_close_timeout=RESOLVE_TIMEOUT, retry_policy=RESOLVE_RETRIES)
    except ActivityError as err:
        cause = err.cause
        if isinstance(cause, ApplicationError):   # the user's mistake, said once, not an activity's wrapper
            raise ApplicationError(cause.message, type=cause.type, non_retryable=True) from None
        raise
    return answer
