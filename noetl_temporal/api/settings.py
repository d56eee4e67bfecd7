"""What one API instance is configured with, and its lazily made Temporal connection.

Why the client is injectable: tests and ``noetl-temporal dev`` already hold a connected
client (and run the worker beside it); ``noetl-temporal api`` only knows an address and
connects on first use, so the service starts (and answers ``/health``) even while
Temporal is still coming up; ``/ready`` says when it is reachable.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from temporalio.client import Client

from noetl_temporal.client.connect import Target, connect
from noetl_temporal.errors import ConfigError
from noetl_temporal.store.catalog import Catalog
from noetl_temporal.store.event_store import EventStore
from noetl_temporal.workflow.types import DEFAULT_TASK_QUEUE

from .admission import DEFAULT_MAX_IN_FLIGHT, DEFAULT_MAX_WAITING

__all__ = ["Settings", "TemporalLink", "DEFAULT_MAX_BODY_BYTES"]

DEFAULT_MAX_BODY_BYTES = 1024 * 1024


@dataclass
class Settings:
    """``client`` (connected) or ``target`` (connect on first use); ``token`` turns auth on."""

    client: Client | None = None
    target: Target | None = None
    catalog: Catalog | None = None
    token: str | None = None
    #: approver tokens -> the name they answer approvals as (``--approver NAME=TOKEN``;
    #: docs/approvals.md): they may call the answer route only
    approvers: dict[str, str] = field(default_factory=dict)
    #: where workers persist events: read when no live workflow answers (closed executions)
    event_store: EventStore | None = None
    task_queue: str | None = None
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    #: seconds a client has to send a request's headers, and then its body (408 past it)
    read_timeout_s: float = 15.0
    #: a bound for every execution started through the API (None: the playbook's own timeout)
    execution_timeout_s: float | None = None
    #: activities heartbeat at a third of this; a cancel reaches them at their next heartbeat
    heartbeat_timeout_s: float = 10.0
    #: set NoetlPlaybookPath on starts and allow filtering by it; None: ask the server
    search_attributes: bool | None = None
    #: with ``search_attributes=None``, seconds a "not registered" answer is kept before the
    #: server is asked again: `noetl-temporal setup` run while the API is up takes effect then
    search_attributes_recheck_s: float = 30.0
    #: how long POST /cancel waits for the execution to end before answering
    cancel_wait_s: float = 5.0
    #: SSE comment lines keep idle streams open through proxies
    stream_keepalive_s: float = 15.0
    #: requests worked on at once, and waiting for a turn at most (api/admission.py): past
    #: them a request gets 503 with Retry-After at once
    max_in_flight: int = DEFAULT_MAX_IN_FLIGHT
    max_waiting: int = DEFAULT_MAX_WAITING
    #: signs page tokens so a forged one is a 422 here, not an error deep in Temporal
    page_secret: bytes = field(default_factory=lambda: secrets.token_bytes(32))

    @property
    def queue(self) -> str:
        return self.task_queue or (self.target.task_queue if self.target else DEFAULT_TASK_QUEUE)

    def describe_temporal(self) -> tuple[str | None, str | None]:
        if self.target is not None:
            return self.target.address, self.target.namespace
        if self.client is not None:
            return getattr(self.client.service_client.config, "target_host", None), self.client.namespace
        return None, None


class TemporalLink:
    """The API's Temporal client, connected once on first use (and retried after failures)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._client: Client | None = settings.client
        self._lock = asyncio.Lock()
        self._path_attribute: bool | None = None   # asked of the server (settings.search_attributes unset)
        self._asked_at = 0.0   # (monotonic) when the server last said they are not registered

    async def client(self) -> Client:
        if self._client is not None:
            return self._client
        async with self._lock:
            if self._client is None:
                if self.settings.target is None:
                    raise ConfigError("the API has no Temporal client or address configured")
                self._client = await connect(self.settings.target)
        return self._client

    async def path_attribute(self) -> bool:
        """Whether to use our search attributes. Asked of the server unless configured: a yes
        is kept, a no only for ``search_attributes_recheck_s``, so attributes registered after
        the API started (``noetl-temporal setup``) are used without a restart."""
        if self.settings.search_attributes is not None:
            return self.settings.search_attributes
        stale = time.monotonic() - self._asked_at >= self.settings.search_attributes_recheck_s
        if self._path_attribute is None or (not self._path_attribute and stale):
            from noetl_temporal.client.control import search_attributes_available

            self._path_attribute = await search_attributes_available(await self.client())
            self._asked_at = time.monotonic()
        return self._path_attribute

    async def check(self) -> Any:
        client = await asyncio.wait_for(self.client(), timeout=10)
        return await client.service_client.check_health(timeout=timedelta(seconds=3))
