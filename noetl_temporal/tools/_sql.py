"""Shared by the SQL tools (``postgres``, ``duckdb``): statements, parameters, JSON-safe rows,
and waiting on a query with heartbeats.

Every SQL tool returns the same result shape, that of the **last** statement::

    {"rows": [{column: value, ...}, ...], "columns": [name, ...], "row_count": n,
     "statements": <number of statements executed>}

Values are made JSON-safe here, once, so results look the same whichever database
produced them: ``Decimal`` -> ``int`` when integral, else ``float`` when that round-trips
exactly, else ``str``; ``datetime``/``date``/``time`` -> ISO 8601; ``timedelta`` -> seconds
(float); ``UUID`` -> ``str``; ``bytes`` -> base64 text; anything else unknown -> ``str``.
"""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import importlib
import math
import time
import uuid
from collections.abc import Awaitable, Mapping
from decimal import Decimal
from typing import Any, TypeVar

from ..errors import ToolConfigError
from .base import ToolCall, beat

#: seconds between heartbeats while a query runs (tests may lower it)
HEARTBEAT_INTERVAL = 5.0
#: default attempt budget of a SQL task, seconds (the task's ``timeout`` may change it)
DEFAULT_TIMEOUT = 300.0

T = TypeVar("T")


def statements(config: dict, kind: str) -> list[str]:
    """``command`` or ``query`` (aliases): one string (one or many ``;``-separated
    statements, sent as they are) or a list of strings run in order."""
    present = [k for k in ("command", "query", "sql", "commands") if config.get(k) is not None]
    if not present:
        raise ToolConfigError(f"{kind} task has no SQL", fix="add 'command: <SQL>' (or 'query:')")
    if len(present) > 1:
        raise ToolConfigError(f"{kind} task sets both {present[0]!r} and {present[1]!r}; keep one")
    raw = config[present[0]]
    items = raw if isinstance(raw, list) else [raw]
    out: list[str] = []
    for item in items:
        if not isinstance(item, str):
            raise ToolConfigError(f"{kind} '{present[0]}' must be a string or a list of strings, "
                                  f"got {type(item).__name__}")
        if item.strip().strip(";").strip():
            out.append(item)
    if not out:
        raise ToolConfigError(f"{kind} task has an empty '{present[0]}'")
    return out


def params(config: dict, sql: list[str], kind: str) -> list[Any] | dict[str, Any] | None:
    """``params``: a list (positional) or a mapping (named), for a single statement."""
    value = config.get("params")
    if value is None:
        return None
    if not isinstance(value, list | dict):
        raise ToolConfigError(f"{kind} 'params' must be a list or a mapping, got {type(value).__name__}")
    if len(sql) > 1:
        raise ToolConfigError(f"{kind} 'params' apply to a single statement, but the task has a list "
                              f"of {len(sql)}", fix="split the task, or inline the values with templates")
    return value


def flag(value: Any, default: bool = False) -> bool:
    if value is None:
        return default
    if isinstance(value, str):
        return value.strip().lower() not in ("false", "0", "no", "off", "")
    return bool(value)


# ------------------------------------------------------------------------ JSON values


def _decimal(d: Decimal) -> Any:
    if not d.is_finite():
        return str(d)
    if d == d.to_integral_value():
        return int(d)
    f = float(d)
    return f if math.isfinite(f) and Decimal(repr(f)) == d else str(d)


def json_value(v: Any) -> Any:
    """One database value as JSON (recursing into arrays, structs and maps)."""
    if v is None or isinstance(v, bool | int | str):
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else str(v)
    if isinstance(v, Decimal):
        return _decimal(v)
    if isinstance(v, dt.datetime | dt.date | dt.time):
        return v.isoformat()
    if isinstance(v, dt.timedelta):
        return v.total_seconds()
    if isinstance(v, uuid.UUID):
        return str(v)
    if isinstance(v, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(v)).decode("ascii")
    if isinstance(v, Mapping):
        return {str(k): json_value(x) for k, x in v.items()}
    if isinstance(v, list | tuple | set | frozenset):
        return [json_value(x) for x in v]
    return str(v)


def result(columns: list[str], rows: list[Any], row_count: int | None, count: int) -> dict[str, Any]:
    """The tool result from ``rows`` (tuples in column order, or mappings)."""
    out_rows = []
    for row in rows:
        pairs = row.items() if isinstance(row, Mapping) else zip(columns, row, strict=False)
        out_rows.append({str(k): json_value(v) for k, v in pairs})
    if row_count is None or row_count < 0:
        row_count = len(out_rows)
    return {"rows": out_rows, "columns": list(columns), "row_count": row_count, "statements": count}


# ---------------------------------------------------------------------------- waiting


async def with_heartbeats(work: Awaitable[T], call: ToolCall, what: str) -> T:
    """Await ``work`` and heartbeat every ``HEARTBEAT_INTERVAL`` s while it runs.

    Cancelling the caller cancels ``work`` (and waits for it to unwind, so a query is
    cancelled on the server before we return).
    """
    task = asyncio.ensure_future(work)
    started = time.monotonic()
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=HEARTBEAT_INTERVAL)
            if done:
                return task.result()
            beat(call, {"tool": what, "elapsed_s": round(time.monotonic() - started, 1)})
    finally:
        if not task.done():
            task.cancel()
            await asyncio.wait({task})


def data_driver(module: str, kind: str, what: str) -> Any:
    """Import an optional database driver, or fail the task with the install command."""
    try:
        return importlib.import_module(module)
    except ImportError:  # pragma: no cover - the data extra is part of dev installs
        raise ToolConfigError(f"the {kind} tool needs {what}", fix="pip install 'noetl-temporal[data]'") from None
