"""The API's memory and the event store's size while a client pages through a huge event log.

    python -m benchmarks.api_paging                            # 1k / 10k / 100k / 400k events, both stores
    python -m benchmarks.api_paging --events 1000,10000 --stores sqlite

Per store (SQLite; PostgreSQL in a scratch database made on ``--pg-dsn``'s server and
dropped after) and per size, this process writes one closed execution's events, as the
workflow's flush writes them (``EventStore.write`` in batches of ``MAX_EVENT_BACKLOG``),
from the pure engine running a parallel noop loop sized to give the wanted number of
events (five per item). It then starts ``noetl-temporal api`` as its own process on that
store (a fresh one per size, on a dev server, which does not know the execution, so every
request reads the store) and pages through every event with ``GET
/executions/{id}/events?after_seq=...&limit=1000``, checking that the pages are gap-free,
while a thread samples the API process's RSS every 20 ms.

Reported per size: the store's size (the SQLite file after a WAL checkpoint; PostgreSQL's
``pg_total_relation_size`` of ``noetl_events``: the table, its TOAST and its indexes), of it
the indexes, and bytes per event beside the mean stored JSON body; the page-through's time
and pages; the API's RSS once warm (started, one page served) and its peak during the
page-through; on PostgreSQL the same for the private memory of the server process that
serves the API's connection (SQLite's reads run inside the API process). Figures to
compare, not pass/fail tests.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from .api_submit import _Child
from .engine_scale import NOW, loop
from .memory import TreeSampler

PAGE = 1000                     # the API's largest page
EVENTS_PER_ITEM, EVENTS_FIXED = 5, 18   # a parallel noop loop of n items logs 5 n + 18 events
MIB = 2**20

__all__ = ["fill", "measure", "markdown", "main"]


def _events(execution_id: str, items: int) -> Iterator[list[dict[str, Any]]]:
    """The loop's events in the batches the workflow's flush writes, as the engine makes them."""
    from noetl_temporal.dsl import load_playbook_text
    from noetl_temporal.engine.envelopes import Outcome, TaskResult
    from noetl_temporal.engine.machine import new_state, step
    from noetl_temporal.engine.messages import Proceed, RunTask, Start, TaskFinished, Yield
    from noetl_temporal.workflow.event_flush import MAX_EVENT_BACKLOG

    state = new_state(load_playbook_text(loop(items)).playbook, execution_id)
    queue: list[Any] = [Start(execution_id=execution_id, now=NOW)]
    written = 0
    while queue:
        _, commands = step(state, queue.pop(0))
        for command in commands:
            if isinstance(command, RunTask):
                queue.append(TaskFinished(task_run_id=command.task_run_id, now=NOW,
                                          result=TaskResult(outcome=Outcome.ok(1), action="continue")))
            elif isinstance(command, Yield):
                queue.append(Proceed(now=NOW))
        while state.log.seq - written >= MAX_EVENT_BACKLOG or (not queue and state.log.seq > written):
            batch = state.log.since(written, MAX_EVENT_BACKLOG)
            yield batch
            written = batch[-1]["seq"]
            state.log.forget(written)


def fill(store: Any, execution_id: str, events: int) -> tuple[int, float]:
    """Write about ``events`` events of one execution; (events written, mean JSON body bytes)."""
    count = body = 0
    for batch in _events(execution_id, max(1, (events - EVENTS_FIXED) // EVENTS_PER_ITEM)):
        store.write(batch)
        count += len(batch)
        body += sum(len(json.dumps(e, default=str, separators=(",", ":"))) for e in batch)
    return count, body / count


def _store_bytes(store: Any) -> tuple[int, int]:
    """(bytes on disk, of them the indexes'), the key's index included."""
    from noetl_temporal.store.event_store import SqliteEventStore

    if isinstance(store, SqliteEventStore):
        store._execute("PRAGMA wal_checkpoint(TRUNCATE)")
        total = sum(os.path.getsize(p) for p in (store.url, store.url + "-wal") if os.path.exists(p))
        indexes = store._execute("SELECT SUM(pgsize) FROM dbstat WHERE name LIKE 'noetl_events_%' "
                                 "OR name LIKE 'sqlite_autoindex_noetl_events%'")[0][0]
        return total, int(indexes)
    store._conn.execute("ANALYZE noetl_events")   # what autovacuum does after a bulk write: the planner's counts
    total, indexes = store._execute("SELECT pg_total_relation_size('noetl_events'), pg_indexes_size('noetl_events')")[0]
    return int(total), int(indexes)


class _PrivatePeak:
    """The peak of one process's private memory (``RssAnon``), sampled every 20 ms: a
    PostgreSQL backend's RSS also counts the shared buffers it touched, the server's cache."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak = pid, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.02):
            with open(f"/proc/{self.pid}/status") as status:
                anon = next(int(line.split()[1]) * 1024 for line in status if line.startswith("RssAnon:"))
            self.peak = max(self.peak, anon)

    def take(self) -> int:
        """The peak since the last ``take`` (or the start), and start over."""
        peak, self.peak = self.peak, 0
        return peak

    def __enter__(self) -> _PrivatePeak:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


async def _page_through(url: str, execution_id: str, expected: int) -> tuple[float, int]:
    """(seconds, pages) to read every event, checking that they come gap-free and complete."""
    import httpx

    after: int | None = 0
    pages = seen = 0
    started = time.perf_counter()
    async with httpx.AsyncClient(base_url=url, timeout=60) as http:
        while after is not None:
            r = await http.get(f"/executions/{execution_id}/events", params={"after_seq": after, "limit": PAGE})
            if r.status_code != 200:
                raise RuntimeError(f"GET /events answered {r.status_code}: {r.text[:300]}")
            page = r.json()
            seqs = [e["seq"] for e in page["events"]]
            if seqs != list(range(after + 1, after + 1 + len(seqs))):
                raise RuntimeError(f"the page after seq {after} is not gap-free: {seqs[:3]}...")
            seen += len(seqs)
            pages += 1
            after = page["next_after_seq"]
    if seen != expected:
        raise RuntimeError(f"paged {seen} events of {expected}")
    return time.perf_counter() - started, pages


async def _serve_and_page(address: str, store_url: str, execution_id: str, events: int, scratch: Path,
                          backend_of: Callable[[], int] | None) -> dict[str, Any]:
    """Start the API on the store, warm it, and page through while sampling its memory (and
    that of its PostgreSQL backend, whose pid ``backend_of`` finds)."""
    import httpx

    env = dict(os.environ, NOETL_CATALOG_PATH=str(scratch / "catalog.db"))
    env.pop("NOETL_API_TOKEN", None)
    api = _Child([sys.executable, "-m", "noetl_temporal.cli", "api", "--address", address, "--port", "0",
                  "--event-store", store_url], r"API: (http://\S+)", env, "api", "stdout")
    url = (await api.start()).group(1)
    assert api.proc is not None
    try:
        backend = _PrivatePeak(backend_of()) if backend_of else None
        with TreeSampler({"api": api.proc.pid}) as rss, backend or contextlib.nullcontext():
            async with httpx.AsyncClient(base_url=url, timeout=60) as http:   # warm: imports, connections
                r = await http.get(f"/executions/{execution_id}/events", params={"limit": PAGE})
                r.raise_for_status()
            await asyncio.sleep(0.2)
            warm = rss.take()["api"].rss, backend.take() if backend else 0
            seconds, pages = await _page_through(url, execution_id, events)
            peak = rss.take()["api"].rss, backend.take() if backend else 0
    finally:
        api.stop()
    row = {"seconds": seconds, "pages": pages, "warm_rss": warm[0], "peak_rss": max(warm[0], peak[0])}
    if backend_of:
        row.update(backend_warm=warm[1], backend_peak=max(warm[1], peak[1]))
    return row


async def measure(address: str, kind: str, sizes: list[int], pg_dsn: str, scratch: Path) -> list[dict[str, Any]]:
    """Every size on one store kind: fill, size the store, serve and page through."""
    from noetl_temporal.store.event_store import PostgresEventStore, SqliteEventStore

    admin: Any = None
    url, backend_of = "", None
    if kind == "postgresql":
        import psycopg

        name = f"noetl_paging_{uuid.uuid4().hex[:8]}"
        admin = psycopg.connect(pg_dsn, autocommit=True)
        admin.execute(f"CREATE DATABASE {name}")
        url = urlunsplit(urlsplit(pg_dsn)._replace(path=f"/{name}"))

        def backend_of() -> int:
            """The backend serving the API: the only connection to the scratch database."""
            pids = [r[0] for r in admin.execute("SELECT pid FROM pg_stat_activity WHERE datname = %s", (name,))]
            if len(pids) != 1:
                raise RuntimeError(f"expected the API's one connection to {name}, found {len(pids)}")
            return int(pids[0])
    rows = []
    try:
        for n in sizes:
            if kind == "sqlite":
                url = str(scratch / f"events-{n}.db")
            store = SqliteEventStore(url) if kind == "sqlite" else PostgresEventStore(url)
            try:
                if kind == "postgresql":
                    store._conn.execute("TRUNCATE noetl_events")
                execution_id = f"paging-{n}-{uuid.uuid4().hex[:6]}"
                started = time.perf_counter()
                events, body = fill(store, execution_id, n)
                row = {"store": kind, "events": events, "body_bytes": body, "fill_s": time.perf_counter() - started,
                       "store_bytes": _store_bytes(store)}
            finally:
                store.close()
            row.update(await _serve_and_page(address, url, execution_id, events, scratch, backend_of))
            row["load"] = os.getloadavg()[0]
            print(f"{kind} {events:,} events: {row}", file=sys.stderr, flush=True)
            rows.append(row)
    finally:
        if admin is not None:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
            admin.close()
    return rows


def markdown(rows: list[dict[str, Any]]) -> str:
    lines = ["| store | events | store size (MiB), of it indexes | bytes/event (JSON body) | page-through (s) "
             "| pages | API RSS warm / peak (MiB) | PostgreSQL backend private warm / peak (MiB) | load |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        total, indexes = r["store_bytes"]
        backend = f"{r['backend_warm'] / MIB:.1f} / {r['backend_peak'] / MIB:.1f}" if "backend_peak" in r else "-"
        lines.append(f"| {r['store']} | {r['events']:,} | {total / MIB:.1f}, {indexes / MIB:.1f} | "
                     f"{total / r['events']:,.0f} ({r['body_bytes']:.0f}) | {r['seconds']:.1f} | {r['pages']:,} | "
                     f"{r['warm_rss'] / MIB:.0f} / {r['peak_rss'] / MIB:.0f} | {backend} | {r['load']:.1f} |")
    return "\n".join(lines) + "\n"


async def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    scratch = Path(tempfile.mkdtemp(prefix="noetl-paging-"))
    try:
        if args.address:
            return [row for kind in args.stores
                    for row in await measure(args.address, kind, args.events, args.pg_dsn, scratch)]
        from noetl_temporal.client.devserver import EmbeddedTemporal

        async with EmbeddedTemporal() as server:
            return [row for kind in args.stores
                    for row in await measure(server.address, kind, args.events, args.pg_dsn, scratch)]
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.api_paging", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", default="1000,10000,100000,400000",
                        help="events of the execution, per size (default 1000,10000,100000,400000)")
    parser.add_argument("--stores", default="sqlite,postgresql", help="sqlite, postgresql or both (the default)")
    parser.add_argument("--pg-dsn", default="postgresql://root@127.0.0.1:5432/test",
                        help="a PostgreSQL server to make the scratch database on (default %(default)s)")
    parser.add_argument("--address", default=None, help="a running Temporal frontend (default: an embedded dev server)")
    args = parser.parse_args(argv)
    try:
        args.events = [int(s) for s in args.events.split(",")]
    except ValueError:
        parser.error("--events takes comma-separated integers, e.g. 1000,10000")
    if min(args.events) < EVENTS_FIXED + EVENTS_PER_ITEM:
        parser.error(f"--events: each size must be at least {EVENTS_FIXED + EVENTS_PER_ITEM}")
    args.stores = args.stores.split(",")
    if not set(args.stores) <= {"sqlite", "postgresql"}:
        parser.error("--stores takes sqlite, postgresql or both, comma-separated")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    print(markdown(asyncio.run(run(args))))


if __name__ == "__main__":
    main()
