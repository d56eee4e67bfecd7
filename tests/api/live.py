"""The API served by uvicorn on loopback, in a thread with its own event loop.

Why a thread: the property-based run (schemathesis) and live SSE reads are plain
synchronous HTTP clients; the server, its Temporal client and its worker run on their
own loop beside them, exactly as ``noetl-temporal api --worker`` does.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from temporalio.client import Client

from noetl_temporal.api import Settings, create_app
from noetl_temporal.api.serving import uvicorn_config
from noetl_temporal.cli.serve import bind_socket
from noetl_temporal.hosting.worker import build_worker


class LiveServer:
    def __init__(self, address: str, **settings: Any) -> None:
        self.address = address
        self.settings = settings
        self.port: int | None = None
        self.error: BaseException | None = None
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread = threading.Thread(target=self._run, name="live-api", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> LiveServer:
        self._thread.start()
        if not self._ready.wait(60) or self.error:
            raise RuntimeError(f"the live API did not start: {self.error!r}")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop and self._stop:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(30)

    def _run(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as exc:  # noqa: BLE001 - surfaced by __enter__
            self.error = exc
            self._ready.set()

    async def _main(self) -> None:
        import uvicorn

        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        client = await Client.connect(self.address)
        settings = Settings(client=client, **self.settings)
        async with build_worker(client, task_queue=settings.queue, event_store=settings.event_store):
            sock = bind_socket("127.0.0.1", 0)
            self.port = sock.getsockname()[1]
            server = uvicorn.Server(uvicorn_config(create_app(settings), read_timeout_s=settings.read_timeout_s))
            task = asyncio.ensure_future(server.serve(sockets=[sock]))
            while not server.started:
                if task.done():
                    task.result()
                await asyncio.sleep(0.05)
            self._ready.set()
            await self._stop.wait()
            server.should_exit = True
            await task
