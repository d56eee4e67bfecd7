"""The API pages the events of a huge execution with bounded memory, on SQLite and on
PostgreSQL: every page is a keyset query on the ``(execution_id, seq)`` index (the store
never sorts or scans the whole log), and what one page request allocates in the API does
not grow with the log's length.

The log is written straight to a real store (what a 16,000-step run's workers write,
100,000 events), so the test does not have to run that playbook first.
"""

from __future__ import annotations

import tracemalloc
import uuid

import pytest

from noetl_temporal.store.event_store import PostgresEventStore, SqliteEventStore

from .conftest import app_client, make_settings

pytestmark = pytest.mark.temporal

EVENTS = 100_000
PAGE = 1000
KINDS = ("step.started", "task.started", "task.done", "step.done", "next.evaluated", "policy.admit.evaluated")


def _log(execution_id: str) -> list[dict]:
    events = [{"execution_id": execution_id, "event_id": f"{execution_id}-{seq}", "seq": seq,
               "event_type": KINDS[seq % len(KINDS)], "entity_type": "step", "entity_id": f"s{seq // len(KINDS)}",
               "status": "success", "timestamp": f"2026-01-01T00:00:{seq % 60:02d}Z",
               "payload": {"outcome": {"status": "ok", "result": seq}}} for seq in range(1, EVENTS)]
    events.append({"execution_id": execution_id, "event_id": f"{execution_id}-{EVENTS}", "seq": EVENTS,
                   "event_type": "playbook.finished", "entity_type": "playbook", "entity_id": execution_id,
                   "status": "success", "timestamp": "2026-01-01T00:01:00Z",
                   "payload": {"meta": {"status": "COMPLETED"}}})
    return events


@pytest.fixture(params=["sqlite", "postgresql"])
def big_log(request, tmp_path):
    if request.param == "sqlite":
        store = SqliteEventStore(str(tmp_path / "events.db"))
    else:
        from tests.support.postgres import require_dsn
        store = PostgresEventStore(require_dsn())
    execution_id = f"big-{uuid.uuid4().hex[:10]}"
    events = _log(execution_id)
    for start in range(0, EVENTS, 10_000):
        store.write(events[start:start + 10_000])
    del events
    if request.param == "postgresql":   # what autovacuum does after a bulk write: the planner's row counts
        store._conn.execute("ANALYZE noetl_events")
    try:
        yield store, execution_id
    finally:
        if request.param == "postgresql":
            store._execute("DELETE FROM noetl_events WHERE execution_id = %s RETURNING 1", (execution_id,))
        store.close()


def _plan(store, execution_id: str, after_seq: int, types: list[str] | None = None) -> str:
    sql, params = store.read_sql(execution_id, after_seq=after_seq, limit=PAGE, types=types)
    if isinstance(store, SqliteEventStore):
        return " ".join(str(row[-1]) for row in store._execute("EXPLAIN QUERY PLAN " + sql, params))
    return " ".join(str(row[0]) for row in store._execute("EXPLAIN " + sql, params))


def test_the_store_pages_by_the_seq_index(big_log):
    store, execution_id = big_log
    for after in (0, EVENTS // 2, EVENTS - PAGE):
        plan = _plan(store, execution_id, after)
        if isinstance(store, SqliteEventStore):
            assert "noetl_events_seq" in plan and "TEMP B-TREE" not in plan, plan   # no sort of the log
        else:
            assert "Index Scan" in plan and "noetl_events_seq" in plan and "Sort" not in plan, plan
    assert store.last_seq(execution_id) == EVENTS
    assert store.lifecycle(execution_id)["terminal"]["event_type"] == "playbook.finished"


async def test_the_api_pages_a_huge_log_with_bounded_memory(temporal, task_queue, catalog, big_log):
    store, execution_id = big_log
    settings = make_settings(temporal, task_queue, catalog, store)
    peaks: list[int] = []
    seen = 0
    async with app_client(settings) as http:
        assert (await http.get(f"/executions/{execution_id}/status")).json()["state"] == "COMPLETED"
        after: int | None = 0
        pages = 0
        while after is not None:
            measure = pages in (1, 50, EVENTS // PAGE - 1)   # early, in the middle, at the end
            if measure:
                tracemalloc.start()
            r = await http.get(f"/executions/{execution_id}/events", params={"after_seq": after, "limit": PAGE})
            if measure:
                peaks.append(tracemalloc.get_traced_memory()[1])
                tracemalloc.stop()
            assert r.status_code == 200, r.text
            page = r.json()
            assert [e["seq"] for e in page["events"]] == list(range(after + 1, after + 1 + len(page["events"])))
            seen += len(page["events"])
            after = page["next_after_seq"]
            pages += 1
        assert seen == EVENTS
        # A filtered page near the end is as cheap: the filter is in the query, not in Python.
        r = await http.get(f"/executions/{execution_id}/events",
                           params={"after_seq": EVENTS - 10 * PAGE, "type": "step.done", "limit": 100})
        assert [e["event_type"] for e in r.json()["events"]] == ["step.done"] * 100
    print(f"API allocations per page request (start, middle, end): {[f'{p / 2**20:.1f} MiB' for p in peaks]}")
    assert len(peaks) == 3 and max(peaks) < 20 * 2**20, peaks   # a page's worth, not the log's
    assert max(peaks) < 2 * min(peaks), peaks
