"""One side's worker, in a process of its own (so its memory, with its tool processes,
is attributable): ``python -m benchmarks.worker {playbook|handwritten|isolated} ADDRESS QUEUE``.

Prints ``ready`` once it polls its task queue; stops when its stdin closes (the
benchmark closes it; it also closes if the benchmark dies).
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys

SIDES = ("playbook", "handwritten", "isolated")
_CLOSE: list = []  # what the isolated side closes after its worker (process pool, manager)


async def _worker(side: str, address: str, queue: str):
    from temporalio.client import Client
    from temporalio.worker import Worker

    from noetl_temporal.hosting.runtime import install_runtime

    install_runtime()
    # The retry workload fails attempts on purpose; the SDK logs each with a traceback.
    logging.getLogger("temporalio").setLevel(logging.ERROR)
    if side == "playbook":
        from noetl_temporal.conversion.converter import data_converter
        from noetl_temporal.hosting.worker import build_worker

        from .handwritten import ACTIVITIES

        client = await Client.connect(address, data_converter=data_converter())
        # the hand-written activities too: the `user_activity` workload calls them from a
        # playbook (`kind: activity`), as a user's own activities on the same queue
        return build_worker(client, task_queue=queue, activities=ACTIVITIES)
    from .handwritten import ACTIVITIES, WORKFLOWS

    # Exactly what the SDK gives by default: its converter, sandbox and slot counts.
    client = await Client.connect(address)
    if side == "isolated":  # the same workflows; sync activities, a process each (benchmarks.isolated)
        from . import isolated

        options, close = isolated.worker_options()
        _CLOSE.extend(close)
        return Worker(client, task_queue=queue, workflows=WORKFLOWS, activities=isolated.ACTIVITIES, **options)
    return Worker(client, task_queue=queue, workflows=WORKFLOWS, activities=ACTIVITIES)


async def _stdin_closed() -> None:
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, sys.stdin.buffer.read)


async def main(side: str, address: str, queue: str) -> None:
    worker = await _worker(side, address, queue)
    async with worker:
        print("ready", flush=True)
        await _stdin_closed()
    if side == "playbook":
        from noetl_temporal.tools import aclose_clients

        await aclose_clients()  # stops the python tool's warm pool
    for thing in _CLOSE:
        thing.shutdown()


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] not in SIDES:
        sys.exit(f"usage: python -m benchmarks.worker {{{'|'.join(SIDES)}}} ADDRESS TASK_QUEUE")
    asyncio.run(main(*sys.argv[1:]))
    sys.stdout.flush()
    os._exit(0)  # skip interpreter finalization: the SDK runtime's threads may still run
