"""Request body size limit, as plain ASGI middleware.

Why here and not per route: a body must be refused before anything parses it (JSON,
YAML), and a client that lies in ``Content-Length`` or streams chunks must be stopped
too. Bodies are read up to the limit and replayed to the app; larger ones get 413.
"""

from __future__ import annotations

import json
from collections.abc import MutableMapping
from typing import Any

__all__ = ["BodyLimit"]


class BodyLimit:
    def __init__(self, app: Any, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS", "DELETE"):
            return await self.app(scope, receive, send)
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None:
            try:
                size = int(declared)
            except ValueError:
                return await _reply(send, 400, "Content-Length is not a number")
            if size > self.max_bytes:
                return await _reply(send, 413, self._too_large())
        chunks: list[bytes] = []
        total = 0
        while True:
            message = await receive()
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


async def _reply(send: Any, status: int, detail: str) -> None:
    raw = json.dumps({"detail": detail}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(raw)).encode())]})
    await send({"type": "http.response.body", "body": raw})
