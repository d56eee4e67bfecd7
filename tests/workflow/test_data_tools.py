"""Data tools end to end on the Temporal dev server: postgres retries on a SQLSTATE,
duckdb, secrets that never leave the activity, and large results that travel as references."""

from __future__ import annotations

import base64
import json
import logging
import uuid
from pathlib import Path
from typing import Any

import pytest

from noetl_temporal.store.event_store import open_event_store
from tests.support import history as history_json
from tests.support import postgres as pg
from tests.support.history import CLAIM_CHECK

pytestmark = pytest.mark.temporal


def of(report, event_type, entity=None):
    return [e for e in report.events if e["event_type"] == event_type
            and (entity is None or e["entity_id"] == entity)]


@pytest.fixture(autouse=True)
def result_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "results"
    monkeypatch.setenv("NOETL_RESULT_STORE", str(root))
    return root


@pytest.fixture
def dsn() -> str:
    return pg.require_dsn()


@pytest.fixture
def pg_entry(dsn: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """A keychain entry ``pg`` for the test server, provided through the environment."""
    monkeypatch.setenv("NOETL_KEYCHAIN_PG", json.dumps(pg.fields(dsn)))
    return "pg"


# ------------------------------------------------------------------- Temporal history

def _strings(node: Any, out: list[str]) -> list[str]:
    if isinstance(node, dict):
        for value in node.values():
            _strings(value, out)
    elif isinstance(node, list):
        for value in node:
            _strings(value, out)
    elif isinstance(node, str):
        out.append(node)
    return out


async def fetch_history(temporal, workflow_id: str) -> tuple[str, list[dict]]:
    """The full history as JSON, and its payloads with ``data`` decoded to bytes (payloads
    the claim-check codec moved out of history are read back from its store)."""
    from temporalio.api.common.v1 import Payload

    from noetl_temporal.conversion.claimcheck import ClaimCheckCodec

    history = await temporal.client.get_workflow_handle(workflow_id).fetch_history()
    raw = history.to_json()
    codec = ClaimCheckCodec()
    decoded = []
    for payload in history_json.payloads(json.loads(raw)):
        data = base64.b64decode(payload["data"])
        entry = {"encoding": history_json.encoding(payload), "size": len(data), "data": data}
        if entry["encoding"] == CLAIM_CHECK:
            restored = (await codec.decode([Payload(metadata={"encoding": CLAIM_CHECK}, data=data)]))[0]
            entry["data"] = restored.data
        decoded.append(entry)
    return raw, decoded


async def history_as_text(temporal, workflow_id: str) -> tuple[str, str]:
    """``(raw history JSON, every string and decoded payload in it, one text)``."""
    raw, payloads = await fetch_history(temporal, workflow_id)
    parts = _strings(json.loads(raw), [])
    parts += [p["data"].decode("utf-8", "replace") for p in payloads]
    return raw, "\n".join(parts)


# -------------------------------------------------------------------------- postgres


async def test_postgres_retries_a_serialization_failure(run_yaml, pg_entry: str, dsn: str) -> None:
    seq = pg.unique_name("seq")
    pg.execute(dsn, f"CREATE SEQUENCE {seq}")
    try:
        # nextval is not rolled back with the failing transaction: the first attempt
        # raises 40001, the second one passes.
        report = await run_yaml(f"""
        keychain:
          - name: {pg_entry}
            kind: postgres
        workflow:
          - step: txn
            tool:
              kind: postgres
              auth: {pg_entry}
              command: |
                DO $$ BEGIN
                  IF nextval('{seq}') = 1 THEN
                    RAISE EXCEPTION 'could not serialize access' USING ERRCODE = '40001';
                  END IF;
                END $$;
                SELECT currval('{seq}') AS attempt
              spec:
                policy:
                  rules:
                    - when: "{{{{ output.pg.code == '40001' }}}}"
                      then: {{do: retry, attempts: 3}}
        """)
    finally:
        pg.execute(dsn, f"DROP SEQUENCE IF EXISTS {seq}")
    assert report.state == "COMPLETED", report.error
    failed = of(report, "task.attempt.failed")
    assert [e["attempt"] for e in failed] == [1]
    assert failed[0]["payload"]["error"]["code"] == "40001"
    assert of(report, "task.done")[0]["attempt"] == 2
    assert report.steps["txn"]["result"]["rows"] == [{"attempt": 2}]


async def test_postgres_pipeline_reads_and_writes(run_yaml, pg_entry: str, dsn: str) -> None:
    table = pg.unique_name("items")
    try:
        report = await run_yaml(f"""
        keychain:
          - name: {pg_entry}
        workflow:
          - step: load
            tool:
              - name: create
                kind: postgres
                auth: "{{{{ workload.db }}}}"
                command:
                  - CREATE TABLE {table} (id int PRIMARY KEY, name text)
                  - INSERT INTO {table} SELECT g, 'item-' || g FROM generate_series(1, 5) g
              - name: count
                kind: postgres
                auth: "{{{{ workload.db }}}}"
                query: SELECT count(*) AS n, max(name) AS last FROM {table}
            next:
              arcs:
                - step: check
                  when: "{{{{ load.rows[0].n == 5 }}}}"
          - step: check
            tool: {{kind: noop, result: "{{{{ load.rows[0].last }}}}"}}
        """, payload={"db": pg_entry})
        assert report.state == "COMPLETED", report.error
        assert [e["entity_id"] for e in of(report, "step.done")] == ["load", "check"]
        assert pg.execute(dsn, f"SELECT count(*) FROM {table}") == [(5,)]
    finally:
        pg.execute(dsn, f"DROP TABLE IF EXISTS {table}")


# ---------------------------------------------------------------------------- duckdb


async def test_duckdb_query_end_to_end(run_yaml, tmp_path: Path) -> None:
    db = tmp_path / "e2e.duckdb"
    report = await run_yaml(f"""
    workload:
      test_query: SELECT 42 AS answer, 'success' AS status
    workflow:
      - step: setup
        tool:
          kind: duckdb
          database: "{db}"
          command: |
            CREATE TABLE sales (region VARCHAR, amount DECIMAL(10, 2));
            INSERT INTO sales VALUES ('north', 10.50), ('south', 4.25), ('north', 1.25);
        next:
          arcs:
            - step: query
      - step: query
        tool:
          - name: answer
            kind: duckdb
            command: "{{{{ test_query }}}}"
            spec:
              policy:
                rules:
                  - when: "{{{{ output.status == 'error' }}}}"
                    then: {{do: retry, attempts: 3, delay: 0.5, backoff: exponential}}
          - name: totals
            kind: duckdb
            database: "{db}"
            query: SELECT region, sum(amount) AS total FROM sales WHERE region = $region GROUP BY region
            params: {{region: north}}
        next:
          arcs:
            - step: end
      - step: end
        tool: {{kind: noop, result: "{{{{ query.rows[0] }}}}"}}
    """)
    assert report.state == "COMPLETED", report.error
    answer = [e for e in of(report, "task.done") if e["entity_id"] == "answer"][0]["payload"]["outcome"]
    assert answer["result"]["rows"] == [{"answer": 42, "status": "success"}]
    assert [e["entity_id"] for e in of(report, "step.done")] == ["setup", "query", "end"]
    assert report.steps["query"]["result"]["rows"] == [{"region": "north", "total": 11.75}]
    assert report.steps["end"]["result"] == {"region": "north", "total": 11.75}


# --------------------------------------------------------------------------- secrets


async def test_secrets_never_leave_the_activity(run_yaml, temporal, http_server, pg_entry: str,
                                                monkeypatch: pytest.MonkeyPatch,
                                                caplog: pytest.LogCaptureFixture) -> None:
    token = "tok-" + uuid.uuid4().hex
    password = "pw-" + uuid.uuid4().hex
    monkeypatch.setenv("NOETL_KEYCHAIN_API_TOKEN", token)
    monkeypatch.setenv("NOETL_KEYCHAIN_PG_PASSWORD", password)  # trust auth ignores it, but it is resolved
    caplog.set_level(logging.DEBUG)
    report = await run_yaml(f"""
    keychain:
      - name: api
        kind: bearer
      - name: {pg_entry}
        kind: postgres
    workflow:
      - step: call
        tool:
          - name: fetch
            kind: http
            url: "{http_server.url('/echo')}"
            headers:
              Authorization: "Bearer {{{{ keychain.api.token }}}}"
              X-Plain: visible
          - name: query
            kind: postgres
            auth: {pg_entry}
            query: SELECT current_user AS who, '{{{{ keychain.{pg_entry}.password }}}}' AS leaked
          - name: crash
            kind: python
            env:
              TOKEN: "{{{{ keychain.api.token }}}}"
            code: |
              import os
              print("token is", os.environ["TOKEN"])
              raise ValueError("rejected " + os.environ["TOKEN"])
            spec:
              policy:
                rules:
                  - when: "{{{{ output.status == 'error' }}}}"
                    then: {{do: continue}}
    """)
    assert report.state == "COMPLETED", report.error
    outcomes = {e["entity_id"]: e["payload"]["outcome"]
                for e in of(report, "task.done") + of(report, "task.failed")}
    assert outcomes["fetch"]["status"] == "ok", outcomes["fetch"]
    headers = outcomes["fetch"]["result"]["data"]["headers"]
    assert headers["authorization"] == "***" and headers["x-plain"] == "visible"
    assert outcomes["query"]["result"]["rows"][0]["leaked"] == "***"
    assert outcomes["query"]["result"]["rows"][0]["who"]  # the query really ran
    assert outcomes["crash"]["status"] == "error"
    assert "rejected ***" in outcomes["crash"]["error"]["message"]
    assert "token is ***" in outcomes["crash"]["py"]["stdout"]

    events_text = json.dumps(report.events) + json.dumps(report.steps) + json.dumps(report.ctx)
    raw, history_text = await history_as_text(temporal, report.workflow_id)
    store = open_event_store()
    try:
        stored = store.read(report.execution_id, limit=100_000)
    finally:
        store.close()
    stored_text = json.dumps(stored, default=str)
    # the scan sees decoded payloads: the masked values and the unrendered templates are there
    assert "rejected ***" in history_text and "{{ keychain.api.token }}" in history_text
    assert stored and "rejected ***" in stored_text
    for secret in (token, password):
        assert secret not in raw
        assert secret not in history_text, "a secret reached Temporal history"
        assert secret not in events_text, "a secret reached the event list"
        assert secret not in stored_text, "a secret reached the event store"
        assert secret not in caplog.text, "a secret was logged"


# ---------------------------------------------------------------------- large results


async def test_large_result_travels_by_reference(run_yaml, temporal, http_server, result_store: Path) -> None:
    report = await run_yaml(f"""
    workflow:
      - step: pipeline
        tool:
          - name: fetch
            kind: http
            url: "{http_server.url('/big')}"
            params: {{bytes: 5000000, json: 1}}
            spec:
              result:
                select:
                  blob_length: "{{{{ data.blob | length }}}}"
                  status: status
                preview: 40
          - name: measure
            kind: python
            input:
              doc: "{{{{ fetch }}}}"
            code: |
              result = {{"length": len(doc["data"]["blob"]), "status": doc["status"]}}
    """)
    assert report.state == "COMPLETED", report.error
    done = {e["entity_id"]: e["payload"]["outcome"] for e in of(report, "task.done")}
    assert done["measure"]["result"] == {"length": 5_000_000, "status": 200}
    fetch = done["fetch"]
    ref = fetch["result"]
    assert ref["kind"] == "result_ref" and ref["store"] == "fs" and ref["ref"].startswith("noetl://fs/")
    assert ref["meta"]["bytes"] > 10_000_000  # data and body: the blob twice
    assert ref["extracted"] == {"blob_length": 5_000_000, "status": 200}
    assert ref["preview"].startswith('{"status":') or len(ref["preview"]) == 40
    assert fetch.get("result_ref") == ref  # what the engine turns into result.stored
    assert any(result_store.rglob("*.json"))

    _, payloads = await fetch_history(temporal, report.workflow_id)
    # The reference, not the claim-check codec, kept the body out: every payload is inline
    # (none was moved to the payload store) and small.
    assert not [p for p in payloads if p["encoding"] == CLAIM_CHECK]
    largest = max(p["size"] for p in payloads)
    assert largest < 256 * 1024, f"a {largest}-byte payload reached Temporal history"
    completions = [p["data"] for p in payloads if b'"result_ref"' in p["data"]]
    assert completions, "the fetch activity's result carries result_ref"
    stored = of(report, "result.stored")
    assert len(stored) == 1 and stored[0]["payload"]["result_ref"]["ref"] == ref["ref"]
    assert stored[0]["payload"]["extracted"] == {"blob_length": 5_000_000, "status": 200}


async def test_result_tool_resolves_a_reference(run_yaml, http_server, result_store: Path) -> None:
    report = await run_yaml(f"""
    workflow:
      - step: pipeline
        tool:
          - name: fetch
            kind: http
            url: "{http_server.url('/big')}"
            params: {{bytes: 400000, json: 1}}
          - name: read
            kind: result
            ref: "{{{{ fetch }}}}"
            select: {{n: "data.blob | length"}}
    """)
    assert report.state == "COMPLETED", report.error
    assert report.steps["pipeline"]["result"]["n"] == 400_000


async def test_a_secret_never_leaves_in_an_escaped_encoded_or_cut_form(run_yaml, temporal,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 24: a secret with a quote and a backslash, echoed JSON-escaped or as a repr,
    or cut by the 64 KB output limit, reached history, events and the event store."""
    from urllib.parse import quote

    token = 'tk"\\' + uuid.uuid4().hex
    monkeypatch.setenv("NOETL_KEYCHAIN_API_TOKEN", token)
    report = await run_yaml("""
    keychain:
      - {name: api, kind: bearer}
    workflow:
      - step: leak
        tool:
          - name: py
            kind: python
            env: {TOKEN: "{{ keychain.api.token }}"}
            code: |
              import base64, json, os, sys, urllib.parse
              t = os.environ["TOKEN"]
              sys.stdout.write("y" * (48 * 1024 - 10) + t + "z" * 100000)   # across the cut
              result = {"json": json.dumps({"t": t}), "repr": repr({"t": t}), "url": urllib.parse.quote(t),
                        "b64": base64.b64encode(("user:" + t).encode()).decode(), "twice": json.dumps(json.dumps(t))}
          - name: sh
            kind: shell
            cmd: "printf '%s' '{{ keychain.api.token }}' | wc -c"
    """)
    assert report.state == "COMPLETED", report.error
    shell = [e for e in of(report, "task.done") if e["entity_id"] == "sh"][0]["payload"]["outcome"]
    assert shell["result"]["stdout"].strip() == str(len(token))   # the command got the secret intact
    raw, history_text = await history_as_text(temporal, report.workflow_id)
    store = open_event_store()
    try:
        stored_text = json.dumps(store.read(report.execution_id, limit=100_000), default=str)
    finally:
        store.close()
    everywhere = raw + history_text + stored_text + json.dumps(report.events) + json.dumps(report.steps)
    core = token[3:]   # the random part: no piece of it may show in any form
    forms = [token, json.dumps(token)[1:-1], repr(token)[1:-1], quote(token, safe=""), core[:12], core[-12:],
             base64.b64encode(("user:" + token).encode()).decode()[8:-8]]
    for form in forms:
        assert form not in everywhere, form
