"""Over the API, a playbook started from the catalog finds a relative ``kind: playbook``
path next to its own catalog path; a missing one names the catalog paths tried and the
task (issue 37, item 5; the file surfaces are in tests/workflow/test_subplaybook_paths.py)."""

from __future__ import annotations

import json

import pytest

from noetl_temporal.hosting.worker import build_worker
from tests.api.conftest import app_client, make_settings, playbook, wait_state
from tests.workflow.test_subplaybook_paths import CHILD, PARENT

pytestmark = pytest.mark.temporal


async def test_api_catalog_parent_finds_its_catalog_sibling(temporal, task_queue, catalog, event_store,
                                                            monkeypatch):
    """Started from the catalog as ``flows/parent``, ``path: child`` is ``flows/child`` (before
    a top-level ``child``, the path as written)."""
    monkeypatch.setenv("NOETL_CATALOG_PATH", str(catalog.sqlite_path))   # the worker's catalog
    catalog.register(CHILD)
    catalog.register(CHILD.replace("path: flows/child", "path: child").replace("next-to-parent", "top-level"))
    catalog.register(PARENT.replace("CHILD_REF", "child"))
    settings = make_settings(temporal, task_queue, catalog, event_store)
    async with build_worker(temporal.client, task_queue=task_queue, event_store=event_store):
        async with app_client(settings) as http:
            started = await http.post("/executions", json={"path": "flows/parent"})
            assert started.status_code == 202, started.text
            execution_id = started.json()["execution_id"]
            status = await wait_state(http, execution_id)
            assert status["state"] == "COMPLETED", status
            detail = (await http.get(f"/executions/{execution_id}")).json()
    assert detail["steps"]["done"]["result"] == {"doubled": 42, "who": "next-to-parent"}


async def test_missing_child_over_the_api_names_the_catalog_paths_tried(api, catalog, monkeypatch):
    monkeypatch.setenv("NOETL_CATALOG_PATH", str(catalog.sqlite_path))
    assert (await api.post("/catalog", json={"content": playbook(PARENT.replace("CHILD_REF", "gone"))})).status_code == 201
    started = await api.post("/executions", json={"path": "flows/parent"})
    execution_id = started.json()["execution_id"]
    status = await wait_state(api, execution_id)
    assert status["state"] == "FAILED", status
    detail = (await api.get(f"/executions/{execution_id}")).json()
    message = json.dumps(detail)
    assert "no catalog entry 'flows/gone' nor 'gone'" in message, message
    assert "call.tool.sub.path" in message, message
