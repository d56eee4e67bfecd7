"""Fixtures for the API tests: the app over the session's real Temporal dev server.

``api`` is an ``httpx.AsyncClient`` talking to ``create_app(settings)`` in process (ASGI),
with a worker for this test's task queue, a fresh SQLite catalog and a shared event
store. ``pg_dsn`` is a real PostgreSQL (skipped with the reason when none is reachable).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import textwrap
import time
import uuid
from typing import Any

import httpx
import pytest
import pytest_asyncio

from noetl_temporal.api import Settings, create_app
from noetl_temporal.hosting.worker import build_worker
from noetl_temporal.store.catalog import Catalog
from noetl_temporal.store.event_store import open_event_store

PG_DSN = os.environ.get("NOETL_TEST_PG_DSN", "postgresql://postgres@127.0.0.1:5432/test")


def playbook(text: str) -> str:
    return textwrap.dedent(text).lstrip()


@pytest.fixture
def catalog(tmp_path) -> Catalog:
    return Catalog(sqlite_path=tmp_path / "catalog.db")


@pytest.fixture(scope="session")
def event_store():
    return open_event_store()


def make_settings(temporal, task_queue, catalog, event_store, **overrides: Any) -> Settings:
    values: dict[str, Any] = dict(client=temporal.client, catalog=catalog, task_queue=task_queue,
                                  event_store=event_store, execution_timeout_s=60, heartbeat_timeout_s=2,
                                  cancel_wait_s=8)
    values.update(overrides)
    return Settings(**values)


@contextlib.asynccontextmanager
async def app_client(settings: Settings):
    transport = httpx.ASGITransport(app=create_app(settings))
    async with httpx.AsyncClient(transport=transport, base_url="http://api", timeout=30) as http:
        yield http


@pytest_asyncio.fixture
async def api(temporal, task_queue, catalog, event_store):
    settings = make_settings(temporal, task_queue, catalog, event_store)
    async with build_worker(temporal.client, task_queue=task_queue, event_store=event_store):
        async with app_client(settings) as http:
            yield http


async def wait_for(check, *, timeout: float = 20.0, every: float = 0.1, what: str = "condition"):
    """Poll ``await check()`` until it returns something truthy."""
    deadline = time.monotonic() + timeout
    while True:
        value = await check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(every)


async def wait_state(http: httpx.AsyncClient, execution_id: str, states=("COMPLETED", "FAILED", "CANCELLED"),
                     timeout: float = 30.0) -> dict:
    async def check():
        r = await http.get(f"/executions/{execution_id}/status")
        assert r.status_code == 200, r.text
        body = r.json()
        return body if body["state"] in states else None

    return await wait_for(check, timeout=timeout, what=f"{execution_id} in {states}")


async def events_of(http: httpx.AsyncClient, execution_id: str, **params: Any) -> list[dict]:
    r = await http.get(f"/executions/{execution_id}/events", params={"limit": 1000, **params})
    assert r.status_code == 200, r.text
    return r.json()["events"]


async def wait_event(http, execution_id: str, predicate, *, timeout: float = 20.0, what: str = "event") -> dict:
    async def check():
        for event in await events_of(http, execution_id):
            if predicate(event):
                return event
        return None

    return await wait_for(check, timeout=timeout, what=what)


@pytest.fixture(scope="session")
def pg_dsn() -> str:
    """A reachable PostgreSQL, found the way the data-tool tests find it (skip locally, fail in CI)."""
    try:
        from tests.support.postgres import require_dsn
    except ImportError:  # the shared helper is not there: probe the documented default only
        require_dsn = None
    if require_dsn is not None:
        return require_dsn()
    psycopg = pytest.importorskip("psycopg")
    try:
        with psycopg.connect(PG_DSN, connect_timeout=3) as conn:
            conn.execute("select 1")
    except Exception as exc:
        pytest.skip(f"PostgreSQL not reachable at {PG_DSN} ({type(exc).__name__}); set NOETL_TEST_PG_DSN")
    return PG_DSN


@pytest.fixture
def pg_schema(pg_dsn):
    """A uniquely named schema for one test, dropped afterwards."""
    import psycopg

    name = f"noetl_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {name}")
    try:
        yield name
    finally:
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")
