"""``kind: postgres``: SQL on PostgreSQL with psycopg 3 (async).

Connection: ``auth: <name>`` names a keychain entry (resolved by the activity into
``call.keychain``) holding ``dsn`` and/or ``host``, ``port``, ``user``, ``password``,
``dbname``; ``auth`` may also be a mapping of those fields, and ``dsn``/``connection``
may be given directly (the activity accepts them only when they come from a keychain
template, so no credentials sit in the playbook or in workflow history).

All statements of one task run in one transaction: committed at the end, rolled back
on the first error (``autocommit: true`` runs each statement on its own, for
``CREATE DATABASE``, ``VACUUM`` ...). One string may hold many ``;``-separated
statements (sent as one simple query when there are no ``params``); the result is that
of the last statement, plus ``command_0``, ``command_1`` ... holding each statement's own
``{rows, columns, row_count}`` in order: the shape NoETL's postgres tool returns, which its
playbooks read (``{{ fetch.command_0.rows }}``).

Errors carry the SQLSTATE: ``error.code`` and the ``pg`` helper
(``output.pg.code == '40001'``). Serialization failures, deadlocks, admin shutdowns and
connection exceptions (``40001``, ``40P01``, ``57P01``, ``08xxx``) are retryable.
Cancelling the activity (or the timeout) cancels the query on the server.
"""

from __future__ import annotations

import asyncio
from typing import Any

from ..errors import ToolConfigError, ToolError, ToolTimeout
from ..tool_kinds.postgres import POSTGRES
from . import _sql
from ._scripts import script_text
from .base import ToolCall, ToolResult, fail_with, resolve_timeout

#: SQLSTATEs worth another attempt: serialization failure, deadlock, admin shutdown;
#: plus every connection exception (class 08)
RETRYABLE_SQLSTATES = frozenset({"40001", "40P01", "57P01"})
#: connection fields of a keychain entry passed to libpq (aliases on the right)
_FIELDS = {"host": ("host", "hostname", "server"), "port": ("port",), "user": ("user", "username", "login"),
           "password": ("password", "pass", "pwd"), "dbname": ("dbname", "database", "db"),
           "sslmode": ("sslmode",), "options": ("options",), "connect_timeout": ("connect_timeout",)}
_DSN_KEYS = ("dsn", "url", "uri", "connection_string", "conninfo", "connection", "value")
DEFAULT_CONNECT_TIMEOUT = 10


def retryable_sqlstate(code: str | None) -> bool:
    return code is not None and (code in RETRYABLE_SQLSTATES or code.startswith("08"))


def connection_params(config: dict, call: ToolCall) -> tuple[str, dict[str, Any]]:
    """``(conninfo, keyword overrides)`` from ``auth`` / ``dsn`` / ``connection``."""
    auth = config.get("auth")
    entry: dict[str, Any] = {}
    if isinstance(auth, str) and auth.strip():
        name = auth.strip()
        if name not in call.keychain:
            raise ToolConfigError(f"postgres auth {name!r} is not a resolved keychain entry",
                                  fix=f"declare '{name}' under the playbook's keychain: and provide it "
                                      f"(see docs/keychain.md)")
        entry = dict(call.keychain[name])
    elif isinstance(auth, dict):
        entry = dict(auth)
    elif auth is not None:
        raise ToolConfigError(f"postgres 'auth' must name a keychain entry, got {type(auth).__name__}")
    for key in ("dsn", "connection"):
        value = config.get(key)
        if isinstance(value, dict):
            entry.update(value)
        elif isinstance(value, str) and value.strip():
            entry["dsn"] = value.strip()
    if not entry:
        raise ToolConfigError("postgres task has no connection",
                              fix="add 'auth: <keychain entry>' (see docs/keychain.md)")
    dsn = next((str(entry[k]) for k in _DSN_KEYS if isinstance(entry.get(k), str) and entry[k].strip()), "")
    kwargs: dict[str, Any] = {}
    for field, aliases in _FIELDS.items():
        value = next((entry[a] for a in aliases if entry.get(a) not in (None, "")), None)
        if value is not None:
            kwargs[field] = str(value)
    if not dsn and "host" not in kwargs and "dbname" not in kwargs:
        raise ToolConfigError("the postgres connection has neither a dsn nor host/dbname",
                              fix="give the keychain entry a 'dsn' or 'host', 'port', 'user', 'password', "
                                  "'dbname'")
    kwargs.setdefault("connect_timeout", str(DEFAULT_CONNECT_TIMEOUT))
    kwargs.setdefault("application_name", "noetl-temporal")
    return dsn, kwargs


def _sqlstate(exc: BaseException) -> str | None:
    code = getattr(exc, "sqlstate", None)
    return str(code) if code else None


def _query_error(exc: Exception, index: int, count: int) -> ToolError:
    code = _sqlstate(exc)
    diag = getattr(exc, "diag", None)
    primary = getattr(diag, "message_primary", None) or " ".join(str(exc).split()) or type(exc).__name__
    where = f" in statement {index + 1} of {count}" if count > 1 else ""
    message = f"postgres error{f' {code}' if code else ''}{where}: {primary}"
    details: dict[str, Any] = {"statement_index": index, "exception_type": type(exc).__name__}
    for name in ("message_detail", "message_hint", "statement_position", "context", "constraint_name",
                 "table_name", "column_name", "schema_name"):
        value = getattr(diag, name, None) if diag is not None else None
        if value:
            details[name.removeprefix("message_")] = int(value) if str(value).isdigit() else value
    err = ToolError(message, kind="postgres", retryable=retryable_sqlstate(code), code=code, details=details)
    return fail_with(err, None, pg={"code": code, "sqlstate": code})


def _connect_error(exc: Exception) -> ToolError:
    code = _sqlstate(exc)
    text = " ".join(str(exc).split())
    lowered = text.lower()
    # Wrong credentials or a missing database will not fix themselves by retrying.
    permanent = any(s in lowered for s in ("authentication failed", "does not exist", "no pg_hba.conf",
                                            "permission denied"))
    err = ToolError(f"cannot connect to postgres: {text}", kind="connection", retryable=not permanent,
                    code=code, details={"exception_type": type(exc).__name__})
    return fail_with(err, None, pg={"code": code, "sqlstate": code})


class PostgresTool:
    declaration = POSTGRES  # its settings and traits: tool_kinds/postgres.py
    kind = declaration.kind

    async def run(self, config: dict, call: ToolCall) -> Any:
        psycopg = _sql.data_driver("psycopg", "postgres", "psycopg 3")
        loaded = await script_text(config, self.kind)   # NoETL's `script:` (tools/_scripts.py)
        if loaded is not None:
            config = {**config, "command": loaded}
        sql = _sql.statements(config, self.kind)
        params = _sql.params(config, sql, self.kind)
        autocommit = _sql.flag(config.get("autocommit"))
        dsn, kwargs = connection_params(config, call)
        timeout = resolve_timeout(config, call, _sql.DEFAULT_TIMEOUT)
        try:
            async with asyncio.timeout(timeout):
                return await _sql.with_heartbeats(
                    self._execute(psycopg, dsn, kwargs, sql, params, autocommit), call, self.kind)
        except TimeoutError:
            raise fail_with(ToolTimeout(f"postgres task ran past its {timeout:g} s timeout; query cancelled"),
                            None, pg={"code": "57014", "sqlstate": "57014"}) from None

    async def _execute(self, psycopg, dsn: str, kwargs: dict[str, Any], sql: list[str], params: Any,
                       autocommit: bool) -> ToolResult:
        try:
            conn = await psycopg.AsyncConnection.connect(dsn, autocommit=autocommit, **kwargs)
        except psycopg.ProgrammingError as exc:  # a malformed dsn: no use retrying
            raise ToolConfigError(f"invalid postgres connection: {' '.join(str(exc).split())}") from None
        except psycopg.Error as exc:
            raise _connect_error(exc) from None
        except OSError as exc:
            raise _connect_error(exc) from None
        try:
            sets: list[dict[str, Any]] = []
            index = 0
            try:
                async with conn.cursor() as cur:
                    for i, statement in enumerate(sql):
                        index = i
                        await cur.execute(statement, params)
                        sets += await self._sets(cur, len(sql))
                if not autocommit:
                    await conn.commit()
            except psycopg.OperationalError as exc:
                if conn.broken or _sqlstate(exc) is None:
                    raise _connect_error(exc) from None
                raise _query_error(exc, index, len(sql)) from None
            except psycopg.Error as exc:
                raise _query_error(exc, index, len(sql)) from None
        finally:
            await _close(conn)
        last = dict(sets[-1]) if sets else {}
        status = last.pop("_status", None)
        for i, one in enumerate(sets):
            last[f"command_{i}"] = {k: one[k] for k in ("rows", "columns", "row_count")}
        return ToolResult(last, pg={"code": None, "sqlstate": None, "status": status})

    @staticmethod
    async def _sets(cur, count: int) -> list[dict[str, Any]]:
        """The result of each statement of what ``execute`` sent (one string may hold several)."""
        out = []
        while True:
            columns = [d.name for d in cur.description] if cur.description else []
            rows = await cur.fetchall() if cur.description else []
            res = _sql.result(columns, rows, None if cur.description else cur.rowcount, count)
            res["_status"] = cur.statusmessage
            out.append(res)
            if not cur.nextset():
                return out


async def _close(conn) -> None:
    """Close without raising; a connection broken by a cancel is simply dropped."""
    try:
        await asyncio.shield(conn.close())
    except Exception:  # noqa: BLE001 - nothing useful to do about a failing close
        pass
