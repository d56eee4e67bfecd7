"""The cyclic collector waits while a large playbook is checked, and only then
(dsl/gc_pause.py: it made validation superlinear)."""

from __future__ import annotations

import gc
import threading

from noetl_temporal.dsl.gc_pause import PAUSE_FROM_CHARS, gc_paused


def test_paused_inside_restored_after_and_nested_pauses_restore_once():
    assert gc.isenabled()
    with gc_paused(PAUSE_FROM_CHARS):
        assert not gc.isenabled()
        with gc_paused(PAUSE_FROM_CHARS):
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer check still runs
    assert gc.isenabled()


def test_a_small_playbook_leaves_the_collector_alone():
    with gc_paused(PAUSE_FROM_CHARS - 1):
        assert gc.isenabled()


def test_a_collector_the_caller_turned_off_stays_off():
    gc.disable()
    try:
        with gc_paused(PAUSE_FROM_CHARS):
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_threads_that_overlap_restore_it_when_the_last_ends():
    inside, release = threading.Event(), threading.Event()

    def other():
        with gc_paused(PAUSE_FROM_CHARS):
            inside.set()
            release.wait(10)

    thread = threading.Thread(target=other)
    thread.start()
    inside.wait(10)
    with gc_paused(PAUSE_FROM_CHARS):
        pass
    assert not gc.isenabled()  # the other thread's check is still running
    release.set()
    thread.join(10)
    assert gc.isenabled()


def test_an_exception_inside_restores_it():
    try:
        with gc_paused(PAUSE_FROM_CHARS):
            raise ValueError("x")
    except ValueError:
        pass
    assert gc.isenabled()
