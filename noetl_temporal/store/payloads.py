"""The payload store: large Temporal payloads the claim check moves out of history.

Content-addressed (the key is the payload's SHA-256), so a write is idempotent and two
writers of one payload agree. A directory (``<dir>/<key[:2]>/<key>``) or the PostgreSQL
table ``noetl_payloads``; where it is comes from ``$NOETL_STORE`` (``blobs.py``). The codec
that uses it is ``noetl_temporal.conversion.claimcheck``.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Protocol

from .blobs import is_postgres, payload_location, pg_connect

__all__ = ["PayloadStore", "FilePayloadStore", "PostgresPayloadStore", "open_payload_store"]


class PayloadStore(Protocol):
    location: str

    def put(self, key: str, data: bytes) -> None: ...

    def get(self, key: str) -> bytes:
        """The stored bytes; ``KeyError`` or ``OSError`` when missing."""
        ...


class FilePayloadStore:
    def __init__(self, root: str) -> None:
        self.location = root
        self.root = Path(root)

    def put(self, key: str, data: bytes) -> None:
        path = self.root / key[:2] / key
        if path.exists():
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)  # atomic: a reader never sees half a payload

    def get(self, key: str) -> bytes:
        return (self.root / key[:2] / key).read_bytes()


_SCHEMA = ["CREATE TABLE IF NOT EXISTS noetl_payloads (key TEXT PRIMARY KEY, data BYTEA NOT NULL)"]


class PostgresPayloadStore:
    """One connection for the store's life (payloads are read and written from the codec's
    threads, one statement at a time under a lock)."""

    def __init__(self, dsn: str) -> None:
        self.location = dsn
        self._conn = pg_connect(dsn, "payloads", _SCHEMA)
        self._lock = threading.Lock()

    def put(self, key: str, data: bytes) -> None:
        with self._lock:
            self._conn.execute("INSERT INTO noetl_payloads (key, data) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                               (key, data))

    def get(self, key: str) -> bytes:
        with self._lock:
            row = self._conn.execute("SELECT data FROM noetl_payloads WHERE key = %s", (key,)).fetchone()
        if row is None:
            raise KeyError(key)
        return bytes(row[0])


def open_payload_store(location: str | None = None) -> PayloadStore:
    """The store at ``location`` (a directory or DSN), else the configured one."""
    where = location or payload_location()
    return PostgresPayloadStore(where) if is_postgres(where) else FilePayloadStore(where)
