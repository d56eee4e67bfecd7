"""The postgres tool against a real PostgreSQL server (see tests/support/postgres.py)."""

from __future__ import annotations

import asyncio
import base64
import time

import pytest

from noetl_temporal.tools import ToolCall, _sql, run_tool
from noetl_temporal.tools.postgres import retryable_sqlstate
from tests.support import postgres as pg


@pytest.fixture
def dsn() -> str:
    return pg.require_dsn()


@pytest.fixture
def pg_call(call: ToolCall, dsn: str) -> ToolCall:
    call.keychain = {"db": pg.fields(dsn)}
    return call


@pytest.fixture
def table(dsn: str):
    name = pg.unique_name()
    yield name
    pg.execute(dsn, f"DROP TABLE IF EXISTS {name}")


async def q(call: ToolCall, **config) -> dict:
    config.setdefault("auth", "db")
    return await run_tool("postgres", config, call)


async def test_query_rows_columns_and_json_safe_values(pg_call: ToolCall) -> None:
    out = await q(pg_call, query="""
        SELECT 1 AS n, 10.5::numeric AS dec, 42::numeric AS whole, 'a'::text AS s,
               '2024-05-01 12:30:00+00'::timestamptz AS ts, '2024-05-01'::date AS d,
               'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid AS u, '\\x01ff'::bytea AS b,
               '1 hour'::interval AS i, '{"x": [1, 2]}'::jsonb AS j, ARRAY[1, 2] AS arr, NULL AS nothing
    """)
    assert out["status"] == "ok", out
    res = out["result"]
    assert res["columns"] == ["n", "dec", "whole", "s", "ts", "d", "u", "b", "i", "j", "arr", "nothing"]
    assert res["row_count"] == 1 and res["statements"] == 1
    row = res["rows"][0]
    assert row["n"] == 1 and row["dec"] == 10.5 and row["whole"] == 42 and row["s"] == "a"
    assert row["ts"].startswith("2024-05-01T12:30:00")
    assert row["d"] == "2024-05-01"
    assert row["u"] == "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"
    assert base64.b64decode(row["b"]) == b"\x01\xff"
    assert row["i"] == 3600.0
    assert row["j"] == {"x": [1, 2]} and row["arr"] == [1, 2] and row["nothing"] is None
    assert out["pg"] == {"code": None, "sqlstate": None, "status": "SELECT 1"}


def test_decimal_precision_is_kept_as_text() -> None:
    from decimal import Decimal

    assert _sql.json_value(Decimal("0.1")) == 0.1
    assert _sql.json_value(Decimal("12345678901234567890.123456789")) == "12345678901234567890.123456789"
    assert _sql.json_value(Decimal("NaN")) == "NaN"


async def test_many_statements_return_the_last_and_share_one_transaction(pg_call: ToolCall, dsn: str,
                                                                          table: str) -> None:
    out = await q(pg_call, command=f"""
        CREATE TABLE {table} (id int PRIMARY KEY, name text);
        INSERT INTO {table} VALUES (1, 'a'), (2, 'b');
        SELECT id, name FROM {table} ORDER BY id;
    """)
    assert out["status"] == "ok", out
    assert out["result"]["rows"] == [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]
    assert out["result"]["statements"] == 1  # one string: sent as one simple query
    # each statement's own result as well, as NoETL's postgres tool returns them
    assert [out["result"][f"command_{i}"]["row_count"] for i in range(3)] == [0, 2, 2]
    assert out["result"]["command_2"]["rows"] == out["result"]["rows"]
    assert "command_3" not in out["result"]

    # a list: statements in order, one transaction; the failure rolls back the insert
    bad = await q(pg_call, command=[f"INSERT INTO {table} VALUES (3, 'c')",
                                    f"INSERT INTO {table} VALUES (1, 'duplicate')"])
    assert bad["status"] == "error"
    err = bad["error"]
    assert err["kind"] == "postgres" and err["code"] == "23505" and err["retryable"] is False
    assert "statement 2 of 2" in err["message"]
    assert err["details"]["statement_index"] == 1
    assert bad["pg"] == {"code": "23505", "sqlstate": "23505"}
    assert pg.execute(dsn, f"SELECT count(*) FROM {table}") == [(2,)]

    dml = await q(pg_call, command=[f"INSERT INTO {table} VALUES (3, 'c')", f"UPDATE {table} SET name = 'z'"])
    assert dml["status"] == "ok", dml
    assert dml["result"] == {"rows": [], "columns": [], "row_count": 3, "statements": 2,
                             "command_0": {"rows": [], "columns": [], "row_count": 1},
                             "command_1": {"rows": [], "columns": [], "row_count": 3}}
    assert pg.execute(dsn, f"SELECT count(*) FROM {table} WHERE name = 'z'") == [(3,)]


async def test_params_positional_and_named(pg_call: ToolCall) -> None:
    out = await q(pg_call, query="SELECT %s::int + %s::int AS total, 'x%%' AS lit", params=[2, 3])
    assert out["result"]["rows"] == [{"total": 5, "lit": "x%"}]
    named = await q(pg_call, query="SELECT %(a)s::text AS a", params={"a": "hi"})
    assert named["result"]["rows"] == [{"a": "hi"}]
    # without params the SQL is sent as written: % needs no escaping
    plain = await q(pg_call, query="SELECT 'x%' AS lit")
    assert plain["result"]["rows"] == [{"lit": "x%"}]
    many = await q(pg_call, query=["SELECT 1", "SELECT 2"], params=[1])
    assert many["error"]["kind"] == "config"


async def test_retryable_sqlstates(pg_call: ToolCall) -> None:
    out = await q(pg_call, command="DO $$ BEGIN RAISE EXCEPTION 'conflict' USING ERRCODE = '40001'; END $$")
    assert out["status"] == "error"
    assert out["error"]["code"] == "40001" and out["error"]["retryable"] is True
    assert out["pg"]["code"] == "40001"
    assert "conflict" in out["error"]["message"]
    assert all(retryable_sqlstate(c) for c in ("40001", "40P01", "57P01", "08006", "08000"))
    assert not any(retryable_sqlstate(c) for c in ("23505", "42P01", None, ""))
    syntax = await q(pg_call, query="SELEC 1")
    assert syntax["error"]["code"] == "42601" and syntax["error"]["retryable"] is False
    assert syntax["error"]["details"]["statement_position"] == 1


async def test_connection_errors(call: ToolCall) -> None:
    call.keychain = {"down": {"host": "127.0.0.1", "port": 1, "user": "x", "dbname": "x"},
                     "norole": {**pg.fields(pg.require_dsn()), "user": "no_such_role_noetl"}}
    down = await q(call, auth="down", query="SELECT 1")
    assert down["error"]["kind"] == "connection" and down["error"]["retryable"] is True
    norole = await q(call, auth="norole", query="SELECT 1")
    assert norole["error"]["kind"] == "connection" and norole["error"]["retryable"] is False
    missing = await q(call, auth="nope", query="SELECT 1")
    assert missing["error"]["kind"] == "config" and "keychain" in missing["error"]["message"]
    bad = await q(call, auth=None, dsn="postgresql://x@127.0.0.1:5432/x?bogus=1", query="SELECT 1")
    assert bad["error"]["kind"] == "config"


async def test_dsn_and_auth_mapping(call: ToolCall, dsn: str) -> None:
    out = await run_tool("postgres", {"dsn": dsn, "query": "SELECT current_database() AS db"}, call)
    assert out["status"] == "ok", out
    mapping = await run_tool("postgres", {"auth": pg.fields(dsn), "query": "SELECT 1 AS one"}, call)
    assert mapping["result"]["rows"] == [{"one": 1}]
    call.keychain = {"viadsn": {"dsn": dsn}}
    assert (await q(call, auth="viadsn", query="SELECT 1 AS one"))["status"] == "ok"


async def test_timeout_cancels_the_query_on_the_server(pg_call: ToolCall, dsn: str) -> None:
    marker = pg.unique_name("sleep")
    t0 = time.monotonic()
    out = await q(pg_call, query=f"SELECT pg_sleep(30) AS {marker}", timeout=0.5)
    assert time.monotonic() - t0 < 15   # 0.5 s asked, 30 s if ignored (docs/testing.md)
    assert out["error"]["kind"] == "timeout" and out["error"]["retryable"] is True
    await asyncio.sleep(0.3)
    running = pg.execute(dsn, f"SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%{marker}%' "
                              "AND state = 'active' AND pid <> pg_backend_pid()")
    assert running == [(0,)]


async def test_cancellation_cancels_the_query(pg_call: ToolCall, dsn: str) -> None:
    marker = pg.unique_name("cancel")
    task = asyncio.ensure_future(q(pg_call, query=f"SELECT pg_sleep(30) AS {marker}"))
    await asyncio.sleep(0.5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.sleep(0.3)
    running = pg.execute(dsn, f"SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%{marker}%' "
                              "AND state = 'active' AND pid <> pg_backend_pid()")
    assert running == [(0,)]


async def test_heartbeats_while_running(pg_call: ToolCall, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_sql, "HEARTBEAT_INTERVAL", 0.1)
    beats: list = []
    pg_call.heartbeat = beats.append
    out = await q(pg_call, query="SELECT pg_sleep(0.5)")
    assert out["status"] == "ok"
    assert len(beats) >= 2 and beats[0]["tool"] == "postgres"


async def test_autocommit_allows_statements_outside_a_transaction(pg_call: ToolCall, dsn: str,
                                                                  table: str) -> None:
    pg.execute(dsn, f"CREATE TABLE {table} (id int)")
    inside = await q(pg_call, command=f"VACUUM {table}")
    assert inside["error"]["code"] == "25001"  # VACUUM cannot run inside a transaction block
    outside = await q(pg_call, command=f"VACUUM {table}", autocommit=True)
    assert outside["status"] == "ok", outside


async def test_no_sql_or_no_connection_is_a_config_error(pg_call: ToolCall) -> None:
    assert (await q(pg_call))["error"]["kind"] == "config"
    assert (await q(pg_call, query="  ;  "))["error"]["kind"] == "config"
    out = await run_tool("postgres", {"query": "SELECT 1"}, pg_call)
    assert out["error"]["kind"] == "config" and "auth" in out["error"]["fix"]
