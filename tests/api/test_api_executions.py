"""Submit, follow, inspect: the execution routes against the real dev server (in-process ASGI)."""

from __future__ import annotations

import asyncio
import json
import uuid

import pytest

from noetl_temporal.client.observe import STATUS_FIELDS
from noetl_temporal.dsl import validate_text

from .conftest import events_of, playbook, wait_for, wait_state

pytestmark = pytest.mark.temporal

HELLO = playbook("""
    apiVersion: noetl.io/v2
    kind: Playbook
    metadata: {name: hello, path: tests/hello}
    workload: {name: world, db: {host: h, password: hunter2}}
    workflow:
      - step: greet
        tool:
          kind: python
          input: {name: "{{ workload.name }}"}
          code: |
            result = {"greeting": "hello " + name}
        set: {ctx.api_token: abc, ctx.seen: "{{ greet.greeting }}"}
        next: {arcs: [{step: done}]}
      - step: done
        tool: {kind: noop}
""")


def parse_sse(text: str) -> list[dict]:
    frames = []
    for block in text.split("\n\n"):
        fields: dict[str, str] = {}
        for line in block.splitlines():
            if line.startswith(":") or ":" not in line:
                continue
            key, _, value = line.partition(":")
            fields[key] = value.lstrip(" ")
        if fields.get("event"):
            frames.append(fields)
    return frames


async def test_submit_follow_events_and_complete(api):
    r = await api.post("/executions", json={"playbook": HELLO, "payload": {"name": "ada"}})
    assert r.status_code == 202, r.text
    body = r.json()
    execution_id = body["execution_id"]
    assert body["state"] == "PENDING" and body["playbook_path"] == "tests/hello"
    assert r.headers["location"] == f"/executions/{execution_id}"

    # follow live: the stream ends after the terminal event
    stream = await api.get(f"/executions/{execution_id}/events/stream")
    assert stream.status_code == 200 and stream.headers["content-type"].startswith("text/event-stream")
    frames = parse_sse(stream.text)
    kinds = [f["event"] for f in frames]
    assert kinds[-1] == "end" and "playbook.finished" in kinds
    events = [json.loads(f["data"]) for f in frames if f["event"] != "end"]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert all(f["id"] == str(json.loads(f["data"])["seq"]) for f in frames if f["event"] != "end")

    filtered = await api.get(f"/executions/{execution_id}/events/stream",
                             params={"type": "step.started", "entity": "done"})
    assert [(f["event"], json.loads(f["data"]).get("entity_id")) for f in parse_sse(filtered.text)] == [
        ("step.started", "done"), ("end", None)]

    status = (await api.get(f"/executions/{execution_id}/status")).json()
    assert tuple(status) == STATUS_FIELDS  # exactly the minimal model of docs/status.md
    assert status["state"] == "COMPLETED" and status["terminal_event"] == "playbook.finished"
    assert status["completion_inferred"] is False
    assert "ctx" not in json.dumps(status) and "hunter2" not in json.dumps(status)

    detail = (await api.get(f"/executions/{execution_id}")).json()
    assert detail["state"] == "COMPLETED"
    assert detail["steps"]["greet"]["result"] == {"greeting": "hello ada"}
    assert detail["summary"]["failed_steps_count"] == 0
    pinned = detail["playbook"].pop("sha256")
    assert len(pinned) == 64 and int(pinned, 16) >= 0   # the definition it runs (docs/schedules.md)
    assert detail["playbook"] == {"path": "tests/hello", "name": "hello", "source": "inline", "catalog_version": None,
                                  "version": None}
    assert detail["temporal"]["status"] == "COMPLETED" and detail["started_at"] and detail["ended_at"]
    assert "ctx" not in detail

    variables = (await api.get(f"/executions/{execution_id}/variables")).json()
    assert variables["workload"] == {"name": "ada", "db": {"host": "h", "password": "***"}}
    assert variables["ctx"] == {"api_token": "***", "seen": "hello ada"}
    assert variables["redacted"] == ["workload.db.password", "ctx.api_token"]


async def test_events_filters_and_paging(api):
    execution_id = (await api.post("/executions", json={"playbook": HELLO})).json()["execution_id"]
    await wait_state(api, execution_id)
    everything = await events_of(api, execution_id)
    started = await events_of(api, execution_id, type="step.started")
    assert [e["entity_id"] for e in started] == ["greet", "done"]
    both = await events_of(api, execution_id, type=["step.started", "step.done"], entity="greet")
    assert [e["event_type"] for e in both] == ["step.started", "step.done"]
    legacy = await events_of(api, execution_id, type="step.exit")  # a legacy name, mapped
    assert {e["event_type"] for e in legacy} == {"step.done"}

    page1 = (await api.get(f"/executions/{execution_id}/events", params={"limit": 5})).json()
    assert [e["seq"] for e in page1["events"]] == [1, 2, 3, 4, 5] and page1["next_after_seq"] == 5
    page2 = (await api.get(f"/executions/{execution_id}/events",
                           params={"limit": 5, "after_seq": page1["next_after_seq"]})).json()
    assert [e["seq"] for e in page2["events"]] == [6, 7, 8, 9, 10]
    last = (await api.get(f"/executions/{execution_id}/events",
                          params={"after_seq": len(everything) - 1})).json()
    assert len(last["events"]) == 1 and last["next_after_seq"] is None
    tasks = await events_of(api, execution_id, type="task.attempt.*")
    assert {e["event_type"] for e in tasks} == {"task.attempt.started", "task.attempt.done"}
    bad = await api.get(f"/executions/{execution_id}/events", params={"type": "no.such.event"})
    assert bad.status_code == 422 and "step.done" in bad.text  # the answer lists the valid names


async def test_invalid_playbook_is_422_with_the_same_located_errors_as_validate(api):
    text = "workflow:\n  - step: a\n    tool: {kind: nope}\n  - step: a\n    tool: {kind: noop}\n"
    r = await api.post("/executions", json={"playbook": text})
    assert r.status_code == 422
    body = r.json()
    expected = [d.to_dict() for d in validate_text(text, "<request>") if d.is_error]
    assert body["errors"] == expected and expected
    assert all(e["line"] and e["col"] and e["code"] and e["fix"] is not None for e in body["errors"])


async def test_billion_laughs_is_refused_quickly(api):
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, 10):
        lines.append(f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]")
    text = "\n".join(lines) + "\nworkflow:\n  - step: a\n    tool: {kind: noop}\n"
    r = await asyncio.wait_for(api.post("/executions", json={"playbook": text}), timeout=10)
    assert r.status_code == 422
    assert r.json()["errors"][0]["code"] == "NTL006"


async def test_client_mistakes_are_4xx_never_5xx(api):
    assert (await api.get("/executions/exec-does-not-exist")).status_code == 404
    for suffix in ("", "/status", "/events", "/events/stream", "/variables"):
        r = await api.get(f"/executions/nope-{uuid.uuid4().hex}{suffix}")
        assert r.status_code == 404, (suffix, r.text)
        assert "detail" in r.json()
    for action, body in (("cancel", {}), ("pause", {}), ("resume", None), ("ctx", {"patch": {"a": 1}})):
        r = await api.post(f"/executions/nope/{action}", json=body)
        assert r.status_code == 404, (action, r.text)
    assert (await api.get("/executions/%20bad%20id/status")).status_code == 404
    assert (await api.delete("/executions")).status_code == 405
    assert (await api.put("/executions/x/cancel")).status_code == 405
    assert (await api.get("/no/such/route")).status_code == 404
    malformed = await api.post("/executions", content=b'{"playbook": ', headers={"content-type": "application/json"})
    assert malformed.status_code == 422
    assert (await api.post("/executions", json={"playbook": HELLO, "path": "x"})).status_code == 422
    assert (await api.post("/executions", json={"playbook": HELLO, "payload": [1]})).status_code == 422
    assert (await api.post("/executions", json={"playbok": HELLO})).status_code == 422  # unknown field
    assert (await api.post("/executions", json={"path": "not/registered"})).status_code == 404
    assert (await api.get("/executions", params={"page_size": 0})).status_code == 422
    assert (await api.get("/executions", params={"state": "DONE"})).status_code == 422
    assert (await api.get("/executions", params={"page_token": "forged"})).status_code == 422
    assert (await api.get("/executions", params={"started_after": "yesterday"})).status_code == 422


async def test_request_body_limit(temporal, task_queue, catalog, event_store):
    from .conftest import app_client, make_settings

    async with app_client(make_settings(temporal, task_queue, catalog, event_store, max_body_bytes=2048)) as http:
        big = await http.post("/executions", json={"playbook": HELLO + "#" * 4096})
        assert big.status_code == 413 and "2048" in big.json()["detail"]

        async def chunks():  # no Content-Length: counted while streaming
            for _ in range(10):
                yield b"x" * 1024

        streamed = await http.post("/catalog", content=chunks(), headers={"content-type": "application/json"})
        assert streamed.status_code == 413
        small = await http.post("/catalog", json={"content": "x: [1"})
        assert small.status_code == 422


async def test_a_request_that_expands_past_its_limit_is_refused_before_temporal(temporal, task_queue, catalog,
                                                                               event_store):
    """Issue 24: a 453 KB request grew ``dev`` by 1.5 GB and wrote 430 MB to the payload
    store (YAML aliases). Measured once parsed, before anything starts: 413 naming the limit."""
    from .conftest import app_client, make_settings

    rows = "[" + ", ".join(["*r"] * 400) + "]"
    bomb = HELLO.replace("workload: {name: world,",
                         f"workload:\n  r: &r ['{'x' * 1000}']\n  rows: {rows}\n  more: {{name: world,")
    bomb = bomb.replace("password: hunter2}}", "password: hunter2}}\n  name: world")
    async with app_client(make_settings(temporal, task_queue, catalog, event_store, max_body_bytes=64 * 1024)) as http:
        assert len(bomb) < 8 * 1024
        refused = await http.post("/executions", json={"playbook": bomb})
        assert refused.status_code == 413, refused.text
        detail = refused.json()["detail"]
        assert "more than 131072 bytes once parsed" in detail and "--max-body-bytes" in detail, detail
        ok = await http.post("/executions", json={"playbook": HELLO})
        assert ok.status_code == 202, ok.text


async def test_list_executions_filters_and_pages(api):
    path = f"tests/list-{uuid.uuid4().hex[:8]}"
    text = HELLO.replace("path: tests/hello", f"path: {path}")
    ids = []
    for _ in range(3):
        ids.append((await api.post("/executions", json={"playbook": text})).json()["execution_id"])
    for execution_id in ids:
        await wait_state(api, execution_id)

    async def listed():
        r = await api.get("/executions", params={"playbook_path": path, "state": "COMPLETED"})
        assert r.status_code == 200, r.text
        items = r.json()["items"]
        return items if len(items) == 3 else None

    items = await wait_for(listed, what="visibility to list the executions")
    assert {i["execution_id"] for i in items} == set(ids)
    assert all(i["state"] == "COMPLETED" and i["playbook_path"] == path for i in items)
    running = (await api.get("/executions", params={"playbook_path": path, "state": "RUNNING"})).json()
    assert running["items"] == []

    seen = []
    params = {"playbook_path": path, "page_size": 2}
    page = (await api.get("/executions", params=params)).json()
    seen += [i["execution_id"] for i in page["items"]]
    assert len(page["items"]) == 2 and page["next_page_token"]
    page = (await api.get("/executions", params={**params, "page_token": page["next_page_token"]})).json()
    seen += [i["execution_id"] for i in page["items"]]
    assert sorted(seen) == sorted(ids)
    other_filter = await api.get("/executions", params={"page_size": 2, "page_token": "x" + "A" * 40})
    assert other_filter.status_code == 422

    future = (await api.get("/executions", params={"playbook_path": path,
                                                   "started_after": "2999-01-01T00:00:00Z"})).json()
    assert future["items"] == []


def _payload(payload) -> dict:
    """A payload's data and metadata (a protobuf map's serialized order is not fixed)."""
    return {"data": payload.data, "metadata": dict(sorted(payload.metadata.items()))}


async def _start_request(client, execution_id: str) -> dict:
    """What the start sent, as Temporal recorded it (bytes), the execution id written ``<id>``."""
    async for event in client.get_workflow_handle(execution_id).fetch_history_events(page_size=1):
        attrs = event.workflow_execution_started_event_attributes
        meta = event.user_metadata
        sent = {"input": [_payload(p) for p in attrs.input.payloads],
                "memo": {k: _payload(v) for k, v in attrs.memo.fields.items()},
                "search_attributes": {k: _payload(v) for k, v in attrs.search_attributes.indexed_fields.items()},
                "summary": _payload(meta.summary), "details": _payload(meta.details),
                "workflow": (attrs.workflow_type.name, attrs.task_queue.name,
                             attrs.workflow_execution_timeout.ToSeconds())}
        return json.loads(json.dumps(sent, sort_keys=True, default=lambda b: b.decode("latin-1"))
                          .replace(execution_id, "<id>"))
    raise AssertionError(f"no history for {execution_id}")


async def test_starts_of_the_same_text_send_the_same_request_as_an_uncached_start(temporal, task_queue, api):
    """The second start is served from the playbook cache (its definition, digest and size):
    what it sends Temporal must be the first start's, and what ``start_execution`` sends
    when it dumps and hashes the playbook itself (the CLI's path), byte for byte."""
    from noetl_temporal.client.connect import start_execution
    from noetl_temporal.client.control import search_attributes_available
    from noetl_temporal.dsl import load_playbook_text

    body = {"playbook": HELLO, "payload": {"name": "ada", "n": [1, 2]}}
    first, second = [(await api.post("/executions", json=body)).json()["execution_id"] for _ in range(2)]
    uncached = await start_execution(temporal.client, load_playbook_text(HELLO, "<request>").playbook,
                                     payload=body["payload"], task_queue=task_queue, source="inline",
                                     search_attributes=await search_attributes_available(temporal.client),
                                     execution_timeout_s=60, heartbeat_timeout_s=2, api_url="http://api/")
    sent = [await _start_request(temporal.client, i) for i in (first, second, uncached.id)]
    assert first != second and sent[0] == sent[1] == sent[2]
    assert '"execution_id":"<id>"' in sent[0]["input"][0]["data"] and "noetl.playbook_sha256" in sent[0]["memo"]
    for execution_id in (first, second, uncached.id):
        assert (await wait_state(api, execution_id))["state"] == "COMPLETED"
