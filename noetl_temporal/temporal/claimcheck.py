"""Claim check for large payloads: a Temporal payload codec that keeps history small.

Any payload over ``threshold`` bytes (activity inputs and results, workflow input and
output, query answers) is written to a payload store under its SHA-256 and replaced in
history by a small reference payload. Decoding reads it back. Temporal's hard limit is
2 MB per payload (warning at 512 KB); with the claim check a playbook that carries a large
``ctx`` or a large loop result stays far below it.

Client and workers must use the same store: a shared directory (default
``~/.local/share/noetl-temporal/payloads``) or PostgreSQL (``NOETL_PAYLOAD_STORE`` =
``postgresql://...``). Stored payloads are content-addressed, so writes are idempotent.

A local activity's arguments never enter history: the workflow marks them
(``local_only``) and they stay inline whatever their size.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import threading
from collections.abc import Sequence
from pathlib import Path

from temporalio.api.common.v1 import Payload
from temporalio.converter import DataConverter, PayloadCodec

from ..paths import data_dir
from ..pgschema import ensure_schema
from .local_only import LOCAL_ONLY_ENCODING

__all__ = ["ClaimCheckCodec", "data_converter", "DEFAULT_THRESHOLD", "default_payload_store"]

DEFAULT_THRESHOLD = 128 * 1024
_ENCODING = b"noetl/claim-check"
_LOCAL_ONLY = LOCAL_ONLY_ENCODING.encode()


def default_payload_store() -> str:
    explicit = os.environ.get("NOETL_PAYLOAD_STORE")
    if explicit:
        return explicit
    return str(data_dir() / "payloads")


class _FileStore:
    def __init__(self, root: str) -> None:
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


class _PgStore:
    def __init__(self, dsn: str) -> None:
        import psycopg

        self._conn = psycopg.connect(dsn, autocommit=True)
        self._lock = threading.Lock()
        with self._lock:
            ensure_schema(self._conn, [
                "CREATE TABLE IF NOT EXISTS noetl_payloads (key TEXT PRIMARY KEY, data BYTEA NOT NULL)"])

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


class ClaimCheckCodec(PayloadCodec):
    def __init__(self, store: str | None = None, threshold: int = DEFAULT_THRESHOLD) -> None:
        location = store or default_payload_store()
        self._store = _PgStore(location) if location.startswith(("postgresql://", "postgres://")) \
            else _FileStore(location)
        self.threshold = threshold

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        out = []
        for payload in payloads:
            if payload.metadata.get("encoding") == _LOCAL_ONLY or payload.ByteSize() <= self.threshold:
                out.append(payload)
                continue
            data = payload.SerializeToString()
            key = hashlib.sha256(data).hexdigest()
            await asyncio.to_thread(self._store.put, key, data)
            out.append(Payload(metadata={"encoding": _ENCODING, "size": str(len(data)).encode()},
                               data=key.encode()))
        return out

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        out = []
        for payload in payloads:
            if payload.metadata.get("encoding") != _ENCODING:
                out.append(payload)
                continue
            key = payload.data.decode()
            try:
                data = await asyncio.to_thread(self._store.get, key)
            except (OSError, KeyError):
                raise RuntimeError(f"large payload {key} is missing from the payload store "
                                   f"({default_payload_store()}); client and workers must share it "
                                   "(set NOETL_PAYLOAD_STORE)") from None
            restored = Payload()
            restored.ParseFromString(data)
            out.append(restored)
        return out


def data_converter(store: str | None = None, threshold: int = DEFAULT_THRESHOLD) -> DataConverter:
    """The default converter plus the claim check (``converter.data_converter`` without a
    converter or codec of yours)."""
    from .converter import data_converter as layered

    return layered(None, store=store, threshold=threshold)
