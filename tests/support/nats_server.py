"""Find a NATS server with JetStream for the nats tool tests.

Candidates: ``$NOETL_TEST_NATS_URL``, then ``nats://127.0.0.1:4222`` (Debian's
``nats-server`` package; ``.ci/run`` starts ``nats-server -js`` when none answers). With none
reachable the tests are skipped locally, and fail in CI (``$CI`` or
``$NOETL_TEST_NATS_REQUIRED``), because CI starts one.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import pytest

T = TypeVar("T")
DEFAULT = "nats://127.0.0.1:4222"
_found: str | None | bool = False  # False = not probed yet


def url_candidates() -> list[str]:
    explicit = os.environ.get("NOETL_TEST_NATS_URL")
    return ([explicit] if explicit else []) + ([DEFAULT] if explicit != DEFAULT else [])


async def _probe(url: str) -> bool:
    import nats

    async def quiet(_exc: Exception) -> None:
        return None

    try:
        # nats-py retries a refused first connection without end: bound it
        nc = await asyncio.wait_for(nats.connect(url, connect_timeout=2, allow_reconnect=False,
                                                 max_reconnect_attempts=0, error_cb=quiet), 3)
    except Exception:  # noqa: BLE001 - any failure means "not this one"
        return False
    try:
        await nc.jetstream().account_info()  # JetStream on: `nats-server -js`
        return True
    except Exception:  # noqa: BLE001
        return False
    finally:
        await nc.close()


def _in_thread(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a coroutine to its end from sync code, whether or not an event loop is running here
    (the async fixtures and tests call these helpers too)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(lambda: asyncio.run(make())).result()


def find_url() -> str | None:
    global _found
    if _found is False:
        _found = next((u for u in url_candidates() if _in_thread(lambda u=u: _probe(u))), None)
    return _found  # type: ignore[return-value]


def require_url() -> str:
    """The URL of a NATS server with JetStream, or skip (fail in CI) saying how to get one."""
    url = find_url()
    if url is not None:
        return url
    message = (f"no NATS server with JetStream for the nats tool tests (tried {', '.join(url_candidates())}). "
               "Install Debian's nats-server (`apt-get install nats-server`) and run `nats-server -js`, "
               "or set NOETL_TEST_NATS_URL. CI must not skip these tests: .ci/run starts nats-server -js.")
    if os.environ.get("CI") or os.environ.get("NOETL_TEST_NATS_REQUIRED"):
        pytest.fail(message)
    pytest.skip(message)


def unique(prefix: str) -> str:
    """A bucket, stream or subject name no other test run uses (tests share one server)."""
    return f"{prefix}_{uuid.uuid4().hex[:10]}"


def create_buckets(url: str, buckets: tuple[str, ...]) -> None:
    """Key-value buckets a NoETL deployment has (its fixtures write to them, never create them)."""

    async def create() -> None:
        import nats

        nc = await nats.connect(url)
        try:
            for bucket in buckets:
                await nc.jetstream().create_key_value(bucket=bucket)  # an existing one is kept
        finally:
            await nc.close()

    _in_thread(create)
