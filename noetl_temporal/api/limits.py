"""Request size limits: the body as plain ASGI middleware, and what it expands to.

The middleware is also where each JSON body is checked for numbers no route can carry
(NaN, infinities, over-long integers: :mod:`.json_numbers`), since it holds the body whole.

Why the body here and not per route: a body must be refused before anything parses it
(JSON, YAML), and a client that lies in ``Content-Length`` or streams chunks must be
stopped too. Bodies are read up to the limit and replayed to the app; larger ones get 413.

A small body can still grow: YAML aliases repeat a node wherever they point (the loader
bounds that at 10,000,000 characters, far above a request's size), and the playbook and
payload then go to Temporal's history and the payload store in expanded form. So a start
request is measured again once parsed (:func:`check_expanded`): its playbook and payload,
as JSON, may hold at most ``EXPANSION`` times the body limit (413, naming the limit).
A part that does not change between requests (a cached playbook) is measured once, with
:func:`expanded_size`, and handed over as ``measured``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import MutableMapping
from typing import Any

from ..errors import NoetlError
from .json_numbers import PARSED, is_json_body, parse, parsed

__all__ = ["BodyLimit", "EXPANSION", "TooLarge", "check_expanded", "expanded_size"]

#: how much bigger than ``--max-body-bytes`` a request may become once parsed (JSON is
#: wordier than YAML: quotes and braces; aliases are what this is for)
EXPANSION = 2


class TooLarge(NoetlError):
    """A request that expands past its limit once parsed: 413."""


def expanded_size(value: Any, limit: int) -> int:
    """The JSON length of ``value``, counted without building it; exact up to ``limit``, and
    above ``limit`` once the count passes it (the walk stops there: aliases make one object
    appear many times, and each appearance counts)."""
    total, stack = 0, [value]
    while stack and total <= limit:
        item = stack.pop()
        if isinstance(item, str):
            total += len(item) + 3
        elif isinstance(item, dict):
            total += 2 + len(item)
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            total += 2 + len(item)
            stack.extend(item)
        else:
            total += 8
    return total


def check_expanded(max_body_bytes: int, measured: dict[str, int] | None = None, **parts: Any) -> None:
    """Refuse a parsed request whose parts (``playbook=``, ``payload=``) hold more than
    ``EXPANSION`` times the body limit together.

    ``measured``: parts already measured, by name: ``expanded_size(value, cap)`` with ``cap``
    at least this call's limit (``EXPANSION * max_body_bytes``). They count first, so a size
    counted up to the whole limit decides exactly as measuring the value here would: exact
    when it fits, over the limit when it does not. The message names them first too."""
    limit = EXPANSION * max_body_bytes
    names = [*(measured or {}), *parts]
    total = 0
    for name, size in (measured or {}).items():
        total += size
        if total > limit:
            raise _too_large(names, name, limit)
    for name, value in parts.items():
        total += expanded_size(value, limit - total)
        if total > limit:
            raise _too_large(names, name, limit)


def _too_large(names: list[str], crossed: str, limit: int) -> TooLarge:
    return TooLarge(f"the request's {' and '.join(names)} expand to more than {limit} bytes once parsed "
                    f"(limit: {EXPANSION} x --max-body-bytes; the {crossed} crossed it): write the "
                    "data out instead of repeating it with YAML aliases, or send less")


class BodyLimit:
    def __init__(self, app: Any, max_bytes: int, read_timeout_s: float | None = None) -> None:
        self.app = app
        self.max_bytes = max_bytes
        #: the whole body must arrive within this (a client trickling it holds a connection)
        self.read_timeout_s = read_timeout_s

    async def __call__(self, scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS", "DELETE"):
            return await self.app(scope, receive, send)
        headers = dict(scope.get("headers") or [])
        declared = headers.get(b"content-length")
        if declared is not None:
            try:
                size = int(declared)
            except ValueError:
                return await _reply(send, 400, "Content-Length is not a number")
            if size > self.max_bytes:
                return await _reply(send, 413, self._too_large())
        chunks: list[bytes] = []
        total = 0
        deadline = None if self.read_timeout_s is None else asyncio.get_running_loop().time() + self.read_timeout_s
        while True:
            try:
                async with asyncio.timeout_at(deadline):
                    message = await receive()
            except TimeoutError:
                return await _reply(send, 408, f"the request body did not arrive within {self.read_timeout_s:g} s "
                                               "(see --read-timeout)", close=True)
            if message["type"] == "http.disconnect":
                return None
            chunk = message.get("body", b"")
            total += len(chunk)
            if total > self.max_bytes:
                return await _reply(send, 413, self._too_large())
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        # the one place every route's body passes whole: refuse numbers no route could carry
        if body and is_json_body(headers.get(b"content-type")):
            refused, value = parse(body)
            if refused:
                return await _reply(send, 422, refused)
            if parsed(value):   # the route reads it, not a second parse (json_numbers.ParsedBodyRoute)
                scope[PARSED] = value
        replayed = False

        async def replay() -> dict:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        return await self.app(scope, replay, send)

    def _too_large(self) -> str:
        return f"request body larger than {self.max_bytes} bytes (see --max-body-bytes)"


async def _reply(send: Any, status: int, detail: str, close: bool = False) -> None:
    raw = json.dumps({"detail": detail}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(raw)).encode())]
    if close:  # the rest of the request may still come: the connection cannot be reused
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": raw})
