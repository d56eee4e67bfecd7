"""A large cursor loop runs with flat worker memory (scale tier; docs/semantics.md, "Cursor
loops"): 200,000 rows read 1,000 at a time through the dev server with the worker in this
process. The loop holds one page and counts, never the rows read so far, so the resident
set at the end is about what it was a fifth of the way in."""

from __future__ import annotations

import threading

import pytest

pytestmark = pytest.mark.temporal

ROWS = 200_000


def _rss_mib() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


class _Sampler:
    """This process's RSS every half second, while the loop runs."""

    def __init__(self) -> None:
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.samples.append(_rss_mib())
            self._stop.wait(0.5)

    def __enter__(self) -> _Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


async def test_a_200000_row_cursor_loop_runs_with_flat_rss(temporal, task_queue) -> None:
    from noetl_temporal.client.connect import start_execution
    from noetl_temporal.dsl import load_playbook_text
    from noetl_temporal.hosting.worker import build_worker

    playbook = load_playbook_text(f"""
workflow:
  - step: drain
    loop:
      cursor:
        kind: duckdb
        claim: "SELECT range AS id FROM range({{{{ __cursor_offset }}}}, {ROWS}) LIMIT {{{{ __frame_max_rows }}}}"
      iterator: row
      spec: {{mode: cursor, max_in_flight: 20, frame: {{max_rows: 1000}}}}
    tool: {{kind: noop}}
""").playbook
    # Only the worker and the run are measured: reading the run's 600,000 events back (as
    # `run_yaml`'s report does) would measure the test's client, not the loop.
    async with build_worker(temporal.client, task_queue=task_queue):
        handle = await start_execution(temporal.client, playbook, task_queue=task_queue, execution_timeout_s=3000)
        with _Sampler() as sampler:
            output = await handle.result()
    assert output["state"] == "COMPLETED", output
    result = output["steps"]["drain"]["result"]
    assert (result["count"], result["done"], result["pages"]) == (ROWS, ROWS, ROWS // 1000)
    samples = sampler.samples
    assert len(samples) >= 10, samples
    early = max(samples[len(samples) // 5: len(samples) // 5 + 3])   # a fifth of the way in
    late = max(samples[-len(samples) // 5:])                         # the last fifth
    # Holding the rows (as a `loop.in` list and its results would) grows by tens of MiB per
    # 100,000 rows; a page-bounded loop stays within the noise of the allocator and caches.
    assert late - early < 40, f"RSS grew from {early:.0f} MiB to {late:.0f} MiB: {samples[::10]}"
