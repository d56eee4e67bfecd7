"""The transfer tool on real PostgreSQL, real DuckDB, a real HTTP server on loopback and files."""

from __future__ import annotations

import json
import tracemalloc

import pytest

from noetl_temporal.errors import ToolConfigError
from noetl_temporal.keychain import prepare
from noetl_temporal.tools import ToolCall, run_tool
from tests.support import postgres as pg
from tests.support.http_server import HTTPTestServer


@pytest.fixture
def dsn() -> str:
    return pg.require_dsn()


@pytest.fixture
def pg_call(call: ToolCall, dsn: str, tmp_path) -> ToolCall:
    call.keychain = {"db": pg.fields(dsn)}
    call.workdir = str(tmp_path)
    return call


@pytest.fixture
def table(dsn: str):
    name = pg.unique_name("xfer")
    yield name
    pg.execute(dsn, f"DROP TABLE IF EXISTS {name}")


async def test_http_rows_go_to_postgres_in_batches_with_a_mapping(pg_call, dsn, table, http_server: HTTPTestServer):
    pg.execute(dsn, f"CREATE TABLE {table} (post_id INTEGER, title TEXT, fetched_at TIMESTAMPTZ DEFAULT now())")
    out = await run_tool("transfer", {
        "source": {"type": "http", "url": http_server.url("/paged?size=25&total=25"), "method": "GET",
                   "data_path": "data"},
        "target": {"type": "postgres", "auth": "db", "table": f"public.{table}",
                   "mapping": {"post_id": "id", "title": "name"}},
        "chunk_size": 10}, pg_call)
    assert out["status"] == "ok", out
    res = out["result"]
    assert res["rows_transferred"] == 25 and res["chunks_processed"] == 3
    assert res["direction"] == "http_to_postgres" and res["columns"] == ["post_id", "title"]
    assert pg.execute(dsn, f"SELECT count(*), min(post_id), max(title) FROM {table}") == [(25, 1, "item-9")]


async def test_postgres_to_duckdb_streams_with_bounded_memory(pg_call, tmp_path):
    """50,000 rows in batches of 1,000: the Python heap never holds more than a few batches (about
    1 MB measured; the whole table in one batch peaks past 6 MB and fails this test)."""
    import duckdb

    db = tmp_path / "cache.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE cached (n BIGINT, label VARCHAR)")
    con.close()
    config = {"source": {"type": "postgres", "auth": "db",
                         "query": "SELECT n, repeat('x', 200) || n AS label FROM generate_series(1, 50000) n"},
              "target": {"type": "duckdb", "connection": str(db), "table": "cached"},
              "chunk_size": 1000, "mode": "replace"}
    tracemalloc.start()
    try:
        out = await run_tool("transfer", config, pg_call)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert out["status"] == "ok", out
    assert out["result"]["rows_transferred"] == 50_000 and out["result"]["chunks_processed"] == 50
    assert peak < 6 * 1024 * 1024, peak
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT count(*), max(n) FROM cached").fetchall() == [(50_000, 50_000)]
    con.close()


async def test_duckdb_to_postgres_upsert_updates_by_key(pg_call, dsn, table, tmp_path):
    pg.execute(dsn, f"CREATE TABLE {table} (id INT PRIMARY KEY, name TEXT)")
    pg.execute(dsn, f"INSERT INTO {table} VALUES (1, 'old')")
    out = await run_tool("transfer", {
        "source": {"type": "duckdb", "query": "SELECT i AS id, 'n' || i AS name FROM range(1, 4) t(i)"},
        "target": {"type": "postgres", "auth": "db", "table": table, "key": ["id"]},
        "mode": "upsert"}, pg_call)
    assert out["status"] == "ok", out
    assert pg.execute(dsn, f"SELECT id, name FROM {table} ORDER BY id") == [(1, "n1"), (2, "n2"), (3, "n3")]


async def test_a_failed_replace_leaves_the_table_as_it_was(pg_call, dsn, table):
    pg.execute(dsn, f"CREATE TABLE {table} (n INT NOT NULL)")
    pg.execute(dsn, f"INSERT INTO {table} VALUES (7)")
    out = await run_tool("transfer", {
        "source": {"type": "postgres", "auth": "db", "query": "SELECT NULL::int AS n"},
        "target": {"type": "postgres", "auth": "db", "table": table}, "mode": "replace"}, pg_call)
    assert out["status"] == "error"
    assert out["error"]["code"] == "23502" and not out["error"]["retryable"]
    assert pg.execute(dsn, f"SELECT n FROM {table}") == [(7,)]


async def test_file_to_file_jsonl_and_csv(call: ToolCall, tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"a": i, "b": {"c": i * 2}}) + "\n" for i in range(5)))
    call.workdir = str(tmp_path)
    out = await run_tool("transfer", {"source": {"type": "file", "path": "in.jsonl"},
                                      "target": {"type": "file", "path": "out.csv",
                                                 "mapping": {"x": "a", "y": "b.c"}},
                                      "chunk_size": 2, "mode": "replace"}, call)
    assert out["status"] == "ok", out
    assert out["result"]["chunks_processed"] == 3
    assert (tmp_path / "out.csv").read_text().splitlines() == ["x,y", "0,0", "1,2", "2,4", "3,6", "4,8"]


@pytest.mark.parametrize("config,words", [
    ({"source": {"type": "snowflake", "query": "x"}, "target": {"type": "postgres", "table": "t"}}, "snowflake"),
    ({"source": {"type": "duckdb", "query": "SELECT 1"}, "target": {"type": "postgres", "auth": "db"}}, "table"),
    ({"source": {"type": "duckdb", "query": "SELECT 1 AS a"}, "target": {"type": "duckdb", "table": "t"},
      "mode": "upsert"}, "key"),
])
async def test_a_misconfigured_transfer_fails_with_the_fix(call: ToolCall, config, words):
    out = await run_tool("transfer", config, call)
    assert out["status"] == "error" and words in out["error"]["message"], out


def test_a_connection_written_in_the_playbook_is_refused():
    config = {"source": {"type": "postgres", "connection": "postgres://u:secret@h/db", "query": "SELECT 1"},
              "target": {"type": "duckdb", "table": "t"}}
    with pytest.raises(ToolConfigError, match="transfer source 'connection' is written in the playbook"):
        prepare("transfer", config)
    # a duckdb `connection` is a file path, not a credential
    prepare("transfer", {"source": {"type": "duckdb", "connection": "/tmp/x.duckdb", "query": "SELECT 1"},
                         "target": {"type": "duckdb", "table": "t"}})


async def test_a_timeout_stops_the_source_query_on_the_server(pg_call, dsn, table):
    import time

    pg.execute(dsn, f"CREATE TABLE {table} (n INT)")
    started = time.monotonic()
    out = await run_tool("transfer", {
        "source": {"type": "postgres", "auth": "db", "query": "SELECT 1 AS n FROM pg_sleep(60)"},
        "target": {"type": "postgres", "auth": "db", "table": table}, "timeout": 1}, pg_call)
    assert out["status"] == "error" and out["error"]["kind"] == "timeout", out
    assert time.monotonic() - started < 20  # the query was cancelled, not waited for
    assert pg.execute(dsn, "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(60)%' "
                           "AND state = 'active' AND pid <> pg_backend_pid()") == [(0,)]
