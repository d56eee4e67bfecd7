"""A thousand concurrent requests at the served API: every one answered, none with a 5xx.

The API is served by uvicorn on loopback with a worker beside it (``api --worker``), over
the session's real Temporal dev server; the requests are the kinds users make, sent at
once, each on its own connection (``benchmarks.api_load``): starts of a small playbook,
details of executions (closed and running), the list's first page, the catalog. Before
docs/performance.md's "The API under a burst", a fifth to a third of such a burst got 503
("Temporal did not answer") after 12–26 s. The p99 bound is generous: the machine may be
a loaded 2-core one (load 8), where the same burst's p99 was 5–15 s.
"""

from __future__ import annotations

import asyncio
import uuid

import pytest

from benchmarks.api_load import KINDS, burst, prepare, summarize
from noetl_temporal.store.catalog import Catalog

from .live import LiveServer

pytestmark = pytest.mark.temporal

REQUESTS = 1000
P99_BOUND_S = 60.0


@pytest.fixture(scope="module")
def live_api(temporal, tmp_path_factory, event_store):
    catalog = Catalog(sqlite_path=tmp_path_factory.mktemp("load") / "catalog.db")
    with LiveServer(temporal.address, catalog=catalog, task_queue=f"tq-load-{uuid.uuid4().hex[:8]}",
                    event_store=event_store, execution_timeout_s=180) as server:
        yield server


def test_a_burst_of_a_thousand_requests_is_served(live_api):
    async def go():
        ids = await prepare(live_api.url)
        # the list twice as often as the others: its page is what fell over (a result read per item)
        return await burst(live_api.url, ids, REQUESTS, kinds=(*KINDS, "list"))

    records = asyncio.run(go())
    summary = summarize(records)
    failed = [r for r in records if r["status"] == 0 or r["status"] >= 500]
    assert not failed, (f"{len(failed)} of {REQUESTS} requests failed: {summary['statuses']}; "
                        f"most common: {summary['errors']}")
    assert all(r["status"] in (200, 202) for r in records), summary["statuses"]
    assert summary["kinds"]["all"]["p99"] < P99_BOUND_S, summary["kinds"]


@pytest.fixture(scope="module")
def small_api(temporal, tmp_path_factory, event_store):
    """An API that takes 4 requests at a time and lets 50 wait: a thousand is real overload."""
    catalog = Catalog(sqlite_path=tmp_path_factory.mktemp("small") / "catalog.db")
    with LiveServer(temporal.address, catalog=catalog, task_queue=f"tq-small-{uuid.uuid4().hex[:8]}",
                    event_store=event_store, execution_timeout_s=180, max_in_flight=4, max_waiting=50) as server:
        yield server


def test_past_its_capacity_the_api_refuses_at_once_with_retry_after(small_api):
    async def go():
        ids = await prepare(small_api.url, 4)
        return await burst(small_api.url, ids, REQUESTS)

    records = asyncio.run(go())
    summary = summarize(records)
    served = [r for r in records if r["status"] in (200, 202)]
    refused = [r for r in records if r["status"] == 503]
    assert len(served) + len(refused) == REQUESTS, summary["statuses"]
    assert len(served) >= 54, summary["statuses"]   # at least those in flight and waiting when it began
    assert refused, summary["statuses"]
    assert all(r["retry_after"] == "2" and "at capacity" in r["error"] for r in refused), refused[:3]
    # refused at once, not after waiting out a deadline (the old 503s came after 12-26 s); the
    # bound is loose: on a loaded machine the last of a thousand connections is accepted late
    slowest = max(r["seconds"] for r in refused)
    assert slowest < 10.0, slowest
