"""Start/stop plumbing shared by the loopback test servers."""

from __future__ import annotations

import threading
from http.server import ThreadingHTTPServer
from typing import Any


class LoopbackServer:
    """A ``ThreadingHTTPServer`` subclass served from a daemon thread on 127.0.0.1
    (port 0 = a free one); a context manager. Subclasses set ``server_class`` and ``name``."""

    server_class: type[ThreadingHTTPServer]
    name = "loopback-test-server"

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self._addr = (host, port)
        self._server: Any = None
        self._thread: threading.Thread | None = None

    def start(self):
        self._server = self.server_class(self._addr)
        self._thread = threading.Thread(target=self._server.serve_forever, name=self.name,
                                        kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._server is not None, "server not started"
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, path: str = "/") -> str:
        return self.base_url + (path if path.startswith("/") else "/" + path)
