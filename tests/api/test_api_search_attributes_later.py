"""An API started before ``noetl-temporal setup`` registered our search attributes uses them
once they are registered, without a restart (it asks the server again after a short while)."""

from __future__ import annotations

import uuid

import pytest
from google.protobuf.duration_pb2 import Duration
from temporalio.api.workflowservice.v1 import RegisterNamespaceRequest
from temporalio.client import Client

import noetl_temporal
from noetl_temporal.client.namespace_setup import register_search_attributes
from noetl_temporal.workflow.search_attributes import PLAYBOOK_NAME
from tests.api.conftest import app_client, make_settings, playbook, wait_for

pytestmark = pytest.mark.temporal

BARE = playbook("""
    apiVersion: noetl.io/v2
    kind: Playbook
    metadata: {name: later}
    workflow:
      - step: start
        tool: {kind: noop}
""")


async def test_attributes_registered_after_the_api_started_are_used(temporal, task_queue, catalog, event_store):
    namespace = f"later-{uuid.uuid4().hex[:6]}"
    await temporal.client.workflow_service.register_namespace(RegisterNamespaceRequest(
        namespace=namespace, workflow_execution_retention_period=Duration(seconds=86400)))
    client = await Client.connect(temporal.address, namespace=namespace,
                                  data_converter=noetl_temporal.data_converter())
    settings = make_settings(temporal, task_queue, catalog, event_store, client=client,
                             search_attributes_recheck_s=0.5)
    started: list[str] = []

    async def start_has_attributes() -> bool:
        r = await http.post("/executions", json={"playbook": BARE})   # nobody polls: it stays pending
        assert r.status_code == 202, r.text
        started.append(r.json()["execution_id"])
        described = await client.get_workflow_handle(started[-1]).describe()
        return described.typed_search_attributes.get(PLAYBOOK_NAME) == "later"

    async with app_client(settings) as http:
        try:
            assert not await start_has_attributes()     # the API asks, and hears "not registered"
            await register_search_attributes(client)     # `noetl-temporal setup`, the API still up
            await wait_for(start_has_attributes, timeout=30, every=0.5, what="a start with search attributes")
        finally:
            for execution_id in started:
                await client.get_workflow_handle(execution_id).terminate("test done")
