"""The first SIGINT/SIGTERM stops ``worker``, ``api`` and ``dev``, even when a workflow task is wedged.

A stop signal starts the graceful shutdown (stop polling, cancel activities, close the
servers). That shutdown waits for running workflow activations, and a wedged one (a
workflow thread that does not return: the deadlock detector fails its task but cannot stop
the thread) would make it wait forever: ``dev`` used to ignore two SIGINTs. So the first
signal also arms a watchdog: if the process is still shutting down ``GRACE_SECONDS`` later,
it exits at once (code 130). A second signal exits at once too. Nothing is lost that a
graceful shutdown would have kept: Temporal re-runs an unfinished workflow task on the
next worker, and the children (the embedded Temporal server, tool processes) die with
this process (``PR_SET_PDEATHSIG``).
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading

__all__ = ["GRACE_SECONDS", "install"]

GRACE_SECONDS = 15.0
EXIT_INTERRUPTED = 130


def _exit_now(why: str) -> None:
    print(f"{why}: exiting now", file=sys.stderr, flush=True)
    os._exit(EXIT_INTERRUPTED)   # no cleanup can run: it is what would hang


def _on_signal(stop: asyncio.Event, grace: float) -> None:
    if stop.is_set():
        _exit_now("second stop signal")
    stop.set()
    # From now on a signal exits at once, without the event loop (a wedged shutdown may
    # block it, and a loop signal handler would then never run).
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: _exit_now("second stop signal"))
    timer = threading.Timer(grace, _exit_now, args=(f"the shutdown took longer than {grace:g} s "
                                                    "(a workflow task still running?)",))
    timer.daemon = True
    timer.start()


def install(stop: asyncio.Event, grace: float = GRACE_SECONDS) -> None:
    """SIGINT and SIGTERM set ``stop`` (the graceful shutdown) and arm the watchdog."""
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, _on_signal, stop, grace)
        except (NotImplementedError, RuntimeError):   # not the main thread (embedded use)
            pass
