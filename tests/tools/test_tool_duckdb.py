"""The duckdb tool on real DuckDB databases (in memory and in files)."""

from __future__ import annotations

import asyncio
import base64
import threading
import time
from pathlib import Path

import pytest

from noetl_temporal.tools import ToolCall, _sql, run_tool


async def dd(call: ToolCall, **config) -> dict:
    return await run_tool("duckdb", config, call)


async def test_query_in_memory(call: ToolCall) -> None:
    out = await dd(call, command="SELECT 42 AS answer, 'success' AS status")
    assert out["status"] == "ok", out
    assert out["result"] == {"rows": [{"answer": 42, "status": "success"}], "columns": ["answer", "status"],
                             "row_count": 1, "statements": 1}


async def test_commands_is_noetls_name_for_a_list_of_statements(call: ToolCall) -> None:
    out = await dd(call, commands=["CREATE TABLE t (n INTEGER)", "INSERT INTO t VALUES (7)", "SELECT n FROM t"])
    assert out["status"] == "ok", out
    assert out["result"]["rows"] == [{"n": 7}] and out["result"]["statements"] == 3


async def test_many_statements_last_result_and_types(call: ToolCall) -> None:
    out = await dd(call, query="""
        CREATE TABLE t (id INTEGER, price DECIMAL(10, 2), ts TIMESTAMP, u UUID, b BLOB, tags VARCHAR[],
                        s STRUCT(a INTEGER));
        INSERT INTO t VALUES (1, 9.99, '2024-05-01 10:00:00', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11',
                              '\\x01\\xFF'::BLOB, ['x', 'y'], {'a': 1});
        SELECT * FROM t;
    """)
    assert out["status"] == "ok", out
    row = out["result"]["rows"][0]
    assert row["id"] == 1 and row["price"] == 9.99 and row["ts"] == "2024-05-01T10:00:00"
    assert row["u"] == "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"
    assert base64.b64decode(row["b"]) == b"\x01\xff"
    assert row["tags"] == ["x", "y"] and row["s"] == {"a": 1}


async def test_file_database_persists_and_list_runs_in_one_transaction(call: ToolCall, tmp_path: Path) -> None:
    call.workdir = str(tmp_path)
    ok = await dd(call, database="data.duckdb",
                  command=["CREATE TABLE items (id INTEGER PRIMARY KEY)", "INSERT INTO items VALUES (1), (2)"])
    assert ok["status"] == "ok", ok
    assert (tmp_path / "data.duckdb").exists()
    bad = await dd(call, database="data.duckdb",
                   command=["INSERT INTO items VALUES (3)", "INSERT INTO items VALUES (1)"])
    assert bad["status"] == "error"
    assert bad["error"]["kind"] == "duckdb" and bad["error"]["code"] == "ConstraintException"
    assert "statement 2 of 2" in bad["error"]["message"]
    count = await dd(call, database=str(tmp_path / "data.duckdb"), query="SELECT count(*) AS n FROM items")
    assert count["result"]["rows"] == [{"n": 2}]  # the failed list was rolled back


async def test_params(call: ToolCall) -> None:
    out = await dd(call, query="SELECT ?::INTEGER + ?::INTEGER AS total", params=[2, 3])
    assert out["result"]["rows"] == [{"total": 5}]
    named = await dd(call, query="SELECT $name AS name", params={"name": "duck"})
    assert named["result"]["rows"] == [{"name": "duck"}]


async def test_errors_carry_the_exception_class(call: ToolCall) -> None:
    out = await dd(call, query="SELECT * FROM missing_table")
    assert out["error"]["kind"] == "duckdb" and out["error"]["code"] == "CatalogException"
    assert out["error"]["retryable"] is False
    parse = await dd(call, query="SELEC 1")
    assert parse["error"]["code"] == "ParserException"
    assert (await dd(call))["error"]["kind"] == "config"


async def test_timeout_interrupts_the_query(call: ToolCall) -> None:
    t0 = time.monotonic()
    before = threading.active_count()
    out = await dd(call, query="SELECT max(md5(a::VARCHAR)) FROM range(100000000000) t(a)", timeout=0.5)
    assert time.monotonic() - t0 < 15   # 0.5 s asked, hours if ignored (docs/testing.md)
    assert out["error"]["kind"] == "timeout" and out["error"]["retryable"] is True
    await asyncio.sleep(0.2)
    assert threading.active_count() <= before + 1  # the query thread was given back


async def test_cancellation_interrupts_the_query(call: ToolCall) -> None:
    task = asyncio.ensure_future(dd(call, query="SELECT max(md5(a::VARCHAR)) FROM range(100000000000) t(a)"))
    await asyncio.sleep(0.3)
    t0 = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert time.monotonic() - t0 < 15


async def test_heartbeats_while_running(call: ToolCall, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_sql, "HEARTBEAT_INTERVAL", 0.05)
    beats: list = []
    call.heartbeat = beats.append
    out = await dd(call, query="SELECT max(md5(a::VARCHAR)) AS m FROM range(3000000) t(a)")
    assert out["status"] == "ok"
    assert beats and beats[0]["tool"] == "duckdb"
