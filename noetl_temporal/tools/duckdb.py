"""``kind: duckdb``: SQL on an embedded DuckDB database.

``database`` is a file path (relative paths are relative to the task's workdir, else
the worker's directory) or ``:memory:`` (the default: a fresh database per task).
``command``/``query`` is one string (one or many ``;``-separated statements) or a list;
``params`` (list for ``?``/``$1``, mapping for ``$name``) apply to a single statement.
The result is that of the last statement (``_sql.result``).

DuckDB's Python API is synchronous, so the query runs in a worker thread; the event
loop keeps heartbeating, and on timeout or cancellation the connection is interrupted
(``interrupt()``), which stops a running query within milliseconds.

Statements of one task run in one transaction (``autocommit: true`` turns that off).
Errors: kind ``duckdb``, ``code`` = the exception class (``CatalogException``,
``ParserException`` ...). Write conflicts (``TransactionException``) and a database file
locked by another process are retryable.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from typing import Any

from ..errors import ToolConfigError, ToolError, ToolTimeout
from ..tool_kinds.duckdb import DUCKDB
from . import _sql
from .base import ToolCall, fail_with, resolve_timeout

#: how long to wait for an interrupted query to give the thread back
INTERRUPT_GRACE = 5.0


def _database(config: dict, call: ToolCall) -> str:
    raw = config.get("database", config.get("db"))
    if raw is None or raw == "" or raw == ":memory:":
        return ":memory:"
    if not isinstance(raw, str):
        raise ToolConfigError(f"duckdb 'database' must be a file path, got {type(raw).__name__}")
    path = os.path.expanduser(raw)
    if not os.path.isabs(path) and not path.startswith(("md:", "s3:", "http:", "https:")):
        base = call.workdir or os.getcwd()
        if call.workdir:
            os.makedirs(call.workdir, exist_ok=True)
        path = os.path.join(base, path)
    return path


def _error(exc: Exception, index: int, count: int) -> ToolError:
    name = type(exc).__name__
    text = " ".join(str(exc).split())
    where = f" in statement {index + 1} of {count}" if count > 1 else ""
    retryable = name == "TransactionException" or (name == "IOException" and "lock" in text.lower())
    return ToolError(f"duckdb {name}{where}: {text}", kind="duckdb", retryable=retryable, code=name,
                     details={"statement_index": index})


class _Run:
    """One task's work on its own connection, in a thread."""

    def __init__(self, duckdb, database: str, read_only: bool, sql: list[str], params: Any,
                 autocommit: bool) -> None:
        self.duckdb, self.database, self.read_only = duckdb, database, read_only
        self.sql, self.params, self.autocommit = sql, params, autocommit
        self.conn = None
        self.interrupted = False
        self._lock = threading.Lock()

    def interrupt(self) -> None:
        with self._lock:
            self.interrupted = True
            if self.conn is not None:
                with contextlib.suppress(Exception):
                    self.conn.interrupt()

    def __call__(self) -> dict[str, Any]:
        duckdb = self.duckdb
        try:
            conn = duckdb.connect(self.database, read_only=self.read_only)
        except duckdb.Error as exc:
            raise _error(exc, 0, len(self.sql)) from None
        with self._lock:
            self.conn = conn
            if self.interrupted:  # cancelled before we got here
                conn.close()
                raise TimeoutError
        index = 0
        try:
            if not self.autocommit:
                conn.begin()
            res = None
            for i, statement in enumerate(self.sql):
                index = i
                res = conn.execute(statement, self.params) if self.params is not None else conn.execute(statement)
            columns = [d[0] for d in res.description] if res is not None and res.description else []
            rows = res.fetchall() if res is not None and columns else []
            if not self.autocommit:
                conn.commit()
            return _sql.result(columns, rows, None, len(self.sql))
        except duckdb.Error as exc:
            with contextlib.suppress(Exception):
                conn.rollback()
            if self.interrupted:
                raise TimeoutError from None
            raise _error(exc, index, len(self.sql)) from None
        finally:
            with self._lock:
                self.conn = None
            conn.close()


class DuckdbTool:
    declaration = DUCKDB  # its settings and traits: tool_kinds/duckdb.py
    kind = declaration.kind

    async def run(self, config: dict, call: ToolCall) -> Any:
        duckdb = _sql.data_driver("duckdb", "duckdb", "the duckdb package")
        sql = _sql.statements(config, self.kind)
        params = _sql.params(config, sql, self.kind)
        work = _Run(duckdb, _database(config, call), _sql.flag(config.get("read_only")), sql, params,
                    _sql.flag(config.get("autocommit")))
        timeout = resolve_timeout(config, call, _sql.DEFAULT_TIMEOUT)
        future = asyncio.get_running_loop().run_in_executor(None, work)
        try:
            async with asyncio.timeout(timeout):
                return await _sql.with_heartbeats(asyncio.shield(future), call, self.kind)
        except TimeoutError:
            raise fail_with(ToolTimeout(f"duckdb task ran past its {timeout:g} s timeout; query interrupted"),
                            None) from None
        finally:
            if not future.done():  # timed out or cancelled: stop the query, give the thread back
                work.interrupt()
                with contextlib.suppress(BaseException):
                    await asyncio.wait_for(asyncio.shield(future), INTERRUPT_GRACE)
