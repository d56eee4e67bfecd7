"""``kind: transfer``: rows from a source to a target, in batches (NoETL's transfer tool).

``source.type``: ``postgres`` (``auth``, ``query``: read through a server-side cursor),
``duckdb`` (``database``/``connection``, ``query``), ``http`` (``url``, ``method``,
``headers``, ``params``, ``data_path``: the rows are the JSON list at that dotted path of
the response) or ``file`` (``path``, ``format`` jsonl/json/csv). ``target.type``:
``postgres`` (``auth``, ``table``), ``duckdb`` (``database``/``connection``, ``table``)
or ``file`` (``path``, ``format`` jsonl/csv). ``target.mapping: {column: source_field}``
picks and renames (a dotted source field reads a nested value); without it the source's
columns are written as they are named.

Memory is bounded by ``chunk_size`` rows (default 1000): database and file sources are
read a batch at a time and each batch is written before the next is read. An http
response is one JSON document and is parsed whole; its size is capped
(:data:`MAX_HTTP_BYTES`). The write happens in one transaction per database target,
committed at the end (``mode: replace`` empties the table inside it first, so a failed
transfer leaves the table as it was; ``upsert`` updates rows whose ``target.key``
columns match). The result is NoETL's ``data`` block: ``rows_transferred``,
``chunks_processed``, ``direction``, ``columns`` ...

The drivers are synchronous here (one thread per task, like the duckdb tool); a timeout
or cancellation sets a flag checked between batches and interrupts the query running.
"""

from __future__ import annotations

import asyncio
import contextlib
import csv
import json
import os
import threading
from collections.abc import Iterator, Mapping
from typing import Any

from ..errors import ToolConfigError, ToolError, ToolTimeout
from ..tool_kinds.transfer import MODES, SOURCE_TYPES, TARGET_TYPES, TRANSFER
from . import _sql
from .base import ToolCall, fail_with, resolve_timeout
from .postgres import connection_params, retryable_sqlstate

DEFAULT_CHUNK = 1000
#: the largest http response a transfer parses (it is one JSON document)
MAX_HTTP_BYTES = 64 * 1024 * 1024
INTERRUPT_GRACE = 5.0

Row = dict[str, Any]


class _Cancelled(Exception):
    """The task timed out: the transfer's thread stops at its next batch (``run`` turns it into
    the ``TimeoutError`` the tool reports)."""


def _ident(name: str) -> str:
    """A possibly schema-qualified table or column name, quoted part by part."""
    parts = [p.strip().strip('"') for p in str(name).split(".")]
    if not all(parts):
        raise ToolConfigError(f"transfer: {name!r} is not a table or column name")
    return ".".join('"' + p.replace('"', '""') + '"' for p in parts)


def _dig(row: Mapping[str, Any], field: str) -> Any:
    if field in row:
        return row[field]
    value: Any = row
    for part in field.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


def _endpoint(config: dict, key: str, types: tuple[str, ...]) -> dict[str, Any]:
    part = config.get(key)
    if not isinstance(part, Mapping):
        raise ToolConfigError(f"transfer '{key}' must be a mapping with a `type`")
    kind = str(part.get("type", part.get("tool", ""))).lower()
    if kind not in types:
        raise ToolConfigError(f"transfer {key} type {kind or None!r} is not one this runtime moves rows with",
                              fix=f"write `{key}: {{type: ...}}` with one of: {', '.join(types)}")
    return {**part, "type": kind}


def _chunk_size(config: dict) -> int:
    raw = config.get("chunk_size", config.get("batch_size", DEFAULT_CHUNK))
    try:
        size = int(raw)
    except (TypeError, ValueError):
        size = 0
    if size <= 0:
        raise ToolConfigError(f"transfer chunk_size must be a whole number > 0, got {raw!r}")
    return size


def _duckdb_path(part: Mapping[str, Any], call: ToolCall) -> str:
    raw = part.get("database", part.get("connection", part.get("path")))
    if raw in (None, "", ":memory:"):
        return ":memory:"
    path = os.path.expanduser(str(raw))
    if not os.path.isabs(path):
        path = os.path.join(call.workdir or os.getcwd(), path)
    return path


class _Transfer:
    """One transfer on its own connections, in a worker thread."""

    def __init__(self, config: dict, call: ToolCall) -> None:
        self.source = _endpoint(config, "source", SOURCE_TYPES)
        self.target = _endpoint(config, "target", TARGET_TYPES)
        self.chunk = _chunk_size(config)
        self.mode = str(config.get("mode") or "append").lower()
        if self.mode not in MODES:
            raise ToolConfigError(f"transfer mode {self.mode!r} is not one of {', '.join(MODES)}")
        mapping = self.target.get("mapping", self.target.get("columns"))
        if mapping is not None and not (isinstance(mapping, Mapping) and mapping):
            raise ToolConfigError("transfer target.mapping must map target columns to source fields")
        self.mapping: dict[str, str] | None = ({str(k): str(v) for k, v in mapping.items()}
                                               if mapping else None)
        self.key = self.target.get("key", self.target.get("primary_key"))
        if isinstance(self.key, str):
            self.key = [self.key]
        if self.mode == "upsert" and not self.key:
            raise ToolConfigError("transfer mode upsert needs the key columns",
                                  fix="add `target: {key: [id]}` (columns with a unique constraint)")
        if self.target["type"] != "file" and not self.target.get("table"):
            raise ToolConfigError("transfer target has no `table`", fix="add `target: {table: schema.name}`")
        self.call = call
        self.cancelled = False
        self._open: list[Any] = []
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ cancel
    def interrupt(self) -> None:
        with self._lock:
            self.cancelled = True
            for conn in self._open:
                with contextlib.suppress(Exception):
                    (conn.cancel if hasattr(conn, "cancel") else conn.interrupt)()

    def _keep(self, conn: Any) -> Any:
        with self._lock:
            self._open.append(conn)
            if self.cancelled:
                raise _Cancelled
        return conn

    def _check(self) -> None:
        if self.cancelled:
            raise _Cancelled

    # ------------------------------------------------------------------ sources
    def _batches(self, stack: contextlib.ExitStack) -> Iterator[list[Row]]:
        kind = self.source["type"]
        query = self.source.get("query", self.source.get("command"))
        if kind in ("postgres", "duckdb") and not (isinstance(query, str) and query.strip()):
            raise ToolConfigError(f"transfer {kind} source has no `query`", fix="add `source: {query: SELECT ...}`")
        if kind == "postgres":
            psycopg = _sql.data_driver("psycopg", "transfer", "psycopg")
            dsn, kwargs = connection_params(self.source, self.call)
            conn = self._keep(stack.enter_context(psycopg.connect(dsn, **kwargs)))
            # a named (server-side) cursor: the server holds the result, we fetch a batch at a time
            cur = stack.enter_context(conn.cursor(name="noetl_transfer"))
            cur.itersize = self.chunk
            cur.execute(query)
            columns: list[str] | None = None
            while rows := cur.fetchmany(self.chunk):
                columns = columns or [d.name for d in cur.description]
                yield [dict(zip(columns, r, strict=False)) for r in rows]
        elif kind == "duckdb":
            duckdb = _sql.data_driver("duckdb", "transfer", "the duckdb package")
            path = _duckdb_path(self.source, self.call)
            conn = self._keep(duckdb.connect(path, read_only=path != ":memory:"))
            stack.callback(conn.close)
            res = conn.execute(query)
            columns = [d[0] for d in res.description]
            while rows := res.fetchmany(self.chunk):
                yield [dict(zip(columns, r, strict=False)) for r in rows]
        elif kind == "http":
            yield from self._http_batches()
        else:
            yield from self._file_batches(stack)

    def _http_batches(self) -> Iterator[list[Row]]:
        import httpx

        url = self.source.get("url", self.source.get("endpoint"))
        if not url:
            raise ToolConfigError("transfer http source has no `url`")
        method = str(self.source.get("method") or "GET").upper()
        body = bytearray()
        try:
            with httpx.Client(timeout=60.0, follow_redirects=True) as client, client.stream(
                    method, str(url), headers=self.source.get("headers") or None,
                    params=self.source.get("params") or None, json=self.source.get("body")) as resp:
                if resp.status_code >= 400:
                    raise ToolError(f"transfer http source answered {resp.status_code} {resp.reason_phrase}",
                                    kind="http", retryable=resp.status_code >= 500 or resp.status_code == 429,
                                    code=str(resp.status_code))
                for part in resp.iter_bytes():
                    self._check()
                    body += part
                    if len(body) > MAX_HTTP_BYTES:
                        raise ToolError(f"transfer http source body exceeds {MAX_HTTP_BYTES} bytes",
                                        kind="transfer", retryable=False,
                                        fix="page the source (a loop of transfers) or write it to a file first")
        except httpx.HTTPError as exc:
            raise ToolError(f"transfer http source failed: {exc}", kind="connection", retryable=True) from None
        try:
            data: Any = json.loads(bytes(body))
        except ValueError:
            raise ToolError("transfer http source did not answer JSON", kind="transfer", retryable=False) from None
        del body
        path = self.source.get("data_path")
        if path:
            data = _dig(data, str(path)) if isinstance(data, Mapping) else None
        if isinstance(data, Mapping):
            data = [data]
        if not isinstance(data, list):
            raise ToolError("transfer http source: the rows are not a JSON list"
                            + (f" at data_path {path!r}" if path else ""), kind="transfer", retryable=False,
                            fix="set `source.data_path` to the dotted path of the list")
        for i in range(0, len(data), self.chunk):
            yield [r if isinstance(r, dict) else {"value": r} for r in data[i:i + self.chunk]]

    def _file_batches(self, stack: contextlib.ExitStack) -> Iterator[list[Row]]:
        path, fmt = self._file(self.source)
        fh = stack.enter_context(open(path, newline="" if fmt == "csv" else None, encoding="utf-8"))
        if fmt == "json":  # one document: parsed whole, like an http body
            data = json.load(fh)
            for i in range(0, len(data), self.chunk):
                yield data[i:i + self.chunk]
            return
        rows: Iterator[Any] = (csv.DictReader(fh) if fmt == "csv"
                               else (json.loads(line) for line in fh if line.strip()))
        batch: list[Row] = []
        for row in rows:
            batch.append(row)
            if len(batch) >= self.chunk:
                yield batch
                batch = []
        if batch:
            yield batch

    def _file(self, part: Mapping[str, Any]) -> tuple[str, str]:
        raw = part.get("path", part.get("uri"))
        if not raw:
            raise ToolConfigError("transfer file endpoint has no `path`")
        path = os.path.expanduser(str(raw).removeprefix("file://"))
        if not os.path.isabs(path):
            path = os.path.join(self.call.workdir or os.getcwd(), path)
        fmt = str(part.get("format") or os.path.splitext(path)[1].lstrip(".") or "jsonl").lower()
        fmt = {"ndjson": "jsonl"}.get(fmt, fmt)
        if fmt not in ("jsonl", "json", "csv"):
            raise ToolConfigError(f"transfer file format {fmt!r} is not jsonl, json or csv")
        return path, fmt

    # ------------------------------------------------------------------ targets
    def _shape(self, batch: list[Row]) -> tuple[list[str], list[tuple]]:
        if self.mapping is not None:
            cols = list(self.mapping)
            return cols, [tuple(_dig(r, self.mapping[c]) for c in cols) for r in batch]
        cols = list(batch[0])
        return cols, [tuple(r.get(c) for c in cols) for r in batch]

    def _insert_sql(self, cols: list[str], mark: str, rows: int = 1) -> str:
        table = _ident(self.target["table"])
        row = f"({', '.join(mark for _ in cols)})"
        sql = f"INSERT INTO {table} ({', '.join(_ident(c) for c in cols)}) VALUES {', '.join([row] * rows)}"
        if self.mode == "upsert":
            keys = [str(k) for k in self.key or ()]
            rest = [c for c in cols if c not in keys]
            action = ("DO UPDATE SET " + ", ".join(f"{_ident(c)} = EXCLUDED.{_ident(c)}" for c in rest)
                      if rest else "DO NOTHING")
            sql += f" ON CONFLICT ({', '.join(_ident(k) for k in keys)}) {action}"
        return sql

    def run(self) -> dict[str, Any]:
        try:
            return self._run()
        except _Cancelled:
            raise TimeoutError from None

    def _run(self) -> dict[str, Any]:
        rows = chunks = 0
        columns: list[str] = []
        target = self.target["type"]
        with contextlib.ExitStack() as stack:
            write = self._writer(stack)
            for batch in self._batches(stack):
                self._check()
                if not batch:
                    continue
                cols, values = self._shape(batch)
                columns = columns or cols
                write(cols, values)
                rows += len(values)
                chunks += 1
            self._finish(stack)
        out: dict[str, Any] = {"direction": f"{self.source['type']}_to_{target}",
                               "source_type": self.source["type"], "target_type": target, "mode": self.mode,
                               "rows_transferred": rows, "chunks_processed": chunks, "columns": columns}
        if target == "file":
            out["target_path"] = self._file(self.target)[0]
        else:
            out["target_table"] = self.target["table"]
        return out

    def _writer(self, stack: contextlib.ExitStack):
        target = self.target["type"]
        if target == "postgres":
            psycopg = _sql.data_driver("psycopg", "transfer", "psycopg")
            from psycopg.types.json import Jsonb

            dsn, kwargs = connection_params(self.target, self.call)
            conn = self._keep(stack.enter_context(psycopg.connect(dsn, **kwargs)))
            self._commit = conn.commit
            if self.mode == "replace":
                conn.execute(f"DELETE FROM {_ident(self.target['table'])}")

            def to_pg(v: Any) -> Any:
                return Jsonb(v) if isinstance(v, dict | list) else v

            def write_pg(cols: list[str], values: list[tuple]) -> None:
                with conn.cursor() as cur:
                    cur.executemany(self._insert_sql(cols, "%s"), [tuple(map(to_pg, v)) for v in values])
            return write_pg
        if target == "duckdb":
            duckdb = _sql.data_driver("duckdb", "transfer", "the duckdb package")
            conn = self._keep(duckdb.connect(_duckdb_path(self.target, self.call)))
            stack.callback(conn.close)
            conn.begin()
            self._commit = conn.commit
            if self.mode == "replace":
                conn.execute(f"DELETE FROM {_ident(self.target['table'])}")

            def to_duck(v: Any) -> Any:
                return json.dumps(v) if isinstance(v, dict | list) else v

            def write_duck(cols: list[str], values: list[tuple]) -> None:
                # one multi-row INSERT per batch: DuckDB runs a statement per row of executemany
                # (minutes for 100,000 rows), and a batch is bounded by chunk_size anyway
                sql = self._insert_sql(cols, "?", rows=len(values))
                conn.execute(sql, [to_duck(x) for v in values for x in v])
            return write_duck
        path, fmt = self._file(self.target)
        if fmt == "json":
            raise ToolConfigError("transfer file target format json cannot be written in batches",
                                  fix="write `format: jsonl` (one JSON object a line) or `csv`")
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        fh = stack.enter_context(open(path, "a" if self.mode == "append" else "w", newline="", encoding="utf-8"))
        self._commit = fh.flush
        state: dict[str, Any] = {}

        def write_file(cols: list[str], values: list[tuple]) -> None:
            if fmt == "jsonl":
                for v in values:
                    fh.write(json.dumps(dict(zip(cols, map(_sql.json_value, v), strict=False))) + "\n")
                return
            if "csv" not in state:
                state["csv"] = csv.writer(fh)
                if fh.tell() == 0:
                    state["csv"].writerow(cols)
            state["csv"].writerows(values)
        return write_file

    def _finish(self, stack: contextlib.ExitStack) -> None:
        self._commit()


def _error(exc: Exception) -> ToolError:
    if isinstance(exc, ToolError):
        return exc
    code = getattr(exc, "sqlstate", None)
    name = type(exc).__name__
    text = " ".join(str(exc).split())
    if code:
        return ToolError(f"transfer postgres error {code}: {text}", kind="postgres",
                         retryable=retryable_sqlstate(str(code)), code=str(code))
    if "duckdb" in type(exc).__module__:
        return ToolError(f"transfer duckdb {name}: {text}", kind="duckdb",
                         retryable=name == "TransactionException", code=name)
    if isinstance(exc, OSError):
        return ToolError(f"transfer file error: {text}", kind="transfer", retryable=False)
    if "psycopg" in type(exc).__module__:
        return ToolError(f"transfer cannot reach postgres: {text}", kind="connection", retryable=True)
    raise exc


class TransferTool:
    declaration = TRANSFER  # its settings and traits: tool_kinds/transfer.py
    kind = declaration.kind

    async def run(self, config: dict, call: ToolCall) -> Any:
        work = _Transfer(config, call)
        timeout = resolve_timeout(config, call, _sql.DEFAULT_TIMEOUT)

        def guarded() -> dict[str, Any]:
            try:
                return work.run()
            except (ToolError, TimeoutError):
                raise
            except Exception as exc:  # driver errors become the task's error, located by kind
                if work.cancelled:
                    raise TimeoutError from None
                raise _error(exc) from None

        future = asyncio.get_running_loop().run_in_executor(None, guarded)
        try:
            async with asyncio.timeout(timeout):
                return await _sql.with_heartbeats(asyncio.shield(future), call, self.kind)
        except TimeoutError:
            raise fail_with(ToolTimeout(f"transfer task ran past its {timeout:g} s timeout; stopped"),
                            None) from None
        finally:
            if not future.done():
                work.interrupt()
                with contextlib.suppress(BaseException):
                    await asyncio.wait_for(asyncio.shield(future), INTERRUPT_GRACE)
