"""Hostile request bodies against the API served on loopback: never a 5xx.

JSON has no NaN or infinity, but Python's parser reads ``NaN``, ``Infinity`` and an
overflowing ``1e999999`` as floats that nothing downstream can encode again (the
answer's own JSON, Temporal's payloads), so they used to surface as 500s. Every route
that takes a JSON body must refuse them as the client's mistake.
"""

from __future__ import annotations

import json
import uuid

import httpx
import pytest

from noetl_temporal.store.catalog import Catalog

from .conftest import playbook
from .live import LiveServer

pytestmark = pytest.mark.temporal

GATED = playbook("""
    metadata: {name: gated, path: tests/gated}
    workflow:
      - step: a
        tool: {kind: python, code: "import time; time.sleep(30); result = 1"}
""")

NON_FINITE = ["1e999999", "-1e999", "NaN", "Infinity", "-Infinity", "9" * 5000]


@pytest.fixture(scope="module")
def live_api(temporal, tmp_path_factory, event_store):
    catalog = Catalog(sqlite_path=tmp_path_factory.mktemp("hostile") / "catalog.db")
    with LiveServer(temporal.address, catalog=catalog, task_queue=f"tq-hostile-{uuid.uuid4().hex[:8]}",
                    event_store=event_store, execution_timeout_s=60, heartbeat_timeout_s=2,
                    cancel_wait_s=2) as server:
        yield server


@pytest.fixture(scope="module")
def http(live_api):
    with httpx.Client(base_url=live_api.url, timeout=30) as client:
        yield client


@pytest.fixture(scope="module")
def running(http):
    r = http.post("/executions", json={"playbook": GATED})
    assert r.status_code == 202, r.text
    yield r.json()["execution_id"]
    http.post(f"/executions/{r.json()['execution_id']}/cancel", json={})


def _bodies(number: str, execution_id: str) -> list[tuple[str, str]]:
    inline = playbook("""
        metadata: {name: n}
        workflow:
          - step: a
            tool: {kind: noop}
    """)
    return [
        ("/executions", f'{{"playbook": {json.dumps(inline)}, "payload": {{"x": {number}}}}}'),
        ("/executions", f'{{"path": "tests/gated", "payload": {{"deep": [1, {{"x": {number}}}]}}}}'),
        ("/executions", f'{{"playbook": {number}}}'),
        ("/executions", number),
        ("/catalog", f'{{"content": {number}}}'),
        ("/catalog", f'{{"content": "x", "extra": {number}}}'),
        (f"/executions/{execution_id}/ctx", f'{{"patch": {{"approved": {number}}}}}'),
        (f"/executions/{execution_id}/ctx", f'{{"patch": {number}}}'),
        (f"/executions/{execution_id}/cancel", f'{{"reason": {number}}}'),
    ]


@pytest.mark.parametrize("number", NON_FINITE, ids=lambda n: n[:10])
def test_non_finite_numbers_are_the_clients_mistake(http, running, number):
    wrong = []
    for route, body in _bodies(number, running):
        try:
            r = http.post(route, content=body, headers={"content-type": "application/json"})
        except httpx.TransportError as exc:
            wrong.append((route, body[-40:], repr(exc)))
            continue
        if r.status_code != 422 or "send a finite number" not in str(r.json()["detail"]):
            wrong.append((route, body[-40:], r.status_code, r.text[:200]))
    assert not wrong, wrong


def test_the_refusal_names_where_the_number_is(http):
    r = http.post("/executions", content='{"path": "tests/gated", "payload": {"deep": [1, {"x": NaN}]}}',
                  headers={"content-type": "application/json"})
    assert r.status_code == 422, r.text
    assert "NaN at body.payload.deep[1].x" in r.json()["detail"]


def test_large_finite_numbers_still_pass(http, running):
    r = http.post(f"/executions/{running}/ctx", json={"patch": {"big": 1e308, "small": -1e-308, "n": 10**300}})
    assert r.status_code == 200, r.text
    assert r.json()["ctx"]["big"] == 1e308
