"""The first SIGINT stops the process even when its graceful shutdown hangs (issue 24:
with a wedged workflow task, ``dev`` ignored two SIGINTs). A real process, real signals."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest

_WEDGED = """
import asyncio, threading, time
from noetl_temporal.cli import hardstop

async def main():
    stop = asyncio.Event()
    hardstop.install(stop, grace=float(__import__("sys").argv[1]))
    print("ready", flush=True)
    await stop.wait()
    print("stopping", flush=True)
    # what a wedged workflow task does to the worker's shutdown: it waits for a thread
    # that never returns, without giving the event loop back
    threading.Event().wait()

asyncio.run(main())
"""


def _start(grace: float) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", _WEDGED, str(grace)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    return proc


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_the_first_signal_stops_a_wedged_shutdown_after_the_grace(sig):
    proc = _start(grace=1.0)
    try:
        started = time.monotonic()
        proc.send_signal(sig)
        code = proc.wait(30)
        elapsed = time.monotonic() - started
    finally:
        proc.kill()
    assert code == 130
    assert 0.9 < elapsed < 15, elapsed
    assert "shutdown took longer than 1 s" in proc.stderr.read()


def test_a_second_signal_stops_at_once():
    proc = _start(grace=300.0)
    try:
        proc.send_signal(signal.SIGINT)
        assert proc.stdout.readline().strip() == "stopping"
        time.sleep(0.2)
        # the loop is blocked: the handler runs when Python next checks signals... which a
        # blocked loop never does, so the second signal must be handled without the loop
        proc.send_signal(signal.SIGINT)
        code = proc.wait(30)
    finally:
        proc.kill()
    assert code == 130, proc.stderr.read()
