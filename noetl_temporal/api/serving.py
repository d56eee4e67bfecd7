"""How the API is served by uvicorn: its settings, and a deadline for a request's headers.

Why: uvicorn times out only an idle kept-alive connection (``timeout_keep_alive``, armed
when a response completes). A client that connects and sends nothing, or half a request
line, or headers without their blank line, holds a connection (a file descriptor and a
protocol object) for as long as it likes, and a thousand of them hold a thousand. So each
connection gets ``read_timeout_s`` to deliver a request's headers, from its first byte (or
from connecting): past it the server answers 408 and closes. The body has the same time
again once the headers are in, enforced where the body is read (``limits.BodyLimit``).

The deadline is a small mixin over uvicorn's HTTP protocol class: it watches whether a
request cycle has begun (``self.cycle``, set when the headers are parsed) after each chunk
of data, which is the same in uvicorn's h11 and httptools implementations.
"""

from __future__ import annotations

import asyncio
from typing import Any

__all__ = ["DEFAULT_READ_TIMEOUT_S", "KEEP_ALIVE_S", "uvicorn_config"]

#: seconds a client has to send a request's headers, and then its body
DEFAULT_READ_TIMEOUT_S = 15.0
#: seconds an idle kept-alive connection stays open after a response (uvicorn's own timer)
KEEP_ALIVE_S = 5

_TIMEOUT_RESPONSE = (b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n"
                     b"connection: close\r\ncontent-length: %d\r\n\r\n%s")


def uvicorn_config(app: Any, read_timeout_s: float = DEFAULT_READ_TIMEOUT_S, **overrides: Any) -> Any:
    """The ``uvicorn.Config`` every server of the API runs with (``api``, ``dev``, the tests)."""
    import uvicorn

    values: dict[str, Any] = dict(log_level="warning", lifespan="off", access_log=False,
                                  timeout_keep_alive=KEEP_ALIVE_S, http=_with_header_deadline(read_timeout_s))
    values.update(overrides)
    return uvicorn.Config(app, **values)


def _base_protocol() -> type:
    """The HTTP protocol uvicorn's ``http="auto"`` picks: httptools when installed, else h11."""
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

        return HttpToolsProtocol
    except ImportError:
        from uvicorn.protocols.http.h11_impl import H11Protocol

        return H11Protocol


def _with_header_deadline(seconds: float) -> type:
    base = _base_protocol()

    class HeaderDeadline(base):  # type: ignore[valid-type,misc]  # chosen at run time
        header_timeout_s = seconds
        _header_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._arm()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self._waiting_for_headers():
                if self._header_timer is None:   # a new request began: its headers are now due
                    self._arm()
            else:
                self._disarm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _waiting_for_headers(self) -> bool:
            return self.cycle is None or self.cycle.response_complete

        def _arm(self) -> None:
            self._disarm()
            self._header_timer = asyncio.get_running_loop().call_later(self.header_timeout_s, self._expired)

        def _disarm(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _expired(self) -> None:
            self._header_timer = None
            if self.transport.is_closing() or not self._waiting_for_headers():
                return
            detail = (f'{{"detail": "the request headers did not arrive within {self.header_timeout_s:g} s '
                      f'(see --read-timeout)"}}').encode()
            self.transport.write(_TIMEOUT_RESPONSE % (len(detail), detail))
            self.transport.close()

    return HeaderDeadline
