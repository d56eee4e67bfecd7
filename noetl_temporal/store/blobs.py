"""Where the blobs of a deployment live: one URL, ``$NOETL_STORE``, for payloads, results and events.

Three kinds of data leave workflow history (docs/durability.md): large payloads (the claim
check), large task results (reference-first results) and the event log. All three go to
one store, named by one URL:

- ``file:///dir`` (or a plain path): ``dir/payloads/``, ``dir/results/`` and the SQLite
  file ``dir/events.db``. The default is the local data directory
  (``~/.local/share/noetl-temporal``).
- ``postgresql://...`` (or ``postgres://``): the tables ``noetl_payloads``,
  ``noetl_result_store`` and ``noetl_events`` of that database.
- ``s3://`` is reserved for an object store and refused for now.

The settings from before (``NOETL_PAYLOAD_STORE``, ``NOETL_RESULT_STORE`` with
``NOETL_RESULT_STORE_KIND``/``NOETL_RESULT_STORE_DSN``, ``NOETL_EVENT_STORE``) still work and
win over ``$NOETL_STORE`` for their kind, so a deployment can move over one setting at a
time; each logs a deprecation warning once per process naming ``NOETL_STORE``.

One connection policy for PostgreSQL (:func:`pg_connect`): autocommit (every write is one
idempotent statement or its own transaction), an ``application_name`` per use, and each
schema created once per process and DSN, under the advisory lock of ``pgschema``.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from ..errors import ConfigError
from .local_data import data_dir
from .pgschema import ensure_schema

__all__ = ["STORE_ENV", "StoreURL", "parse_store_url", "store_url", "payload_location", "event_location",
           "result_kind", "result_root", "result_dsn", "pg_connect", "set_payload_location",
           "is_postgres", "sqlite_path"]

log = logging.getLogger(__name__)

#: The one setting: a ``file://`` or ``postgresql://`` URL.
STORE_ENV = "NOETL_STORE"

_PG = ("postgresql://", "postgres://")
_FIX = f"set ${STORE_ENV} to file:///a/shared/directory or postgresql://user:pass@host/db (docs/deployment.md)"


def is_postgres(location: str) -> bool:
    return location.startswith(_PG)


@dataclass(frozen=True)
class StoreURL:
    """A parsed store URL: ``kind`` is ``file`` (``path`` set) or ``postgres`` (``dsn`` set)."""

    kind: str
    path: Path | None = None
    dsn: str | None = None

    def location(self, sub: str) -> str:
        """The location of one kind of blob: ``sub`` under a directory, else the DSN itself."""
        if self.kind == "postgres":
            assert self.dsn is not None
            return self.dsn
        assert self.path is not None
        return str(self.path / sub)


def parse_store_url(text: str, *, setting: str = STORE_ENV) -> StoreURL:
    """``file:///dir``, a plain path, or ``postgresql://...``; anything else is a clear error."""
    value = text.strip()
    if is_postgres(value):
        return StoreURL("postgres", dsn=value)
    if value.startswith("file:"):
        parts = urlsplit(value)
        if parts.netloc not in ("", "localhost") or not parts.path:
            raise ConfigError(f"{setting}={value!r}: a file URL names a local directory, as file:///path/to/dir",
                              fix=_FIX)
        return StoreURL("file", path=Path(unquote(parts.path)).expanduser())
    scheme = value.partition("://")[0] if "://" in value else ""
    if scheme == "s3":
        raise ConfigError(f"{setting}={value!r}: s3:// stores are not supported yet", fix=_FIX)
    if scheme or not value:
        raise ConfigError(f"{setting}={value!r} is not a store URL", fix=_FIX)
    return StoreURL("file", path=Path(value).expanduser())


def store_url() -> StoreURL:
    """``$NOETL_STORE``, else the local data directory."""
    explicit = os.environ.get(STORE_ENV, "").strip()
    return parse_store_url(explicit) if explicit else StoreURL("file", path=data_dir())


_warned: set[str] = set()
_warned_lock = threading.Lock()


def _old(name: str, use: str) -> str | None:
    """The value of a deprecated setting (with its warning, once per process), or None."""
    value = os.environ.get(name, "").strip()
    if not value:
        return None
    with _warned_lock:
        first = name not in _warned
        _warned.add(name)
    if first:
        log.warning("%s is deprecated: set %s to one URL for payloads, results and events instead (%s; "
                    "docs/deployment.md). %s still works and wins over %s for %s.",
                    name, STORE_ENV, "file:///dir or postgresql://...", name, STORE_ENV, use)
    return value


_payload_override: list[str] = []


def set_payload_location(location: str | None) -> None:
    """Use ``location`` (a directory, ``file://`` or ``postgresql://`` URL) for payloads in this
    process: the codec server's ``--payload-store``."""
    _payload_override[:] = [location] if location else []


def payload_location() -> str:
    """Where the claim check keeps payloads: a directory or a DSN."""
    if _payload_override:
        return parse_store_url(_payload_override[0], setting="--payload-store").location("")
    old = _old("NOETL_PAYLOAD_STORE", "payloads")
    if old:
        return parse_store_url(old, setting="NOETL_PAYLOAD_STORE").location("")
    return store_url().location("payloads")


def event_location() -> str:
    """Where the event log is: a SQLite file path or a DSN."""
    old = _old("NOETL_EVENT_STORE", "events")
    if old:
        return old
    return store_url().location("events.db")


def sqlite_path(location: str) -> str:
    """A SQLite file from a path or a ``file://`` URL (``:memory:`` as is)."""
    if location.startswith("file:"):
        found = parse_store_url(location, setting="event store").path
        assert found is not None
        return str(found)
    return location


def result_kind() -> str:
    """The result store a task uses unless its spec names one: ``fs`` or ``postgres``."""
    old = _old("NOETL_RESULT_STORE_KIND", "results")
    if old:
        return old
    return "fs" if store_url().kind == "file" else "postgres"


def result_root() -> Path:
    """The directory of the ``fs`` result store."""
    old = _old("NOETL_RESULT_STORE", "results")
    if old:
        return Path(old).expanduser()
    url = store_url()
    return Path(url.location("results")) if url.kind == "file" else data_dir() / "results"


def result_dsn() -> str | None:
    """The database of the ``postgres`` result store, if one is set."""
    old = _old("NOETL_RESULT_STORE_DSN", "results")
    if old:
        return old
    url = store_url()
    return url.dsn if url.kind == "postgres" else None


_ready: set[tuple[str, str]] = set()
_ready_lock = threading.Lock()


def pg_connect(dsn: str, use: str, schema: Sequence[str] = ()) -> Any:
    """An autocommit psycopg connection named ``noetl-temporal-<use>``; ``schema`` is created
    the first time this process connects to ``dsn`` for ``use`` (other processes may race:
    ``ensure_schema`` serialises them)."""
    import psycopg

    conn = psycopg.connect(dsn, autocommit=True, application_name=f"noetl-temporal-{use}")
    if schema:
        with _ready_lock:
            if (dsn, use) not in _ready:
                ensure_schema(conn, schema)
                _ready.add((dsn, use))
    return conn
