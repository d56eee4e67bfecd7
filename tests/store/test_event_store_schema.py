"""The SQLite event store's schema and bodies across versions: a file made by an older
version (with the indexes no query used) keeps working, new files make only the indexes
the readers use, and a stored body is the event's compact JSON, byte for byte."""

from __future__ import annotations

import json
import sqlite3
from datetime import date
from pathlib import Path

from noetl_temporal.store.event_store import SqliteEventStore

# The schema before the unused indexes were dropped (as older versions created it).
OLD_SCHEMA = """
CREATE TABLE noetl_events (
    execution_id TEXT NOT NULL, event_id TEXT NOT NULL, seq INTEGER NOT NULL,
    event_type TEXT NOT NULL, entity_type TEXT, entity_id TEXT, status TEXT, timestamp TEXT,
    body TEXT NOT NULL, PRIMARY KEY (execution_id, event_id));
CREATE INDEX noetl_events_seq ON noetl_events (execution_id, seq);
CREATE INDEX noetl_events_type ON noetl_events (execution_id, event_type);
CREATE INDEX noetl_events_entity ON noetl_events (execution_id, entity_type, entity_id);
CREATE INDEX noetl_events_type_time ON noetl_events (event_type, timestamp);
"""


def _event(seq: int, event_type: str, **extra: object) -> dict:
    return {"event_id": f"ex:{seq}", "event_type": event_type, "timestamp": f"2026-01-01T00:00:{seq:02d}Z",
            "execution_id": "ex", "entity_type": "step", "entity_id": "s", "seq": seq, "status": "ok",
            "payload": {}, **extra}


EVENTS = [_event(1, "playbook.started"), _event(2, "step.started"),
          _event(3, "step.done", payload={"note": "é ✓", "when": date(2026, 1, 2)}),
          _event(4, "playbook.finished")]


def _indexes(path: Path) -> set[str]:
    with sqlite3.connect(path) as conn:
        return {name for (name,) in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE 'noetl_events_%'")}


def test_a_new_store_indexes_what_readers_use(tmp_path: Path) -> None:
    SqliteEventStore(str(tmp_path / "new.db")).close()
    assert _indexes(tmp_path / "new.db") == {"noetl_events_seq", "noetl_events_type"}


def test_an_old_store_reads_and_writes_as_a_new_one(tmp_path: Path) -> None:
    with sqlite3.connect(tmp_path / "old.db") as conn:
        conn.executescript(OLD_SCHEMA)
    old, new = SqliteEventStore(str(tmp_path / "old.db")), SqliteEventStore(str(tmp_path / "new.db"))
    for store in (old, new):
        assert store.write(EVENTS[:3]) == 3
        assert store.write(EVENTS) == 4      # a retried flush: the first three are ignored
    assert len(_indexes(tmp_path / "old.db")) == 4   # the old file keeps its indexes
    for query in ({}, {"types": ["step.*"]}, {"entity": "s", "after_seq": 1}, {"limit": 2}):
        assert old.read("ex", **query) == new.read("ex", **query)
    assert old.lifecycle("ex") == new.lifecycle("ex")
    assert [e["seq"] for e in old.read("ex")] == [1, 2, 3, 4]
    old.close()
    new.close()


def test_bodies_are_the_compact_json_of_the_events(tmp_path: Path) -> None:
    store = SqliteEventStore(str(tmp_path / "e.db"))
    store.write(EVENTS)
    bodies = [row[0] for row in store._execute("SELECT body FROM noetl_events ORDER BY seq")]
    assert bodies == [json.dumps(e, default=str, separators=(",", ":")) for e in EVENTS]
    assert '"when":"2026-01-02"' in bodies[2] and "\\u00e9" in bodies[2]
    store.close()
