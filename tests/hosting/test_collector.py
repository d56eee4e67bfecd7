"""Full garbage collections between workflow activations (``hosting/full_collections.py``)."""

from __future__ import annotations

import gc
import threading
import time

import pytest

from noetl_temporal.hosting import full_collections as collector
from noetl_temporal.hosting.full_collections import MAX_POSTPONE_S, _CountingExecutor, collect_if_due


def _full_collections() -> int:
    return gc.get_stats()[2]["collections"]


def _survivors(n: int) -> list[list[object]]:
    """Tracked objects that live through young collections (cycles, as workflow state has)."""
    kept: list[list[object]] = []
    for _ in range(n):
        node: list[object] = []
        node.append(node)
        kept.append(node)
    return kept


def _settled() -> int:
    """Activations in flight once the done-callbacks of finished ones have run."""
    deadline = time.monotonic() + 5
    while collector._in_flight and time.monotonic() < deadline:
        time.sleep(0.01)
    return collector._in_flight


@pytest.fixture(autouse=True)
def _no_earlier_cost(monkeypatch):
    """Each test starts as a process whose collections cost nothing yet: the module keeps
    the last full collection's cost (a full collection waits ten times that), and in a
    suite the workers of earlier tests leave a big process's cost behind."""
    monkeypatch.setattr(collector, "_last_cost", 0.0)


def test_while_a_worker_runs_full_collections_wait_for_the_pacer():
    before = gc.get_threshold()
    assert _settled() == 0, "an earlier worker left an activation counted: nothing would be collected"
    assert collector._take()
    try:
        assert gc.get_threshold()[:2] == before[:2] and gc.get_threshold()[2] > 10 ** 6
        full = _full_collections()
        kept = _survivors(300_000)   # many young collections: automatic full ones would run
        assert _full_collections() == full
        assert gc.get_count()[2] > before[2]
        assert collect_if_due()
        assert _full_collections() == full + 1 and gc.get_count()[2] == 0
        del kept
    finally:
        collector._give_back()
    assert gc.get_threshold() == before and not collector.paced()


def test_a_running_activation_postpones_the_collection_but_not_for_ever():
    assert collector._take()
    release = threading.Event()
    pool = _CountingExecutor(max_workers=1)
    try:
        kept = _survivors(100_000)
        running = pool.submit(release.wait)
        assert collector._in_flight == 1
        now = collector._last_full + 1.0
        assert not collect_if_due(now)
        assert collect_if_due(collector._last_full + MAX_POSTPONE_S + 1.0)   # as automatic would
        release.set()
        running.result()
        assert _settled() == 0
        del kept
    finally:
        release.set()
        pool.shutdown()
        collector._give_back()


def test_a_process_that_turned_the_collector_off_is_left_alone():
    gc.disable()
    try:
        assert not collector._take() and not collector.paced()
    finally:
        gc.enable()


def test_an_activation_cancelled_before_it_ran_is_not_counted_for_ever():
    # a pool shut down with work queued cancels it: its count must go with it, or every
    # later collection would wait MAX_POSTPONE_S
    assert _settled() == 0
    release = threading.Event()
    pool = _CountingExecutor(max_workers=1)
    try:
        running = pool.submit(release.wait)
        queued = pool.submit(lambda: None)
        assert collector._in_flight == 2
        assert queued.cancel()
        release.set()
        running.result()
        assert _settled() == 0
    finally:
        release.set()
        pool.shutdown()
