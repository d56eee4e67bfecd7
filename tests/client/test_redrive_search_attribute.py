"""``NoetlRedrivenFrom`` (docs/operations.md): a redrive's start sets it, on a namespace set up
before it existed a redrive still starts with our other search attributes (and a warning),
and ``noetl-temporal setup`` adds it there; ``setup`` and the embedded dev server register it."""

from __future__ import annotations

import uuid

import pytest
from google.protobuf.duration_pb2 import Duration
from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import AddSearchAttributesRequest
from temporalio.api.workflowservice.v1 import RegisterNamespaceRequest
from temporalio.client import Client

import noetl_temporal
from noetl_temporal.client.connect import start_execution
from noetl_temporal.client.control import search_attributes_available
from noetl_temporal.client.namespace_setup import missing_search_attributes, register_search_attributes
from noetl_temporal.workflow.search_attributes import PLAYBOOK_NAME, REDRIVEN_FROM, STARTS_NEED
from tests.api.conftest import wait_for

pytestmark = pytest.mark.temporal

PLAYBOOK = noetl_temporal.load_playbook_text(
    "metadata: {name: redriven}\nworkflow:\n  - step: start\n    tool: {kind: noop}\n", source="<t>").playbook


def _plan(old: str) -> dict:
    return {"from_execution_id": old, "from_step": None, "definition": "original", "reuse": {},
            "iterations": {}, "changed": []}


async def test_the_dev_server_registers_it(temporal):
    assert await missing_search_attributes(temporal.client) == []


async def test_a_namespace_set_up_before_it_keeps_the_others_until_setup_adds_it(temporal, caplog):
    namespace = f"before-redrive-{uuid.uuid4().hex[:6]}"
    await temporal.client.workflow_service.register_namespace(RegisterNamespaceRequest(
        namespace=namespace, workflow_execution_retention_period=Duration(seconds=86400)))
    client = await Client.connect(temporal.address, namespace=namespace,
                                  data_converter=noetl_temporal.data_converter())
    await client.operator_service.add_search_attributes(AddSearchAttributesRequest(   # what setup used to add
        namespace=namespace, search_attributes={key.name: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD
                                                for key in STARTS_NEED}))
    started: list[str] = []

    async def redrive_start(old: str):
        handle = await start_execution(client, PLAYBOOK, task_queue="nobody-polls", search_attributes=True,
                                       execution_timeout_s=60, redrive=_plan(old))   # nobody polls: it waits
        started.append(handle.id)
        return (await handle.describe()).typed_search_attributes

    try:
        assert await missing_search_attributes(client) == [REDRIVEN_FROM.name]
        assert await search_attributes_available(client)   # starts still set the six

        async def six_set():
            return (await redrive_start("old-1")).get(PLAYBOOK_NAME) == "redriven"
        with caplog.at_level("WARNING", logger="noetl_temporal"):
            await wait_for(six_set, timeout=30, every=0.5, what="a start with the six attributes")
        attributes = await redrive_start("old-1")
        assert attributes.get(PLAYBOOK_NAME) == "redriven" and attributes.get(REDRIVEN_FROM) is None
        assert "NoetlRedrivenFrom" in caplog.text and f"noetl-temporal setup --namespace {namespace}" in caplog.text
        described = await client.get_workflow_handle(started[-1]).describe()
        assert await described.memo_value("noetl.redriven_from") == "old-1"   # the memo names it all the same

        assert await register_search_attributes(client) == [REDRIVEN_FROM.name]   # `noetl-temporal setup`

        async def named() -> bool:
            return (await redrive_start("old-2")).get(REDRIVEN_FROM) == "old-2"
        await wait_for(named, timeout=30, every=0.5, what="a redrive start with NoetlRedrivenFrom")
    finally:
        for execution_id in started:
            await client.get_workflow_handle(execution_id).terminate("test done")
