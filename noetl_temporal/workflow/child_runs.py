"""A sub-playbook (``kind: playbook``) run from the playbook workflow: resolve the child,
run it as a child workflow, and turn how it ended into the task's outcome.

Workflow code (called from ``PlaybookWorkflow``): it takes time and waits only through
``temporalio.workflow``.
"""

from __future__ import annotations

from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError, CancelledError, ChildWorkflowError
from temporalio.workflow import ChildWorkflowCancellationType, ParentClosePolicy

with workflow.unsafe.imports_passed_through():
    from ..conversion.playbook_result import output_in
    from ..engine.envelopes import ErrorInfo, Outcome, RunOutput
    from ..engine.messages import RunTask
    from ..engine.redrive import payload_digest
    from ..engine.status_layers import ExecutionStatus
    from . import labels
    from .naming import child_execution_id
    from .patches import PATCH_LOCATED_CHILD_ERRORS, PATCH_READABLE_CHILD_IDS
    from .search_attributes import PLAYBOOK_HASH, PLAYBOOK_NAME, has_attribute
    from .subplaybooks import (
        MAX_DEPTH,
        RESOLVE_PLAYBOOK_ACTIVITY,
        RESOLVE_RETRIES,
        RESOLVE_TIMEOUT,
        child_payload,
        child_result,
    )
    from .types import WORKFLOW_NAME, RunInput

# Workflow code: re-imported with its importer in the sandbox, like the workflow module.
from .task_runs import failure

__all__ = ["child_outcome"]


async def child_outcome(cmd: RunTask, inp: RunInput, behaviours: list[str]) -> Outcome:
    """The sub-playbook's outcome: its result and ids, failed unless it COMPLETED.
    ``behaviours``: the parent's, which the child runs with."""
    path = cmd.config.get("path") or cmd.config.get("playbook")
    if inp.depth + 1 > MAX_DEPTH:
        return failure("recursion", f"sub-playbook nesting deeper than {MAX_DEPTH} "
                       f"(at {path!r}): a playbook that calls itself without an exit?")
    try:
        resolved = await workflow.execute_activity(
            RESOLVE_PLAYBOOK_ACTIVITY, {"path": path, "version": cmd.config.get("version"),
                                        "parent_source": cmd.source},
            start_to_close_timeout=RESOLVE_TIMEOUT, retry_policy=RESOLVE_RETRIES)
    except ActivityError as err:
        return failure("playbook", _located(cmd, str(getattr(err.cause, "message", None) or err.cause or err)))
    child_id = _child_id(cmd, inp, resolved["playbook"])
    child_input = RunInput(execution_id=child_id, playbook=resolved["playbook"],
                           payload=child_payload(cmd.config), source=resolved["source"],
                           parent_execution_id=inp.execution_id, infra_attempts=inp.infra_attempts,
                           heartbeat_timeout_s=inp.heartbeat_timeout_s,
                           persist_events=inp.persist_events, depth=inp.depth + 1,
                           behaviours=list(behaviours), redrive=_child_redrive(cmd, inp),
                           test_clock=inp.test_clock)
    try:
        output: dict[str, Any] = await workflow.execute_child_workflow(
            WORKFLOW_NAME, child_input, id=child_id, task_queue=workflow.info().task_queue,
            cancellation_type=ChildWorkflowCancellationType.WAIT_CANCELLATION_COMPLETED,
            # We cancel children ourselves (cancel, fail_fast, timeouts), so that a
            # cancel with cascade=False can leave them running after the parent closes.
            parent_close_policy=ParentClosePolicy.ABANDON,
            **_child_labels(cmd, inp, resolved, path))
    except ChildWorkflowError as err:
        failed = output_in(err.cause)   # a FAILED child closes Failed with its output
        if failed is None:
            return _child_error(path, err)
        output = failed
    child = RunOutput.from_dict(output)
    result = child_result(output, cmd.config.get("return_step"))
    meta = {"child_execution_id": child_id, "child_state": child.state.value,
            "child_version": resolved.get("version")}
    if child.state == ExecutionStatus.COMPLETED:
        return Outcome.ok(result, **meta)
    reason = child.reason or child.state.value
    return Outcome.failed(ErrorInfo(kind="playbook", message=f"sub-playbook {path!r} ended "
                                    f"{child.state.value}: {reason}"), result=result, **meta)


def _child_redrive(cmd: RunTask, inp: RunInput) -> dict[str, Any] | None:
    """A redrive's plan for this task's failed old child (docs/operations.md): the child is
    redriven inside the parent's redrive, a loop iteration's child too (``redrive-loop-children``).
    Only a redrive's input has ``children``, so every other start (and every recorded history)
    builds the input it always did. A plan that names its old child's input
    (``payload_sha256``) is used only when this child gets the same input: a rerun iteration
    renders its item and its task again, so another item's child runs whole."""
    children = (inp.redrive or {}).get("children") or {}
    if not children:
        return None
    plan: dict[str, Any] | None = children.get(cmd.task_run_id.rpartition(":")[0])
    if plan is None or "payload_sha256" not in plan:
        return plan
    return plan if plan["payload_sha256"] == payload_digest(child_payload(cmd.config)) else None


def _located(cmd: RunTask, message: str) -> str:
    """A child that cannot be resolved names the task's ``path`` as an engine ``where``, which
    the CLI turns into the parent's ``file:line:col`` (locations.py). Patched: the message is
    in the events a recorded execution emitted."""
    if not workflow.patched(PATCH_LOCATED_CHILD_ERRORS):
        return message
    return f"{cmd.step}.tool.{cmd.task}.path: {message}"


def _child_id(cmd: RunTask, inp: RunInput, child_playbook: dict[str, Any]) -> str:
    if workflow.patched(PATCH_READABLE_CHILD_IDS):
        name, _ = labels.playbook_label(child_playbook)
        return child_execution_id(inp.execution_id, cmd.task_run_id, name)
    return f"{inp.execution_id}/{cmd.task_run_id}"   # histories recorded before the patch


def _child_labels(cmd: RunTask, inp: RunInput, resolved: dict[str, Any], path: Any) -> dict[str, Any]:
    """The child's summary, details, memo and (when the parent has them) search attributes."""
    child, source = resolved["playbook"], resolved.get("source")
    out: dict[str, Any] = {
        "static_summary": f"sub-playbook {path} for {cmd.step}/{cmd.task}",
        "static_details": labels.details(child, source=source, version=resolved.get("version"),
                                         parent=inp.execution_id),
        "memo": labels.memo(child, source)}
    redriven = _child_redrive(cmd, inp)
    if redriven is not None:   # as a redrive's own start says it (starts.py)
        out["memo"] = {**out["memo"], "noetl.redriven_from": str(redriven.get("from_execution_id"))}
        out["static_details"] += f"\n\n**redrive of** `{redriven.get('from_execution_id')}`"
    ours = workflow.info().typed_search_attributes
    if has_attribute(ours, PLAYBOOK_NAME):  # all of ours are registered (the version and hash: if the parent has them)
        out["search_attributes"] = labels.search_attributes(child, source, parent=inp.execution_id,
                                                            version=resolved.get("version"),
                                                            pinned=has_attribute(ours, PLAYBOOK_HASH))
    return out


def _child_error(path: Any, err: ChildWorkflowError) -> Outcome:
    """A child workflow that closed without a playbook output: cancelled, or an engine error."""
    if isinstance(err.cause, CancelledError):
        return failure("cancelled", f"sub-playbook {path!r} was cancelled")
    cause = getattr(err.cause, "message", None) or str(err.cause or err)
    return failure("playbook", f"sub-playbook {path!r} failed: {cause}")
