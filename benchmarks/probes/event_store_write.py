"""CPU of persisting a playbook's events: the activity's argument decode and the store's write.

    python -m benchmarks.probes.event_store_write [--items 1000] [--rounds 7] [--pg DSN]

The events are real: the ``par_loop`` workload of ``benchmarks`` (a parallel loop, 50 in
flight) runs on the pure engine, each task answering at once. They go to the store as the
workflow sends them: batches of ``EVENT_BATCH`` encoded by the project's payload converter
as the local activity's argument, decoded as the worker decodes it, then ``store.write``.

Per backend (SQLite: a fresh file in a temp directory, WAL as the store configures it;
PostgreSQL at ``--pg``, skipped when it does not answer) and round, the thread CPU time of
the encode (the workflow thread's part), the decode and the write, in µs per event; the medians over the rounds are printed, and
the write of a batch already stored (a retried flush) apart. Run it on two checkouts in
turn to compare them (the figures move with the machine's load: interleave the runs).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from benchmarks.workloads import loop
from noetl_temporal.conversion.local_only import LocalOnlyList
from noetl_temporal.conversion.payload_converter import PayloadConverter
from noetl_temporal.dsl import load_playbook_text
from noetl_temporal.engine.envelopes import Outcome, TaskResult
from noetl_temporal.engine.machine import new_state, step
from noetl_temporal.engine.messages import Proceed, RunTask, Start, TaskFinished, Yield
from noetl_temporal.store.event_store import EventStore, PostgresEventStore, SqliteEventStore
from noetl_temporal.workflow.event_flush import EVENT_BATCH

NOW = "2026-01-01T00:00:00.000000Z"
PG_DSN = "postgresql://postgres@127.0.0.1:5432/postgres"


def loop_events(items: int, execution_id: str) -> list[dict[str, Any]]:
    """Every event of an ``items``-long parallel loop run on the pure engine."""
    state = new_state(load_playbook_text(json.dumps(loop(items, 50))).playbook, execution_id)
    queue: list[Any] = [Start(execution_id=execution_id, now=NOW)]
    while queue:
        _, commands = step(state, queue.pop(0))
        for command in commands:
            if isinstance(command, RunTask):
                result = {"i": (command.iteration or 0) + 1}   # what bodies.STEP returns
                queue.append(TaskFinished(task_run_id=command.task_run_id, now=NOW, result=TaskResult(
                    outcome=Outcome.ok(result, attempt=1), action="continue")))
            elif isinstance(command, Yield):
                queue.append(Proceed(now=NOW))
    return list(state.log.events)


def _renamed(events: list[dict[str, Any]], execution_id: str) -> list[dict[str, Any]]:
    """The same events under another execution id (a fresh key per round)."""
    old = events[0]["execution_id"]
    return [{**e, "execution_id": execution_id, "event_id": e["event_id"].replace(old, execution_id, 1)}
            for e in events]


def one_round(store: EventStore, events: list[dict[str, Any]]) -> tuple[float, float, float, float]:
    """Thread CPU seconds: encoding the batches (the workflow's part), decoding them,
    writing them, writing them again."""
    converter = PayloadConverter()
    started = time.thread_time()
    payloads = [converter.to_payloads([LocalOnlyList(events[i:i + EVENT_BATCH])])
                for i in range(0, len(events), EVENT_BATCH)]
    encode = time.thread_time() - started
    decode = write = again = 0.0
    batches = []
    for payload in payloads:
        started = time.thread_time()
        batch = converter.from_payloads(payload, [list[dict[str, Any]]])[0]
        decode += time.thread_time() - started
        started = time.thread_time()
        store.write(batch)
        write += time.thread_time() - started
        batches.append(batch)
    for batch in batches:
        started = time.thread_time()
        store.write(batch)
        again += time.thread_time() - started
    return encode, decode, write, again


def bench(name: str, open_store: Any, events: list[dict[str, Any]], rounds: int) -> None:
    figures: list[tuple[float, float, float, float]] = []
    for _ in range(rounds):
        store, done = open_store()
        try:
            figures.append(one_round(store, _renamed(events, f"bench-{uuid.uuid4().hex}")))
        finally:
            done(store)
    per = [statistics.median(f[k] for f in figures) / len(events) * 1e6 for k in range(4)]
    print(f"{name:10s} events={len(events):6d}  encode {per[0]:6.2f}  decode {per[1]:6.2f}  "
          f"write {per[2]:6.2f}  rewrite {per[3]:6.2f}  µs CPU/event (median of {rounds})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--pg", default=PG_DSN, help="PostgreSQL DSN ('' to skip)")
    args = parser.parse_args()
    events = loop_events(args.items, "bench")
    with tempfile.TemporaryDirectory() as tmp:
        def sqlite() -> tuple[EventStore, Any]:
            path = Path(tmp) / f"{uuid.uuid4().hex}.db"
            return SqliteEventStore(str(path)), lambda s: s.close()
        bench("sqlite", sqlite, events, args.rounds)
    if args.pg:
        try:
            PostgresEventStore(args.pg).close()
        except Exception as exc:  # noqa: BLE001 - no server: say so and skip
            print(f"postgres   skipped ({exc})")
            return

        def postgres() -> tuple[EventStore, Any]:
            def done(store: Any) -> None:
                store._execute("DELETE FROM noetl_events WHERE execution_id LIKE 'bench-%%' RETURNING 1")
                store.close()
            return PostgresEventStore(args.pg), done
        bench("postgres", postgres, events, args.rounds)


if __name__ == "__main__":
    main()
