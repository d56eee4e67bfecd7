"""``loop.cursor`` on the dev server against real databases (docs/semantics.md, "Cursor
loops"): the claim runs again and again in an activity, a page at a time, until it claims
no row; each row is one iteration; the step's result holds counts, not rows."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from tests.support import postgres as pg

pytestmark = pytest.mark.temporal


@pytest.fixture
def dsn() -> str:
    return pg.require_dsn()


@pytest.fixture
def pg_entry(dsn: str, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("NOETL_KEYCHAIN_PG", json.dumps(pg.fields(dsn)))
    return "pg"


def _of(report, event_type: str) -> list[dict]:
    return [e for e in report.events if e["event_type"] == event_type]


async def test_a_postgres_claim_loop_reads_10000_rows_a_page_at_a_time(run_yaml, dsn, pg_entry) -> None:
    table = pg.unique_name("cursor")
    pg.execute(dsn, f"CREATE TABLE {table} (id int PRIMARY KEY, status text NOT NULL DEFAULT 'pending');"
                    f"INSERT INTO {table} (id) SELECT g FROM generate_series(1, 10000) g")
    try:
        report = await run_yaml(f"""
        keychain: [{{name: pg, kind: postgres}}]
        workflow:
          - step: drain
            loop:
              cursor:
                kind: postgres
                auth: {pg_entry}
                claim: |
                  WITH c AS (SELECT id FROM {table} WHERE status = 'pending' ORDER BY id
                             LIMIT {{{{ __frame_max_rows }}}} FOR UPDATE SKIP LOCKED)
                  UPDATE {table} t SET status = 'claimed' FROM c WHERE t.id = c.id RETURNING t.id
              iterator: row
              spec: {{mode: cursor, frame: {{max_rows: 500}}}}
            tool: {{kind: noop}}
        """, execution_timeout_s=600)
        assert report.state == "COMPLETED", report.error
        result = report.steps["drain"]["result"]
        assert (result["count"], result["done"], result["failed"], result["pages"]) == (10000, 10000, 0, 20)
        assert result["results"] == []      # counts, not rows: workflow state stays small
        assert len(_of(report, "loop.iteration.done")) == 10000
        assert pg.execute(dsn, f"SELECT status, count(*) FROM {table} GROUP BY status") == [("claimed", 10000)]
    finally:
        pg.execute(dsn, f"DROP TABLE IF EXISTS {table}")


async def test_each_row_reaches_its_iteration_tasks_and_a_failed_row_is_counted(run_yaml, dsn, pg_entry) -> None:
    table = pg.unique_name("cursor")
    pg.execute(dsn, f"CREATE TABLE {table} (id int PRIMARY KEY, seen int);"
                    f"INSERT INTO {table} (id) SELECT g FROM generate_series(1, 23) g")
    try:
        report = await run_yaml(f"""
        keychain: [{{name: pg, kind: postgres}}]
        workflow:
          - step: each
            loop:
              cursor:
                kind: postgres
                auth: {pg_entry}
                claim: "SELECT id FROM {table} ORDER BY id LIMIT {{{{ __frame_max_rows }}}} OFFSET {{{{ __cursor_offset }}}}"
              iterator: row
              spec: {{mode: cursor, max_in_flight: 4, frame: {{max_rows: 5}}}}
            tool:
              - name: mark
                kind: postgres
                auth: {pg_entry}
                command: "UPDATE {table} SET seen = {{{{ row.id }}}} * 10 WHERE id = {{{{ row.id }}}}; SELECT 1 / ({{{{ row.id }}}} - 17) AS x"
        """, execution_timeout_s=300)
        assert report.state == "FAILED"
        result = _of(report, "loop.done")[0]["payload"]["meta"]
        assert (result["count"], result["done"], result["failed"], result["pages"]) == (23, 23, 1, 5)
        # every row but the one whose task failed (its transaction rolled back) was written once
        assert pg.execute(dsn, f"SELECT count(*) FROM {table} WHERE seen = id * 10") == [(22,)]
        assert pg.execute(dsn, f"SELECT id FROM {table} WHERE seen IS NULL") == [(17,)]
    finally:
        pg.execute(dsn, f"DROP TABLE IF EXISTS {table}")


async def test_a_duckdb_claim_loop_drains_its_queue(run_yaml, tmp_path: Path) -> None:
    db = tmp_path / "queue.duckdb"
    with duckdb.connect(str(db)) as con:
        con.execute("CREATE TABLE q AS SELECT range AS id FROM range(1, 1001)")
        con.execute("CREATE TABLE done (id BIGINT)")
    report = await run_yaml(f"""
    workflow:
      - step: drain
        loop:
          cursor:
            kind: duckdb
            database: "{db}"
            claim: "DELETE FROM q WHERE id IN (SELECT id FROM q ORDER BY id LIMIT {{{{ __frame_max_rows }}}}) RETURNING id"
          iterator: job
          spec: {{mode: cursor, frame: {{max_rows: 250}}}}
        tool: {{kind: noop}}
        next: {{arcs: [{{step: check}}]}}
      - step: check
        tool: {{kind: duckdb, database: "{db}", query: "SELECT count(*) AS left_over FROM q"}}
    """, execution_timeout_s=300)
    assert report.state == "COMPLETED", report.error
    result = report.steps["drain"]["result"]
    assert (result["count"], result["done"], result["pages"]) == (1000, 1000, 4)
    assert report.steps["check"]["result"]["rows"] == [{"left_over": 0}]
