"""Creating our PostgreSQL tables when several processes start at once.

``CREATE TABLE IF NOT EXISTS`` is not safe against itself: two workers starting together
both see no table, and the second fails on the catalog's unique index
(``pg_type_typname_nsp_index``). Every store creates its schema here, inside a
transaction that holds one advisory lock, so concurrent starts take turns.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["ensure_schema"]

# An arbitrary constant shared by every noetl-temporal process ("noetl" in ASCII).
_SCHEMA_LOCK = 0x6E6F65746C


def ensure_schema(conn: Any, statements: Iterable[str]) -> None:
    """Run DDL statements on a psycopg connection, one process at a time."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
        for statement in statements:
            conn.execute(statement)
