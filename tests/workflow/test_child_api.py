"""A user's own workflow, in the SDK's sandbox, runs a playbook as its child through the public
call ``noetl_temporal.workflow.execute_playbook`` (docs/deployment.md, "Embedding", step 8).

The child gets the input and labels of any execution (current behaviours, summary, details,
search attributes); an invalid playbook fails the parent's call at once, and a playbook
workflow started with a malformed input fails instead of retrying its workflow task forever.
"""

from __future__ import annotations

import textwrap
import time
import uuid
from datetime import timedelta
from typing import Any

import pytest
import yaml
from temporalio import workflow
from temporalio.client import WorkflowFailureError
from temporalio.exceptions import ApplicationError

import noetl_temporal
import noetl_temporal.workflow as playbooks
from noetl_temporal.dsl import load_playbook_text
from noetl_temporal.dsl.models import playbook_definition
from noetl_temporal.engine import behaviours
from noetl_temporal.store.catalog import Catalog
from noetl_temporal.workflow.search_attributes import PARENT_EXECUTION_ID, PLAYBOOK_NAME
from noetl_temporal.workflow.types import WORKFLOW_NAME, RunInput

pytestmark = pytest.mark.temporal

SHOUT = textwrap.dedent("""\
    apiVersion: noetl.io/v2
    kind: Playbook
    metadata: {name: shout, path: acme/shout}
    workload: {name: nobody}
    workflow:
      - step: start
        tool: {kind: noop, result: {text: "{{ workload.name | upper }}"}}
    """)

# `kind: nope` on line 7: the error names the line and the column.
BROKEN = SHOUT.replace("kind: noop", "kind: nope")


@workflow.defn
class UserWorkflow:
    """The user's workflow: sandboxed (the worker's default runner), running a playbook child."""

    @workflow.run
    async def run(self, args: dict[str, Any]) -> dict[str, Any]:
        output = await playbooks.execute_playbook(args["playbook"], payload={"name": args["name"]},
                                                  id=args.get("id"))
        return {"state": output["state"], "text": output["steps"]["start"]["result"]["text"],
                "sandboxed": workflow.unsafe.in_sandbox()}


async def _run_user(client, queue: str, args: dict[str, Any]) -> dict[str, Any]:
    async with noetl_temporal.build_worker(client, task_queue=queue, workflows=[UserWorkflow]):
        return await client.execute_workflow(UserWorkflow.run, args, id=f"user-{uuid.uuid4().hex[:8]}",
                                             task_queue=queue, execution_timeout=timedelta(seconds=60))


@pytest.mark.parametrize("form", ["yaml text", "mapping", "file path", "catalog path"])
async def test_user_workflow_runs_a_playbook_child(temporal, task_queue, tmp_path, monkeypatch, form):
    playbook: Any = {"yaml text": SHOUT, "mapping": yaml.safe_load(SHOUT)}.get(form)
    if form == "file path":
        (tmp_path / "shout.yaml").write_text(SHOUT)
        playbook = str(tmp_path / "shout.yaml")
    if form == "catalog path":   # the catalog the worker reads (this process's, here)
        monkeypatch.setenv("NOETL_CATALOG_PATH", str(tmp_path / "catalog.db"))
        playbook = Catalog.from_config().register(SHOUT)["path"]
        assert playbook == "acme/shout"
    child_id = f"shout-{uuid.uuid4().hex[:8]}"
    out = await _run_user(temporal.client, task_queue, {"playbook": playbook, "name": "acme", "id": child_id})
    assert out == {"state": "COMPLETED", "text": "ACME", "sandboxed": True}

    child = temporal.client.get_workflow_handle(child_id)
    desc = await child.describe()
    assert await desc.static_summary() == "NoETL playbook shout (acme/shout)"
    assert "**parent execution** `user-" in (await desc.static_details() or "")
    assert desc.typed_search_attributes.get(PLAYBOOK_NAME) == "shout"
    assert (desc.typed_search_attributes.get(PARENT_EXECUTION_ID) or "").startswith("user-")
    started = await _started_input(child)
    assert started.behaviours == list(behaviours.CURRENT)


@pytest.mark.parametrize("form", ["yaml text", "mapping"])
async def test_invalid_playbook_fails_the_child_call_at_once(temporal, task_queue, form):
    playbook = BROKEN if form == "yaml text" else yaml.safe_load(BROKEN)
    began = time.monotonic()
    with pytest.raises(WorkflowFailureError) as failed:
        await _run_user(temporal.client, task_queue, {"playbook": playbook, "name": "acme"})
    assert time.monotonic() - began < 40   # not the 60 s execution timeout: it never spins
    cause = failed.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == "PlaybookInvalid" and cause.non_retryable
    assert "unknown tool kind 'nope'" in cause.message and "workflow[0].tool.kind" in cause.message
    if form == "yaml text":   # what is wrong, and where
        assert "inline:7:18" in cause.message


@pytest.mark.parametrize("sandboxed", [False, True])
async def test_playbook_workflow_with_a_raw_definition_fails_at_once(temporal, task_queue, sandboxed):
    """Whoever starts it: a raw YAML mapping instead of the normalized definition used to fail
    the workflow task forever (the execution stayed Running until its timeout)."""
    inp = RunInput(execution_id=f"raw-{uuid.uuid4().hex[:8]}", playbook=yaml.safe_load(SHOUT),
                   behaviours=list(behaviours.CURRENT))
    began = time.monotonic()
    async with noetl_temporal.build_worker(temporal.client, task_queue=task_queue, sandboxed=sandboxed):
        with pytest.raises(WorkflowFailureError) as failed:
            await temporal.client.execute_workflow(WORKFLOW_NAME, inp, id=inp.execution_id, task_queue=task_queue,
                                                   execution_timeout=timedelta(seconds=30))
    assert time.monotonic() - began < 25   # not the 30 s execution timeout (docs/testing.md)
    cause = failed.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == "PlaybookInvalid" and cause.non_retryable
    assert "workflow.0.tool" in cause.message and "execute_playbook" in cause.message


async def _started_input(handle) -> RunInput:
    """The input the child was started with, as its history records it."""
    history = await handle.fetch_history()
    attrs = history.events[0].workflow_execution_started_event_attributes
    [value] = await handle._client.data_converter.decode(attrs.input.payloads, [RunInput])
    return value


async def test_an_input_without_behaviours_says_what_it_runs(temporal, task_queue, caplog):
    """A hand-made input without ``behaviours`` runs the engine of before any behaviour change
    (recorded histories need that): the worker says so, and how to start it instead."""
    definition = playbook_definition(load_playbook_text(SHOUT).playbook)
    inp = RunInput(execution_id=f"old-{uuid.uuid4().hex[:8]}", playbook=definition, payload={"name": "x"})
    with caplog.at_level("WARNING", logger="temporalio.workflow"):
        async with noetl_temporal.build_worker(temporal.client, task_queue=task_queue):
            out = await temporal.client.execute_workflow(WORKFLOW_NAME, inp, id=inp.execution_id, task_queue=task_queue,
                                                         execution_timeout=timedelta(seconds=30))
    assert out["state"] == "COMPLETED"
    assert f"execution {inp.execution_id} was started without `behaviours`" in caplog.text
    assert "execute_playbook" in caplog.text


@pytest.mark.parametrize("given", ["a YAML text", {"playbook": {"workflow": []}}], ids=["text", "no id"])
async def test_a_malformed_playbook_workflow_input_fails_at_once(temporal, task_queue, given):
    """An input that is no RunInput at all fails in the SDK's decoding, before our workflow code:
    the converter makes that a workflow failure, not a workflow task failure retried forever."""
    if given == "a YAML text":
        given = SHOUT
    began = time.monotonic()
    async with noetl_temporal.build_worker(temporal.client, task_queue=task_queue):
        with pytest.raises(WorkflowFailureError) as failed:
            await temporal.client.execute_workflow(WORKFLOW_NAME, given, id=f"bad-{uuid.uuid4().hex[:8]}",
                                                   task_queue=task_queue, execution_timeout=timedelta(seconds=30))
    assert time.monotonic() - began < 25   # not the 30 s execution timeout (docs/testing.md)
    cause = failed.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == "PlaybookInvalid" and cause.non_retryable
    assert "not a NoETL playbook workflow's input" in cause.message and "start_execution" in cause.message
