"""The playbook catalog: validated, versioned playbook sources in a real database.

Why a database and not files: several API processes (and the CLI) register and read
playbooks concurrently, and versions must be assigned exactly once. SQLite (a file, the
default, created on first use) serves one machine; PostgreSQL serves a deployment.

Rules:

* ``register(yaml_text)`` validates with the same front end as ``validate`` and ``run``
  (an invalid playbook raises :class:`~noetl_temporal.errors.PlaybookInvalid` and stores
  nothing). The catalog path is ``metadata.path``, else ``metadata.name``.
* Versions are integers 1, 2, 3 ... per path. Registering exactly the content of the
  latest version returns that version instead of creating a new one.
* Executions are pinned by construction: a started workflow carries the normalized
  playbook in its input, so registering a new version never changes a running execution.

The class is synchronous (stdlib ``sqlite3`` / ``psycopg`` 3) and opens one connection per
call, so it is safe to use from worker threads (the API calls it via a thread pool).
"""

from __future__ import annotations

import hashlib
import os
import re
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..errors import ConfigError, NotFound
from .catalog_paths import MAX_PATH_CHARS, PATH_PATTERN, canonical_path, path_problem
from .catalog_paths import RULE as PATH_RULE
from .local_data import data_dir

__all__ = ["Catalog", "NotFound", "default_sqlite_path", "PATH_PATTERN", "MAX_PATH_CHARS", "catalog_path_of",
           "path_problem", "canonical_path"]

_TABLE_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$")
_RETRIES = 5  # concurrent registrations of one path race for the next version number


def default_sqlite_path() -> Path:
    """``$XDG_DATA_HOME/noetl-temporal/catalog.db`` (``~/.local/share/...`` by default)."""
    return data_dir() / "catalog.db"


def catalog_path_of(metadata: Any) -> str | None:
    """The catalog path of a playbook: ``metadata.path``, else ``metadata.name``; NoETL's
    leading ``/`` dropped (``canonical_path``)."""
    path = getattr(metadata, "path", None) or getattr(metadata, "name", None)
    return canonical_path(path) if isinstance(path, str) else path


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class Catalog:
    """``Catalog(sqlite_path=...)`` or ``Catalog(dsn="postgresql://...")``.

    ``table`` names the table (``schema.table`` allowed), so tests and tenants can keep
    their own; it is created on first use.
    """

    def __init__(self, *, dsn: str | None = None, sqlite_path: str | os.PathLike[str] | None = None,
                 table: str = "noetl_catalog") -> None:
        if not _TABLE_RE.match(table):
            raise ConfigError(f"invalid catalog table name {table!r}", fix="use letters, digits and _ "
                                                                            "(optionally schema.table)")
        self.table = table
        self.dsn = dsn
        self.sqlite_path = None if dsn else Path(sqlite_path or default_sqlite_path()).expanduser()
        self._ready = False
        self._lock = threading.Lock()

    @classmethod
    def from_config(cls, dsn: str | None = None, sqlite_path: str | None = None) -> Catalog:
        """Flags first, then ``NOETL_CATALOG_DSN`` / ``NOETL_CATALOG_PATH``, else the default file."""
        dsn = dsn or os.environ.get("NOETL_CATALOG_DSN") or None
        sqlite_path = sqlite_path or os.environ.get("NOETL_CATALOG_PATH") or None
        if dsn and dsn.startswith("sqlite:///"):
            return cls(sqlite_path=dsn[len("sqlite:///"):])
        if dsn and not dsn.startswith(("postgres://", "postgresql://")) and "=" not in dsn:
            raise ConfigError(f"unsupported catalog DSN {dsn!r}",
                              fix="use postgresql://user@host/db, or sqlite:///path/to/catalog.db")
        return cls(dsn=dsn, sqlite_path=sqlite_path)

    @property
    def kind(self) -> str:
        return "postgresql" if self.dsn else "sqlite"

    def describe(self) -> str:
        return f"postgresql ({self.table})" if self.dsn else f"sqlite {self.sqlite_path}"

    # ------------------------------------------------------------------ connections

    @contextmanager
    def _connect(self) -> Iterator[Any]:
        """A connection inside one transaction: committed on success, rolled back on error."""
        if self.dsn:
            import psycopg

            try:
                conn = psycopg.connect(self.dsn, connect_timeout=10)
            except psycopg.OperationalError as exc:
                raise ConfigError(f"cannot reach the catalog database: {exc}".strip(),
                                  fix="check --catalog-dsn / NOETL_CATALOG_DSN") from None
            with conn:  # commits, or rolls back on an exception, then closes
                yield conn
            return
        assert self.sqlite_path is not None
        self.sqlite_path.parent.mkdir(parents=True, exist_ok=True)
        lite = sqlite3.connect(self.sqlite_path, timeout=30, isolation_level=None)
        try:
            lite.execute("BEGIN IMMEDIATE")  # one writer at a time: versions are assigned once
            try:
                yield lite
            except BaseException:
                lite.execute("ROLLBACK")
                raise
            lite.execute("COMMIT")
        finally:
            lite.close()

    def _sql(self, text: str) -> str:
        """Our SQL uses ``?`` placeholders and ``{t}`` for the table; psycopg wants ``%s``."""
        text = text.replace("{t}", self.table)
        return text.replace("?", "%s") if self.dsn else text

    def _ensure(self) -> None:
        """Create the table once, in its own committed transaction (other threads wait)."""
        if self._ready:
            return
        with self._lock:
            if self._ready:
                return
            for attempt in range(3):
                try:
                    with self._connect() as conn:
                        if self.dsn and "." in self.table:
                            conn.execute(f"CREATE SCHEMA IF NOT EXISTS {self.table.split('.')[0]}")
                        conn.execute(self._sql(
                            "CREATE TABLE IF NOT EXISTS {t} (path TEXT NOT NULL, version INTEGER NOT NULL, "
                            "content TEXT NOT NULL, sha256 TEXT NOT NULL, created_at TEXT NOT NULL, "
                            "PRIMARY KEY (path, version))"))
                    break
                except Exception as exc:  # another process created it at the same moment
                    if attempt == 2 or not _is_unique_violation(exc):
                        raise
            self._ready = True

    def _rows(self, sql: str, *params: Any) -> list[tuple]:
        self._ensure()
        with self._connect() as conn:
            return list(conn.execute(self._sql(sql), params).fetchall())

    # ------------------------------------------------------------------ operations

    def register(self, yaml_text: str, *, source: str = "<catalog>") -> dict[str, Any]:
        """Validate and store; ``{path, version, created, sha256, created_at}``."""
        from ..dsl import load_playbook_text

        loaded = load_playbook_text(yaml_text, source=source)  # raises PlaybookInvalid
        path = catalog_path_of(loaded.playbook.metadata)
        if not path:
            raise _invalid("CATALOG001", "a catalog playbook needs metadata.path or metadata.name", loaded,
                           source, fix="add metadata: {name: my_playbook} (or path: team/my_playbook)")
        problem = path_problem(path)
        if problem:
            raise _invalid("CATALOG002", problem, loaded, source, fix=PATH_RULE)
        sha = _sha(yaml_text)
        last_error: Exception | None = None
        for _ in range(_RETRIES):
            try:
                return self._insert(path, yaml_text, sha)
            except Exception as exc:  # a concurrent register took the version: try the next one
                if not _is_unique_violation(exc):
                    raise
                last_error = exc
        raise ConfigError(f"could not assign a version to {path!r}: {last_error}")

    def _insert(self, path: str, text: str, sha: str) -> dict[str, Any]:
        self._ensure()
        with self._connect() as conn:
            if self.dsn:  # one registration per path at a time (SQLite: BEGIN IMMEDIATE does this)
                conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"{self.table}:{path}",))
            row = conn.execute(self._sql("SELECT version, sha256, created_at FROM {t} WHERE path = ? "
                                         "ORDER BY version DESC LIMIT 1"), (path,)).fetchone()
            if row and row[1] == sha:
                return {"path": path, "version": row[0], "created": False, "sha256": sha, "created_at": row[2]}
            version = (row[0] if row else 0) + 1
            created_at = _now()
            conn.execute(self._sql("INSERT INTO {t} (path, version, content, sha256, created_at) "
                                   "VALUES (?, ?, ?, ?, ?)"), (path, version, text, sha, created_at))
        return {"path": path, "version": version, "created": True, "sha256": sha, "created_at": created_at}

    def get(self, path: str, version: int | None = None) -> tuple[str, int]:
        """``(yaml_text, version)`` of a version (the latest when ``version`` is None)."""
        entry = self.get_entry(path, version)
        return entry["content"], entry["version"]

    def get_entry(self, path: str, version: int | None = None) -> dict[str, Any]:
        path = canonical_path(path)
        cols = "path, version, content, sha256, created_at"
        if version is None:
            rows = self._rows(f"SELECT {cols} FROM {{t}} WHERE path = ? ORDER BY version DESC LIMIT 1", path)
        else:
            rows = self._rows(f"SELECT {cols} FROM {{t}} WHERE path = ? AND version = ?", path, int(version))
        if not rows:
            what = f"version {version} of playbook {path!r}" if version is not None else f"playbook {path!r}"
            raise NotFound(f"{what} is not in the catalog", fix="`noetl-temporal catalog list` (or GET /catalog) lists what is registered")
        p, v, content, sha, created_at = rows[0]
        return {"path": p, "version": v, "content": content, "sha256": sha, "created_at": created_at}

    def versions(self, path: str) -> list[dict[str, Any]]:
        path = canonical_path(path)
        rows = self._rows("SELECT version, sha256, created_at FROM {t} WHERE path = ? ORDER BY version", path)
        return [{"version": v, "sha256": s, "created_at": c} for v, s, c in rows]

    def list(self) -> list[dict[str, Any]]:
        """One entry per path: ``{path, latest_version, versions, updated_at}``, sorted by path."""
        rows = self._rows("SELECT path, MAX(version), COUNT(*), MAX(created_at) FROM {t} "
                          "GROUP BY path ORDER BY path")
        return [{"path": p, "latest_version": v, "versions": n, "updated_at": u} for p, v, n, u in rows]

    def drop(self) -> None:
        """Remove the table (tests and teardown)."""
        with self._connect() as conn:
            conn.execute(self._sql("DROP TABLE IF EXISTS {t}"))
        self._ready = False


def _invalid(code: str, message: str, loaded: Any, source: str, *, fix: str) -> Exception:
    """A located catalog diagnostic, raised like any validation error (same shape as ``validate``)."""
    from ..dsl.diagnostics import Diagnostic
    from ..errors import PlaybookInvalid

    key = "metadata.path" if loaded.playbook.metadata.path else "metadata.name"
    line, col = loaded.positions.get(key) or loaded.positions.get("metadata") or (None, None)
    return PlaybookInvalid([Diagnostic(code=code, severity="error", message=message, path=key, line=line,
                                       col=col, file=source, fix=fix)], source)


def _is_unique_violation(exc: Exception) -> bool:
    if isinstance(exc, sqlite3.IntegrityError):
        return True
    return type(exc).__name__ == "UniqueViolation"
