"""Find a PostgreSQL server for the data-tool tests.

Candidates, in order: ``$NOETL_TEST_PG_DSN``, ``postgresql://root@127.0.0.1:5432/test``,
``postgresql://postgres@127.0.0.1:5432/postgres`` (trust authentication on loopback, as on
the development machines and in CI). With none reachable the tests are skipped locally;
in CI (``$CI`` or ``$NOETL_TEST_PG_REQUIRED`` set) that is a failure, because CI installs
and starts PostgreSQL.

Use :func:`unique_name` for tables (tests run against a shared database) and drop them.
"""

from __future__ import annotations

import os
import uuid
from urllib.parse import urlsplit

import pytest

CANDIDATES = (
    "postgresql://root@127.0.0.1:5432/test",
    "postgresql://postgres@127.0.0.1:5432/postgres",
)

_found: str | None | bool = False  # False = not probed yet


def candidates() -> list[str]:
    explicit = os.environ.get("NOETL_TEST_PG_DSN")
    return ([explicit] if explicit else []) + [c for c in CANDIDATES if c != explicit]


def find_dsn() -> str | None:
    """The first candidate that accepts a connection (probed once per session)."""
    global _found
    if _found is not False:
        return _found  # type: ignore[return-value]
    import psycopg

    _found = None
    for dsn in candidates():
        try:
            with psycopg.connect(dsn, connect_timeout=3) as conn:
                conn.execute("SELECT 1")
        except psycopg.Error:
            continue
        _found = dsn
        break
    return _found


def require_dsn() -> str:
    """The DSN of a usable server, or skip (fail in CI) with what was tried and how to fix it."""
    dsn = find_dsn()
    if dsn is not None:
        return dsn
    tried = ", ".join(candidates())
    message = (f"no PostgreSQL server for the data-tool tests (tried {tried}). Start one on "
               f"127.0.0.1:5432 with trust auth for user 'root' and database 'test', or set "
               f"NOETL_TEST_PG_DSN. CI must not skip these tests: .ci/run installs and starts PostgreSQL.")
    if os.environ.get("CI") or os.environ.get("NOETL_TEST_PG_REQUIRED"):
        pytest.fail(message)
    pytest.skip(message)


def fields(dsn: str) -> dict[str, str]:
    """A DSN as keychain fields: host, port, user, dbname for a TCP DSN; ``{"dsn": ...}``
    for anything else (a Unix-socket DSN such as ``postgresql://root@/test?host=/var/run/postgresql``)."""
    parts = urlsplit(dsn)
    if not parts.hostname or parts.query:
        return {"dsn": dsn}
    out = {"host": parts.hostname, "port": str(parts.port or 5432),
           "user": parts.username or "postgres", "dbname": parts.path.lstrip("/") or "postgres"}
    if parts.password:
        out["password"] = parts.password
    return out


def unique_name(prefix: str = "t") -> str:
    return f"noetl_{prefix}_{uuid.uuid4().hex[:10]}"


def execute(dsn: str, sql: str) -> list[tuple]:
    """Run SQL outside of any tool (setup, checks, cleanup), autocommitted."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        cur = conn.execute(sql)
        return cur.fetchall() if cur.description else []
