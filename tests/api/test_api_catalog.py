"""Catalog routes: register (validated, versioned), list, read, start by reference, version pinning."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from .conftest import playbook, wait_event, wait_state

pytestmark = pytest.mark.temporal


def versioned(path: str, value: str, sleep: float = 0.0) -> str:
    return playbook(f"""
        apiVersion: noetl.io/v2
        kind: Playbook
        metadata: {{name: pinned, path: {path}}}
        workflow:
          - step: work
            tool: {{kind: python, code: "import time; time.sleep({sleep}); result = '{value}'"}}
    """)


async def test_catalog_versions_over_http(api):
    path = f"tests/cat-{uuid.uuid4().hex[:8]}"
    r = await api.post("/catalog", json={"content": versioned(path, "one")})
    assert r.status_code == 201, r.text
    assert r.json()["version"] == 1 and r.json()["created"] is True
    assert r.headers["location"] == f"/catalog/{path}?version=1"
    same = await api.post("/catalog", json={"content": versioned(path, "one")})
    assert same.status_code == 200 and same.json()["version"] == 1 and same.json()["created"] is False
    two = await api.post("/catalog", json={"content": versioned(path, "two")})
    assert two.status_code == 201 and two.json()["version"] == 2

    listing = (await api.get("/catalog")).json()["items"]
    assert {"path": path, "latest_version": 2, "versions": 2} == {
        k: v for k, v in next(i for i in listing if i["path"] == path).items() if k != "updated_at"}
    latest = (await api.get(f"/catalog/{path}")).json()
    assert latest["version"] == 2 and "'two'" in latest["content"]
    first = (await api.get(f"/catalog/{path}", params={"version": 1})).json()
    assert first["version"] == 1 and "'one'" in first["content"]
    assert (await api.get(f"/catalog/{path}", params={"version": 3})).status_code == 404
    assert (await api.get("/catalog/not/there")).status_code == 404
    assert (await api.get("/catalog/bad%00path")).status_code == 404

    invalid = await api.post("/catalog", json={"content": "workflow:\n  - step: a\n    tool: {kind: nope}\n"})
    assert invalid.status_code == 422 and invalid.json()["errors"][0]["line"] == 3
    nameless = await api.post("/catalog", json={"content": "workflow:\n  - step: a\n    tool: {kind: noop}\n"})
    assert nameless.status_code == 422 and nameless.json()["errors"][0]["code"] == "CATALOG001"


# (the path as written in YAML, what the refusal must say): each one climbs out, is absolute,
# names one playbook twice or holds a character that means something elsewhere
UNSAFE_PATHS = [("a/../../b", "contains '..'"), ("'../etc/passwd'", "contains '..'"),
                ("//abs/path", "is absolute"), ("a//b", "empty segment"), ("a/b/", "empty segment"),
                ("'a\\b'", "backslash"), ('"a\\x01b"', "control character"), ('"a\\tb"', "control character"),
                ("a/./b", "starts with '.'"), ("a/.hidden", "starts with '.'")]


@pytest.mark.parametrize(("written", "reason"), UNSAFE_PATHS, ids=[w for w, _ in UNSAFE_PATHS])
async def test_unsafe_catalog_paths_are_refused_with_the_reason(api, written, reason):
    r = await api.post("/catalog", json={"content": versioned(written, "one")})
    assert r.status_code == 422, r.text
    error = r.json()["errors"][0]
    assert error["code"] == "CATALOG002" and reason in error["message"] and error["line"] == 3, error
    assert "joined by single '/'" in error["fix"]
    assert (await api.get("/catalog")).json()["items"] == []  # nothing stored


async def test_unsafe_paths_are_refused_when_read_or_started(api):
    started = await api.post("/executions", json={"path": "a/../../b"})
    assert started.status_code == 422, started.text
    read = await api.get("/catalog/a/..%2F..%2Fb")
    assert read.status_code == 404 and "contains '..'" in read.json()["detail"], read.text


async def test_start_by_reference_and_running_executions_stay_pinned(api):
    path = f"tests/pin-{uuid.uuid4().hex[:8]}"
    await api.post("/catalog", json={"content": versioned(path, "one", sleep=1.5)})
    r = await api.post("/executions", json={"path": path})
    assert r.status_code == 202, r.text
    assert r.json()["catalog_version"] == 1 and r.json()["playbook_path"] == path
    pinned = r.json()["execution_id"]
    await wait_event(api, pinned, lambda e: e["event_type"] == "step.started")

    # a new version while v1 runs: the running execution keeps v1
    assert (await api.post("/catalog", json={"content": versioned(path, "two")})).json()["version"] == 2
    latest = (await api.post("/executions", json={"path": path})).json()
    old = (await api.post("/executions", json={"path": path, "version": 1, "payload": {"x": 1}})).json()
    assert latest["catalog_version"] == 2 and old["catalog_version"] == 1

    results = {}
    for execution_id in (pinned, latest["execution_id"], old["execution_id"]):
        assert (await wait_state(api, execution_id))["state"] == "COMPLETED"
        detail = (await api.get(f"/executions/{execution_id}")).json()
        results[execution_id] = (detail["steps"]["work"]["result"], detail["playbook"]["catalog_version"],
                                 detail["playbook"]["source"])
    assert results[pinned] == ("one", 1, f"catalog:{path}@1")
    assert results[latest["execution_id"]] == ("two", 2, f"catalog:{path}@2")
    assert results[old["execution_id"]] == ("one", 1, f"catalog:{path}@1")
    assert (await api.post("/executions", json={"path": path, "version": 7})).status_code == 404


async def test_catalog_on_postgresql(temporal, task_queue, event_store, pg_dsn, pg_schema):
    from noetl_temporal.store.catalog import Catalog

    from .conftest import app_client, make_settings

    catalog = Catalog(dsn=pg_dsn, table=f"{pg_schema}.catalog")
    async with app_client(make_settings(temporal, task_queue, catalog, event_store)) as http:
        results = await asyncio.gather(*(http.post("/catalog", json={"content": versioned("pg/x", str(i))})
                                         for i in range(5)))
        assert sorted(r.json()["version"] for r in results) == [1, 2, 3, 4, 5]
        assert (await http.get("/catalog/pg/x", params={"version": 3})).status_code == 200
        ready = (await http.get("/ready")).json()
        assert ready["catalog"].startswith("postgresql")
