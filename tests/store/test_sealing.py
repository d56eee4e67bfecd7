"""Data at rest under the deployment's codec (pure code over real stores: SQLite, files)."""

from __future__ import annotations

import sqlite3

import pytest

from noetl_temporal.store import sealing
from noetl_temporal.store.event_store import SqliteEventStore
from tests.support.user_codec import EncryptingCodec

SECRET = "sealed-secret-42"


@pytest.fixture
def codec():
    sealing.install(EncryptingCodec())
    yield
    sealing.reset()


def _event(seq: int) -> dict:
    return {"execution_id": "e1", "event_id": f"e1:{seq}", "seq": seq, "event_type": "step.done",
            "entity_type": "step", "entity_id": "start", "status": "completed", "timestamp": "2026-01-01T00:00:00Z",
            "payload": {"value": SECRET}}


def test_event_bodies_are_sealed_and_the_envelope_stays_searchable(tmp_path, codec):
    store = SqliteEventStore(str(tmp_path / "events.db"))
    store.write([_event(1), _event(2)])
    with sqlite3.connect(tmp_path / "events.db") as conn:
        rows = conn.execute("SELECT * FROM noetl_events").fetchall()
    assert rows and all(SECRET not in repr(row) for row in rows)
    assert {row[3] for row in rows} == {"step.done"}   # the type column is clear
    assert store.read("e1", types=["step.done"], entity="start") == [_event(1), _event(2)]
    assert store.lifecycle("e1")["last_seq"] == 2


def test_clear_data_written_before_stays_readable(tmp_path):
    store = SqliteEventStore(str(tmp_path / "events.db"))
    sealing.install(None)
    try:
        store.write([_event(1)])
        sealing.install(EncryptingCodec())
        store.write([_event(2)])
        assert store.read("e1") == [_event(1), _event(2)]
        sealing.install(None)   # a reader without the codec: told what to set
        with pytest.raises(ValueError, match="NOETL_CODEC"):
            store.read("e1")
    finally:
        sealing.reset()


def test_bytes_round_trip(codec):
    sealed = sealing.seal_many([SECRET.encode(), b""])
    assert all(s.startswith(sealing.SEALED_PREFIX) and SECRET.encode() not in s for s in sealed)
    assert sealing.unseal_many([*sealed, b"clear"]) == [SECRET.encode(), b"", b"clear"]
